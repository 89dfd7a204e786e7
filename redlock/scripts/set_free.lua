-- set_free, shared by the acquisitions of a set (acquire_all.lua,
-- acquire_all_fenced.lua), which begin with it: whether a lock key is free
-- for a set. A key is free when it does not exist, or when it is a
-- readers' hash (rw.lua) with no live reader: only waiting writers' marks
-- left, as a set that waited behind readers leaves (redlock/rw.go), and
-- as a writer's acquisition (wacquire) takes it. A set then goes first,
-- marks and all, instead of waiting for the marks to expire, while
-- readers stay out. A field that is not a number counts as a reader that
-- never leaves, as in rw.lua. It changes nothing: the acquisition
-- overwrites the key (SET) only once every key of the set is free.
local set_now -- this node's milliseconds, read once, only for a hash

local function set_free(key)
	local kind = redis.call("TYPE", key).ok
	if kind == "none" then
		return true
	end
	if kind ~= "hash" then
		return false
	end
	if not set_now then
		local t = redis.call("TIME")
		set_now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	end
	local all = redis.call("HGETALL", key)
	for i = 1, #all, 2 do
		local exp = tonumber(all[i + 1])
		if exp == nil then
			return false
		end
		if exp > set_now and string.sub(all[i], 1, 2) ~= "w:" then
			return false
		end
	end
	return true
end


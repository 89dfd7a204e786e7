-- Inspect reads a lock key in one atomic step, for operators
-- (adapter.InspectNode): what it holds and for how long, without changing
-- anything.
--
-- KEYS[1] lock key. Returns {kind, ttl-ms, value, waiters, reader value,
-- reader ttl-ms, ...}: kind 0 absent, 1 a lock key (a string, held by
-- value), 2 the readers' hash of a read-write lock (rw.lua: fields
-- "r:"..value and "w:"..waiter, each its expiry in this node's
-- milliseconds), 3 any other type; ttl-ms is the key's PTTL (-1: none);
-- waiters counts the live writers' marks; then each live reader's value and
-- remaining milliseconds.
local key = KEYS[1]
local kind = redis.call("TYPE", key).ok
local ttl = redis.call("PTTL", key)
if kind == "none" then
	return {0, 0, "", 0}
elseif kind == "string" then
	return {1, ttl, redis.call("GET", key), 0}
elseif kind ~= "hash" then
	return {3, ttl, "", 0}
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {2, ttl, "", 0}
local all = redis.call("HGETALL", key)
for i = 1, #all, 2 do
	local exp = tonumber(all[i + 1])
	if exp ~= nil and exp > now then
		if string.sub(all[i], 1, 2) == "w:" then
			out[4] = out[4] + 1
		elseif string.sub(all[i], 1, 2) == "r:" then
			out[#out + 1] = string.sub(all[i], 3)
			out[#out + 1] = exp - now
		end
	end
end
return out

-- The fence floor (the restart repair, redlock/fencing.go), shared by the
-- fencing scripts, which begin with it: the fenced acquisitions of one
-- resource, of a writer and of a set read it (floor_read), and the raises
-- that repair set it (floor_mark). A floor key holds "token replid": the
-- token of the repair that set it and this server's replication id then. A
-- floor key set under another replication id counts as missing: a server
-- gets a new replication id when it restarts and when a replica of it is
-- promoted (which may lack its master's last fence raises).
-- Decimal strings are compared by length, then bytewise, so that values
-- beyond 2^53 (where Lua's doubles lose precision) compare exactly.

local floor_replid -- this server's replication id, read once per script

local function floor_id()
	if not floor_replid then
		floor_replid = string.match(redis.call("INFO", "replication"), "master_replid:(%x+)")
	end
	return floor_replid
end

-- floor_read returns the larger of the decimal string f and the floor
-- key's token, and 1 when the floor key exists and was set under this
-- server's replication id (the server kept its writes since), else 0.
local function floor_read(f, key)
	local floor = redis.call("GET", key)
	if not floor then
		return f, 0
	end
	local tok, id = string.match(floor, "^(%d+) (%x+)$")
	if not tok then
		return f, 0
	end
	if #tok > #f or (#tok == #f and tok > f) then
		f = tok
	end
	if id ~= floor_id() then
		return f, 0
	end
	return f, 1
end

-- floor_mark sets the floor key to "tok replid" when it is missing or was
-- set under another replication id, with an expiry of retention ms (0:
-- none). With a retention, a floor key already kept is raised to tok
-- (when below) and given the retention as its expiry: the raise that
-- called it gave the fence key that expiry, and once the fence expired
-- its resource's fence reads as the floor, which must then not be below
-- tok. A client without retention reads a missing fence beside a kept
-- floor as the floor: were the floor left below tok, its next token would
-- go below this one. Without a retention a kept floor is left alone (the
-- fence key never expires).
local function floor_mark(key, tok, retention)
	local id = floor_id()
	local floor = redis.call("GET", key)
	local cur, had
	if floor then
		cur, had = string.match(floor, "^(%d+) (%x+)$")
	end
	if had ~= id then
		if retention > 0 then
			redis.call("SET", key, tok .. " " .. id, "PX", retention)
		else
			redis.call("SET", key, tok .. " " .. id)
		end
	elseif retention > 0 then
		if #tok > #cur or (#tok == #cur and tok > cur) then
			cur = tok
		end
		redis.call("SET", key, cur .. " " .. id, "PX", retention)
	end
end

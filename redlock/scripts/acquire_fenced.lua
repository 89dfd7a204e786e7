-- R3 + R18, phase 1 of fencing: set the lock key only if it does not exist
-- and, when it was set, read the resource's fence value in the same step.
-- KEYS[1] lock key; KEYS[2] fence key; KEYS[3], optional, the fence floor
-- key; ARGV[1] value; ARGV[2] ttl in ms.
-- Returns {1, fence} when the key was set (fence "0" when absent), else
-- {0, "0"}. The fence is returned as a string: Lua numbers are doubles.
-- With KEYS[3] (the restart repair, see redlock/fencing.go and
-- floor.lua): returns {1, fence, kept} where fence is the larger of the
-- resource's fence and the floor's token, and kept is 1 when the floor
-- key exists and was set while this server had its current replication
-- id, 0 otherwise (the server is new, restarted and may have lost fence
-- values, or is a replica promoted without the last writes of its master);
-- {0, "0", 1} when the key was not set.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	local f = redis.call("GET", KEYS[2]) or "0"
	if #KEYS < 3 then
		return {1, f}
	end
	local g, kept = floor_read(f, KEYS[3])
	return {1, g, kept}
end
if #KEYS < 3 then
	return {0, "0"}
end
return {0, "0", 1}

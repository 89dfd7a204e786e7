-- R3 + R18, phase 1 of fencing: set the lock key only if it does not exist
-- and, when it was set, read the resource's fence value in the same step.
-- KEYS[1] lock key; KEYS[2] fence key; ARGV[1] value; ARGV[2] ttl in ms.
-- Returns {1, fence} when the key was set (fence "0" when absent), else
-- {0, "0"}. The fence is returned as a string: Lua numbers are doubles.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return {1, redis.call("GET", KEYS[2]) or "0"}
end
return {0, "0"}

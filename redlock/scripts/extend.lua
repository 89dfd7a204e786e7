-- R17: reset the expiry of the lock key only if it still holds this
-- client's value; never create a key.
-- KEYS[1] lock key; ARGV[1] value; ARGV[2] ttl in milliseconds.
-- Returns 1 when the expiry was reset, else 0.
-- GET by redis.pcall: a key that readers hold as a hash (rw.lua) answers
-- WRONGTYPE, which is "held by another" here, not an error.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0

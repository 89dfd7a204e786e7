-- R5: delete the lock key only if it still holds this client's value.
-- KEYS[1] lock key; ARGV[1] value. Returns 1 when deleted, else 0.
-- GET by redis.pcall: a key that readers hold as a hash (rw.lua) answers
-- WRONGTYPE, which is "held by another" here, not an error.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0

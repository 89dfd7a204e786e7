-- R5 with hand-off (R10, R14): delete the lock key only if it still holds
-- this client's value and, when it did, announce the release to waiters on
-- the key's release channel (the message is the released value), in the
-- same atomic step.
-- KEYS[1] lock key; ARGV[1] value; ARGV[2] prefix of the release channel,
-- which is ARGV[2] .. KEYS[1] (built here, so that a release sends the
-- prefix, a constant, instead of a string made for each call).
-- Returns 1 when deleted, else 0.
-- GET by redis.pcall: a key that readers hold as a hash (rw.lua) answers
-- WRONGTYPE, which is "held by another" here, not an error.
if redis.pcall("GET", KEYS[1]) == ARGV[1] then
	redis.call("DEL", KEYS[1])
	redis.call("PUBLISH", ARGV[2] .. KEYS[1], ARGV[1])
	return 1
end
return 0

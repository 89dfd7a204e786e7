-- Hand-over between two waiters of one client (R5 + R3 in one atomic step):
-- if the lock key holds the value handed over, set it to the new value with
-- a fresh expiry. The key is never free in between, so no other client can
-- take it during the hand-over (R13). A key held by any other value, or gone
-- (expired, evicted, deleted), is left alone: the holder hands over only
-- what it still holds, so that its Unlock can say when it held too little.
-- KEYS[1] lock key; ARGV[1] value handed over; ARGV[2] new value;
-- ARGV[3] ttl in milliseconds.
-- Returns 1 when the key now holds the new value, else 0.
-- GET by redis.pcall: a key that readers hold as a hash (rw.lua) answers
-- WRONGTYPE, which is "held by another" here, not an error.
local cur = redis.pcall("GET", KEYS[1])
if cur == ARGV[1] then
	redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
	return 1
end
return 0

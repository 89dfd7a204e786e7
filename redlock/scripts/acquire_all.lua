-- R3 for a set of resources: set every lock key only if none exists, in one
-- atomic step, so that two clients locking overlapping sets cannot both
-- set a shared key, and neither holds part of a set while waiting for the
-- rest (no deadlock: a node never holds a partial set). A key that holds
-- only waiting writers' marks counts as free (set_free.lua).
-- KEYS lock keys; ARGV[1] value; ARGV[2] ttl in milliseconds.
-- Returns 1 when every key was set, else 0 (nothing was set).
for i = 1, #KEYS do
	if not set_free(KEYS[i]) then
		return 0
	end
end
for i = 1, #KEYS do
	redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
return 1

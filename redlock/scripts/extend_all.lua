-- R17 for a set: reset the expiry of every lock key only if every one
-- still holds this client's value; otherwise change nothing (a set held
-- in part is not held, and its remaining keys expire on their own). Never
-- create a key.
-- KEYS lock keys; ARGV[1] value; ARGV[2] ttl in milliseconds.
-- Returns 1 when the expiries were reset, else 0.
for i = 1, #KEYS do
	if redis.pcall("GET", KEYS[i]) ~= ARGV[1] then
		return 0
	end
end
for i = 1, #KEYS do
	redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1

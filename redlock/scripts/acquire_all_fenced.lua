-- R3 + R18 for a set, phase 1 of fencing: set every lock key only if none
-- exists and, when they were set, read the largest fence value of the
-- set's resources in the same step.
-- KEYS[1..n] lock keys, KEYS[n+1..2n] their fence keys (n = #KEYS / 2);
-- ARGV[1] value; ARGV[2] ttl in ms.
-- Returns {1, fence} when the keys were set (fence "0" when none exists),
-- else {0, "0"}. Fences are decimal strings compared by length, then
-- bytewise, so that values beyond 2^53 compare exactly.
local n = #KEYS / 2
for i = 1, n do
	if redis.call("EXISTS", KEYS[i]) == 1 then
		return {0, "0"}
	end
end
for i = 1, n do
	redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
local best = "0"
for i = n + 1, 2 * n do
	local f = redis.call("GET", KEYS[i])
	if f and (#f > #best or (#f == #best and f > best)) then
		best = f
	end
end
return {1, best}

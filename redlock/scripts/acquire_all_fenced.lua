-- R3 + R18 for a set, phase 1 of fencing: set every lock key only if none
-- exists and, when they were set, read the largest fence value of the
-- set's resources in the same step. A key that holds only waiting
-- writers' marks counts as free (set_free.lua).
-- KEYS[1..n] lock keys, KEYS[n+1..2n] their fence keys, and with the fence
-- floor (the restart repair, see redlock/fencing.go and floor.lua)
-- KEYS[2n+1..3n] their floor keys; ARGV[1] value; ARGV[2] ttl in ms;
-- ARGV[3], with the floor keys only, n.
-- Returns {1, fence} when the keys were set (fence "0" when none exists),
-- else {0, "0"}. Fences are decimal strings compared by length, then
-- bytewise, so that values beyond 2^53 compare exactly. With the floor
-- keys: {1, fence, kept}, fence counting each floor's token as a fence of
-- its resource and kept 1 when every floor key was kept (floor_read), else
-- 0; {0, "0", 1} when the keys were not set.
local floors = ARGV[3] ~= nil
local n = #KEYS / 2
if floors then
	n = tonumber(ARGV[3])
end
for i = 1, n do
	if not set_free(KEYS[i]) then
		if floors then
			return {0, "0", 1}
		end
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
if not floors then
	return {1, best}
end
local kept = 1
for i = 2 * n + 1, 3 * n do
	local k
	best, k = floor_read(best, KEYS[i])
	kept = math.min(kept, k)
end
return {1, best, kept}

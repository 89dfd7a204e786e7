-- R18 for a set, phase 2 of fencing: set the fence value of every resource
-- of the set to the token only if every lock key still holds this client's
-- value and every fence is below the token (a missing fence counts as 0);
-- otherwise change nothing. As in raise_fence.lua, refusing a token that
-- is not above a fence makes every two confirmed tokens of a resource
-- differ, whichever sets they were granted with.
-- KEYS[1..n] lock keys, KEYS[n+1..2n] their fence keys, and with the
-- repair of the fence floor (see raise_fence.lua) KEYS[2n+1..3n] their
-- floor keys; ARGV[1] value; ARGV[2] token as a decimal string without
-- leading zeros; ARGV[3] retention in ms (0: keep); ARGV[4], with the floor
-- keys only, n. A raise that sets the fences also sets every floor key
-- (floor.lua: floor_mark).
-- Returns 1 when the fences were set to the token, else 0.
local n = #KEYS / 2
if ARGV[4] ~= nil then
	n = tonumber(ARGV[4])
end
local tok = ARGV[2]
for i = 1, n do
	if redis.pcall("GET", KEYS[i]) ~= ARGV[1] then
		return 0
	end
	local cur = redis.call("GET", KEYS[n + i])
	if cur and (#cur > #tok or (#cur == #tok and cur >= tok)) then
		return 0
	end
end
local retention = tonumber(ARGV[3])
for i = n + 1, 2 * n do
	if retention > 0 then
		redis.call("SET", KEYS[i], tok, "PX", ARGV[3])
	else
		redis.call("SET", KEYS[i], tok)
	end
end
for i = 2 * n + 1, #KEYS do
	floor_mark(KEYS[i], tok, retention)
end
return 1

-- R18 for a set, phase 2 of fencing: set the fence value of every resource
-- of the set to the token only if every lock key still holds this client's
-- value and every fence is below the token (a missing fence counts as 0);
-- otherwise change nothing. As in raise_fence.lua, refusing a token that
-- is not above a fence makes every two confirmed tokens of a resource
-- differ, whichever sets they were granted with.
-- KEYS[1..n] lock keys, KEYS[n+1..2n] their fence keys (n = #KEYS / 2);
-- ARGV[1] value; ARGV[2] token as a decimal string without leading zeros;
-- ARGV[3] retention in ms (0: keep).
-- Returns 1 when the fences were set to the token, else 0.
local n = #KEYS / 2
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
for i = n + 1, 2 * n do
	if tonumber(ARGV[3]) > 0 then
		redis.call("SET", KEYS[i], tok, "PX", ARGV[3])
	else
		redis.call("SET", KEYS[i], tok)
	end
end
return 1

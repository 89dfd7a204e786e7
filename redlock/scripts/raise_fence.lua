-- R18, phase 2 of fencing: set the resource's fence value to the token only
-- if the lock key still holds this client's value and the fence is below
-- the token (a missing fence counts as 0). Refusing a token that is not
-- above the fence makes every two confirmed tokens of a resource differ:
-- two grants' confirming quorums share a node, and there the second raise
-- succeeds only above the first.
-- KEYS[1] lock key; KEYS[2] fence key; KEYS[3], optional, the fence floor
-- key; ARGV[1] value; ARGV[2] token as a decimal string without leading
-- zeros; ARGV[3] retention in ms (0: keep).
-- Decimal strings are compared by length, then bytewise, so that tokens
-- beyond 2^53 (where Lua's doubles lose precision) compare exactly.
-- With KEYS[3] (the restart repair, see redlock/fencing.go), a raise that
-- sets the fence also sets the floor key (floor.lua: floor_mark): the
-- client passes KEYS[3] only with a token above every earlier token of
-- every resource (the wall clock floor: after a loss, and with every
-- retention), so that the server's missing fences may read as that token
-- from then on. The floor key keeps the retention as its expiry: with a
-- retention every token is at least the clock already, so a floor that
-- expired only repeats that floor; and a kept floor is raised to the
-- token, so that a client without retention never reads this fence, once
-- expired, as a floor below the token.
-- Returns 1 when the fence was set to the token, else 0.
-- GET by redis.pcall: a key that readers hold as a hash (rw.lua) answers
-- WRONGTYPE, which is "held by another" here, not an error.
if redis.pcall("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local cur = redis.call("GET", KEYS[2])
local tok = ARGV[2]
if cur and (#cur > #tok or (#cur == #tok and cur >= tok)) then
	return 0
end
local retention = tonumber(ARGV[3])
if retention > 0 then
	redis.call("SET", KEYS[2], tok, "PX", ARGV[3])
else
	redis.call("SET", KEYS[2], tok)
end
if #KEYS >= 3 then
	floor_mark(KEYS[3], tok, retention)
end
return 1

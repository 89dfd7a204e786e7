-- R18, phase 2 of fencing: raise the resource's fence value to the token
-- only if the lock key still holds this client's value; never lower it.
-- KEYS[1] lock key; KEYS[2] fence key; ARGV[1] value; ARGV[2] token as a
-- decimal string without leading zeros; ARGV[3] retention in ms (0: keep).
-- Decimal strings are compared by length, then bytewise, so that tokens
-- beyond 2^53 (where Lua's doubles lose precision) compare exactly.
-- Returns 1 when the key held the value (the fence is now >= token), else 0.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local cur = redis.call("GET", KEYS[2])
local tok = ARGV[2]
if not cur or #cur < #tok or (#cur == #tok and cur < tok) then
	redis.call("SET", KEYS[2], tok)
end
if tonumber(ARGV[3]) > 0 then
	redis.call("PEXPIRE", KEYS[2], ARGV[3])
else
	redis.call("PERSIST", KEYS[2])
end
return 1

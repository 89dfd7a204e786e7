-- The record of a lock's holder (adapter.RecordNode; election): store the
-- record bound to the SHA-1 of the holder's value, only if the lock key
-- still holds that value (as R17's check), so that only the holder can
-- publish it and a reader can tell it from a previous holder's.
-- KEYS[1] lock key; KEYS[2] record key; ARGV[1] value; ARGV[2] record;
-- ARGV[3] retention in ms (0: keep).
-- Stored as "<40 hex digits of sha1(value)>:<record>". Returns 1 when stored,
-- else 0.
-- GET by redis.pcall: a key that readers hold as a hash (rw.lua) is not
-- held by the value.
if redis.pcall("GET", KEYS[1]) ~= ARGV[1] then
	return 0
end
local r = redis.sha1hex(ARGV[1]) .. ":" .. ARGV[2]
if tonumber(ARGV[3]) > 0 then
	redis.call("SET", KEYS[2], r, "PX", ARGV[3])
else
	redis.call("SET", KEYS[2], r)
end
return 1

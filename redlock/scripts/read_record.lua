-- Read the record of a lock's current holder (adapter.RecordNode;
-- election): the record is returned only if the lock key exists and the
-- SHA-1 of its value is the one stored with the record, so the record of
-- a previous holder is never reported; the fence value (R18) is read in
-- the same step.
-- KEYS[1] lock key; KEYS[2] record key; KEYS[3] fence key.
-- Returns {1, record, fence} or {0, "", fence}; fence is "0" when absent.
local fence = redis.call("GET", KEYS[3]) or "0"
local v = redis.pcall("GET", KEYS[1]) -- readers' hash (rw.lua): no holder
if type(v) ~= "string" then
	v = false
end
local r = redis.call("GET", KEYS[2])
if v and r and string.sub(r, 1, 41) == redis.sha1hex(v) .. ":" then
	return {1, string.sub(r, 42), fence}
end
return {0, "", fence}

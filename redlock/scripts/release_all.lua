-- R5 for a set: delete every lock key that still holds this client's
-- value and, when ARGV[2] is not empty, announce each deletion on the
-- key's release channel (ARGV[2] .. key) as release_publish.lua does
-- (hand-off, R14), in one atomic step.
-- KEYS lock keys; ARGV[1] value; ARGV[2] channel prefix or "".
-- Returns 1 when every key held the value (the whole set was deleted),
-- else 0; the keys that held the value are deleted either way.
local all = 1
for i = 1, #KEYS do
	if redis.pcall("GET", KEYS[i]) == ARGV[1] then
		redis.call("DEL", KEYS[i])
		if ARGV[2] ~= "" then
			redis.call("PUBLISH", ARGV[2] .. KEYS[i], ARGV[1])
		end
	else
		all = 0
	end
end
return all

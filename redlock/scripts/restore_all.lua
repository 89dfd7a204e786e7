-- An extension's restore of a set on a node that forgot part of it (a
-- restart, or one master of a Redis Cluster): set every lock key to this
-- client's value with an expiry of the ttl only if each one is missing or
-- holds this value already; otherwise change nothing. A key of any other
-- value (another client's, a reader's hash) is never overwritten, and a
-- node where one is left holds none of the set's keys anew.
-- KEYS lock keys; ARGV[1] value; ARGV[2] ttl in milliseconds.
-- Returns 1 when every key holds the value with the new expiry, else 0.
for i = 1, #KEYS do
	local v = redis.pcall("GET", KEYS[i])
	if v ~= false and v ~= ARGV[1] then
		return 0
	end
end
for i = 1, #KEYS do
	redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
return 1

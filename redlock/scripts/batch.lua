-- The releases, announced releases, extensions and transfers of a node's
-- batch, and the acquisitions that follow one of them on the same key, in
-- one script call, in order, each as its own command or script does it
-- (R3 SET NX PX, R5 release.lua, R5 + R14 release_publish.lua, R17
-- extend.lua, transfer.lua): the node starts one script per batch instead
-- of one per request. An announcement goes out only while a client
-- listens on the node (its listening marker exists), and then only on a
-- channel that has a subscriber (PUBSUB NUMSUB, one call for the whole
-- batch), or on every one when any client listens by pattern: a PUBLISH
-- that nobody hears does nothing but cost the node a call.
-- KEYS the key of each operation, in order.
-- ARGV[1] the operations, one letter each: a acquire (value, ttl ms: SET
-- NX PX, R3), r release (value), p release and announce (value), e extend
-- (value, ttl ms), t transfer (value handed over, new value, ttl ms).
-- ARGV[2] prefix of the release channels (ARGV[2] .. key).
-- ARGV[3] the listening marker's key: read, never written, and not among
-- KEYS, so that a user whose ACL does not cover it still runs the batch
-- (its EXISTS then fails, which counts as a listener).
-- ARGV[4]... the arguments of each operation, in order.
-- Returns one character per operation: 1 when it acted, 0 when not, E when
-- the node answered an error; after an E, a newline and the errors, one a
-- line. GET by redis.pcall: a key that readers hold as a hash (rw.lua)
-- answers WRONGTYPE, which is "held by another" here, not an error.
local ops, prefix, marker = ARGV[1], ARGV[2], ARGV[3]
local call = redis.pcall
local out, errs = {}, {}
local announce = {} -- channel, value, channel, value, ...

local function code(r)
	if type(r) == "table" and r.err then
		errs[#errs + 1] = r.err
		return "E"
	end
	if r == 1 or type(r) == "table" then -- 1, or SET's OK
		return "1"
	end
	return "0"
end

local a = 4
for i = 1, #ops do
	local op, key, r = string.sub(ops, i, i), KEYS[i], "0"
	if op == "a" then
		r = code(call("SET", key, ARGV[a], "NX", "PX", ARGV[a + 1]))
		a = a + 2
	elseif op == "r" or op == "p" then
		local v = ARGV[a]
		a = a + 1
		if call("GET", key) == v then
			r = code(call("DEL", key))
			if op == "p" and r == "1" then
				announce[#announce + 1] = prefix .. key
				announce[#announce + 1] = v
			end
		end
	elseif op == "e" then
		if call("GET", key) == ARGV[a] then
			r = code(call("PEXPIRE", key, ARGV[a + 1]))
		end
		a = a + 2
	elseif op == "t" then
		local cur = call("GET", key)
		if cur == ARGV[a] then
			r = code(call("SET", key, ARGV[a + 1], "PX", ARGV[a + 2]))
		end
		a = a + 3
	else
		r = code({err = "ERR unknown operation " .. op})
	end
	out[i] = r
end

-- The announcements are hints (R14): one that fails is not an error of
-- its release.
local function listened()
	local m = call("EXISTS", marker)
	return type(m) ~= "number" or m == 1
end

if #announce > 0 and listened() then
	local all = call("PUBSUB", "NUMPAT")
	all = type(all) ~= "number" or all > 0
	local subs
	if not all then
		local chans = {}
		for j = 1, #announce, 2 do
			chans[#chans + 1] = announce[j]
		end
		subs = call("PUBSUB", "NUMSUB", unpack(chans))
		all = subs.err ~= nil
	end
	for j = 1, #announce, 2 do
		if all or subs[j + 1] > 0 then
			call("PUBLISH", announce[j], announce[j + 1])
		end
	end
end

if #errs > 0 then
	return table.concat(out) .. "\n" .. table.concat(errs, "\n")
end
return table.concat(out)

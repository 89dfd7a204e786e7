-- Read-write locks (redlock/rw.go, adapter.RWNode): any number of readers or
-- one writer per key, decided on this node in one atomic step.
--
-- A writer holds the lock key as a string, exactly like a plain lock (R3),
-- so that plain locks and writers exclude each other and the plain scripts
-- (release, extend) serve writers. Readers hold the same key as a hash
-- whose field "r:"..value is each reader's expiry in this node's
-- milliseconds (TIME); a waiting writer leaves a field "w:"..waiter there
-- (writer preference: no reader joins while one is alive). The key's own
-- expiry is the latest field's, and every step prunes the fields that
-- expired, so a crashed reader or waiter holds nothing past its ttl.
--
-- KEYS[1] lock key; ARGV[1] operation; the rest by operation:
--   racquire value ttl-ms    a reader joins unless a writer holds or waits
--   rrelease value           a reader leaves
--   rextend  value ttl-ms    a live reader's expiry is reset (R17)
--   wacquire value ttl-ms waiter
--                            a writer sets the key as SET NX would, also
--                            over a hash that holds no live reader; else,
--                            when waiter is not empty and readers hold the
--                            key, it leaves or refreshes its waiting mark
--   wunwait  waiter          a writer that stops waiting removes its mark
--   wmark    waiter ttl-ms   a plain lock's waiter leaves or refreshes its
--                            mark where live readers hold the key, as
--                            wacquire does, without acquiring
--   wacquirefenced value ttl-ms waiter
--                            wacquire that, when it set the key, also reads
--                            the fence value under KEYS[2] in the same step
--                            (R18 phase 1, as acquire_fenced.lua), and the
--                            fence floor under KEYS[3] when given (floor.lua)
-- Returns 1 when the operation acted as asked (acquired, released,
-- extended, mark left or removed), else 0; wacquirefenced returns {1, fence} when
-- it set the key (fence "0" when absent), else {0, "0"}; with KEYS[3], as
-- acquire_fenced.lua: {1, fence, kept}, else {0, "0", 1}.
local key, op = KEYS[1], ARGV[1]
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kind = redis.call("TYPE", key).ok

-- prune deletes the expired fields and returns the latest expiry left,
-- the live readers and whether a writer waits. A field that is not a
-- number (a foreign hash) counts as a reader that never leaves.
local function prune()
	local all = redis.call("HGETALL", key)
	local latest, readers, waiting = 0, 0, false
	for i = 1, #all, 2 do
		local exp = tonumber(all[i + 1])
		if exp == nil then
			readers = readers + 1
		elseif exp <= now then
			redis.call("HDEL", key, all[i])
		else
			if string.sub(all[i], 1, 2) == "w:" then
				waiting = true
			else
				readers = readers + 1
			end
			if exp > latest then
				latest = exp
			end
		end
	end
	return latest, readers, waiting
end

-- expire sets the key's expiry to the latest field's, or deletes it.
local function expire(latest)
	if latest > now then
		redis.call("PEXPIRE", key, string.format("%d", latest - now))
	else
		redis.call("DEL", key)
	end
end

if op == "racquire" or op == "rextend" then
	local f, expiry = "r:" .. ARGV[2], now + tonumber(ARGV[3])
	if kind == "none" and op == "racquire" then
		redis.call("HSET", key, f, string.format("%d", expiry))
		redis.call("PEXPIRE", key, ARGV[3])
		return 1
	end
	if kind ~= "hash" then
		return 0
	end
	local latest, _, waiting = prune()
	if op == "racquire" and waiting then
		return 0
	end
	if op == "rextend" then
		local cur = tonumber(redis.call("HGET", key, f))
		if cur == nil or cur <= now then
			return 0
		end
	end
	redis.call("HSET", key, f, string.format("%d", expiry))
	expire(math.max(latest, expiry))
	return 1
elseif op == "rrelease" or op == "wunwait" then
	if kind ~= "hash" then
		return 0
	end
	local f = (op == "rrelease" and "r:" or "w:") .. ARGV[2]
	local cur = tonumber(redis.call("HGET", key, f))
	if cur == nil then
		return 0
	end
	redis.call("HDEL", key, f)
	expire((prune()))
	if cur <= now then
		return 0 -- it had expired: not held
	end
	return 1
elseif op == "wacquire" or op == "wacquirefenced" then
	if kind == "hash" then
		local latest, readers = prune()
		if readers == 0 then
			redis.call("DEL", key) -- only marks: the writer goes first
			kind = "none"
		elseif ARGV[4] ~= "" then
			local expiry = now + tonumber(ARGV[3])
			redis.call("HSET", key, "w:" .. ARGV[4], string.format("%d", expiry))
			expire(math.max(latest, expiry))
		end
	end
	local fenced, floored = op == "wacquirefenced", #KEYS >= 3
	if kind == "none" then
		redis.call("SET", key, ARGV[2], "PX", ARGV[3])
		if not fenced then
			return 1
		end
		local f = redis.call("GET", KEYS[2]) or "0"
		if not floored then
			return {1, f}
		end
		local g, kept = floor_read(f, KEYS[3])
		return {1, g, kept}
	end
	if floored then
		return {0, "0", 1}
	elseif fenced then
		return {0, "0"}
	end
	return 0
elseif op == "wmark" then
	if kind ~= "hash" then
		return 0
	end
	local latest, readers = prune()
	if readers == 0 then
		return 0
	end
	local expiry = now + tonumber(ARGV[3])
	redis.call("HSET", key, "w:" .. ARGV[2], string.format("%d", expiry))
	expire(math.max(latest, expiry))
	return 1
end
return redis.error_reply("unknown read-write operation " .. tostring(op))

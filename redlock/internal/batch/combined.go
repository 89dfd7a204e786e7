package batch

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

// Combined plans, builds and answers a batch sent as the SET NX PX of each
// of its acquisitions (R3), then one call of the batch script
// (redlock/scripts/batch.lua) for all of its releases, announced releases,
// extensions and transfers, in their order: a node then starts one script
// per batch instead of one per release, and announces a release only where
// a client listens. An acquisition that follows another request of its key
// in the batch runs in the script, after it; every other one goes before
// the script, which no other request of its key precedes: every key's
// requests run in order. The script, the batch's last command, is the only
// one a NOSCRIPT retry moves. Its
// buffers are reused from batch to batch; the zero value is ready. One
// batch worker uses it at a time.
type Combined struct {
	acq, scr []int // indexes into the batch: acquisitions, scripted requests
	seen     map[string]struct{}
	ops      []byte
	keys     []string
	args     []string
}

// CombinedMin is the fewest scripted requests (not acquisitions) a batch
// must hold to go as one call of the batch script: one goes by its own
// script, which costs the node as much.
const CombinedMin = 2

// letter is op's letter in the batch script, 0 for an operation it does
// not run.
func letter(op adapter.Op) byte {
	switch op {
	case adapter.OpAcquire:
		return 'a'
	case adapter.OpRelease:
		return 'r'
	case adapter.OpReleaseAnnounce:
		return 'p'
	case adapter.OpExtend:
		return 'e'
	case adapter.OpTransfer:
		return 't'
	}
	return 0
}

// Plan reports whether batch goes as its acquisitions, then one call of the
// batch script: every request is on a single resource and CombinedMin of
// them or more go in the script, which runs every request but the
// acquisitions that no other request of their key precedes in the batch.
// Then Acquisitions lists those, in order.
func (c *Combined) Plan(batch []Item) bool {
	c.acq, c.scr = c.acq[:0], c.scr[:0]
	if len(batch) < CombinedMin {
		return false
	}
	if c.seen == nil {
		c.seen = map[string]struct{}{}
	}
	clear(c.seen)
	for i := range batch {
		r := &batch[i].Req
		if r.Op == adapter.OpAcquire {
			if _, ok := c.seen[r.Key]; !ok {
				c.acq = append(c.acq, i)
				continue
			}
			// It follows a scripted request of its key: it runs in
			// the script, after it.
		} else if letter(r.Op) == 0 {
			return false
		}
		c.seen[r.Key] = struct{}{}
		c.scr = append(c.scr, i)
	}
	return len(c.scr) >= CombinedMin
}

// Acquisitions returns the indexes in the planned batch of its
// acquisitions, in order (Plan).
func (c *Combined) Acquisitions() []int { return c.acq }

// Build returns the keys and the arguments (ARGV) of the batch script's
// call for the planned batch, ttl formatting an expiry in milliseconds and
// prefix the release channels' prefix. They are valid until the next Plan.
func (c *Combined) Build(batch []Item, prefix string, ttl func(time.Duration) string) (keys, args []string) {
	ops, keys, args := c.ops[:0], c.keys[:0], c.args[:0]
	for _, i := range c.scr {
		r := &batch[i].Req
		ops = append(ops, letter(r.Op))
		keys = append(keys, r.Key)
	}
	args = append(args, string(ops), prefix, scripts.ListenKey)
	for _, i := range c.scr {
		r := &batch[i].Req
		switch r.Op {
		case adapter.OpAcquire, adapter.OpExtend:
			args = append(args, r.Value, ttl(r.TTL))
		case adapter.OpTransfer:
			args = append(args, r.From, r.Value, ttl(r.TTL))
		default:
			args = append(args, r.Value)
		}
	}
	c.ops, c.keys, c.args = ops, keys, args
	return keys, args
}

// errReplyLength is the error of every scripted request of a batch whose
// script answered another number of results than it ran requests.
var errReplyLength = errors.New("batch: the batch script's reply does not have one result per request")

// Answer answers the scripted requests of the planned batch from the batch
// script's reply: reply is its result, or err the error of the whole call
// (each of them gets it). A request that failed on the node gets nodeErr of
// the node's error line.
func (c *Combined) Answer(batch []Item, reply string, err error, nodeErr func(msg string) error) {
	codes, errLines, _ := strings.Cut(reply, "\n")
	if err == nil && len(codes) != len(c.scr) {
		err = errReplyLength
	}
	for j, i := range c.scr {
		it := batch[i]
		switch {
		case err != nil:
			it.To.Receive(it.Tag, false, err)
		case codes[j] == '1':
			it.To.Receive(it.Tag, true, nil)
		case codes[j] == '0':
			it.To.Receive(it.Tag, false, nil)
		default:
			line, rest, _ := strings.Cut(errLines, "\n")
			errLines = rest
			it.To.Receive(it.Tag, false, nodeErr(line))
		}
	}
}

// TTLArg formats an expiry in milliseconds as a command's argument, once
// per distinct expiry: a client's requests mostly share one. The zero
// value is ready; one batch worker uses it at a time.
type TTLArg struct {
	ttl time.Duration
	ms  string
}

// Of returns ttl in milliseconds, as a decimal string.
func (a *TTLArg) Of(ttl time.Duration) string {
	if ttl != a.ttl || a.ms == "" {
		a.ttl, a.ms = ttl, strconv.FormatInt(ttl.Milliseconds(), 10)
	}
	return a.ms
}

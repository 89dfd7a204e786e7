package rueidis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/facts"
	"dlm/redlock/internal/fence"
	"dlm/redlock/scripts"

	"github.com/redis/rueidis"
)

// Each connection's handshake: the fence against requests left on the
// connections given up before it (first), and the facts its server tells
// about itself, read in the same write (Facts, at the end of this file).

// A request left behind on a connection that rueidis gave up (its bytes
// still on the way, or unread in the node's buffers) could run on the node
// after the requests of the connection that replaced it: a late release
// would delete a key that a later acquisition of the same value (WithValue,
// campaigns) counted. So every connection NewClient's client dials first
// learns its CLIENT ID, and closes on the node the connections the client
// gave up before it (CLIENT KILL ID), before rueidis's own handshake and
// so before any request. A connection counts as given up once a read or a
// write on it failed or it was closed: rueidis mostly learns of a failure
// through them, so the id is on the list before rueidis dials again (a
// failure rueidis sees first, a ping's timeout, lists it only when rueidis
// closes the connection, a moment after it may have dialled the next one:
// that window is open). The list keeps a connection until a handshake's
// kills of it were answered (redlock/internal/fence).
// With none on the list, there is nothing to close: the handshake's
// commands are sent ahead of rueidis' own, without waiting for their
// replies, and read before its replies (wrap, fencedConn.Read), so a new
// connection costs one round trip, not two; only a connection that
// replaces given-up ones waits for who it is before rueidis' handshake.

// connFence is one client's credentials, for the fence's handshake, and
// the connections it gave up (redlock/internal/fence).
type connFence struct {
	user, pass string
	given      fence.List
	// known gets what each new connection's server told about itself
	// (handshake); nil: not kept.
	known *facts.Known
	// setups tracks the connections in their handshake (nil: not
	// tracked), for AbortSetup.
	setups *setups
	// lazy is set while NewClient builds its client: the first dial,
	// which rueidis makes there and waits for, is deferred to the first
	// request (see errDialDeferred).
	lazy atomic.Bool
}

// errDialDeferred ends the dial that rueidis makes while NewClient builds
// its client: the client keeps no connection and dials on its first
// request, so that building a client never waits for a node (a node that
// accepts connections but never answers, such as a stopped process, held
// the handshake up to the dialer's timeout), and a node that is down is
// reported per request, as the other adapters do.
var errDialDeferred = errors.New("rueidis: dial deferred to the first request")

// dialFn is the type of rueidis' ClientOption.DialCtxFn.
type dialFn = func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error)

// wrap returns a dial function that dials as inner would (or as rueidis
// does by default, when inner is nil) and fences the connection.
func (f *connFence) wrap(inner dialFn) dialFn {
	return func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		if f.lazy.Load() {
			return nil, errDialDeferred
		}
		var nc net.Conn
		var err error
		f.setups.begin()                    // a connection being made, from its dial on
		dctx, release := f.setups.bind(ctx) // Close ends the dial too
		switch {
		case inner != nil:
			nc, err = inner(dctx, addr, d, cfg)
		case cfg != nil:
			// The TLS handshake keeps the bound it had (tlsTimeout): a
			// rediss URL naming a plain port hangs in it, and only its
			// error tells the operator so. A TLS node slower than that
			// is not reached.
			tctx, cancel := context.WithTimeout(dctx, tlsTimeout)
			nc, err = (&tls.Dialer{NetDialer: d, Config: cfg}).DialContext(tctx, "tcp", addr)
			if err != nil && tctx.Err() != nil && dctx.Err() == nil {
				// The TLS dial's own bound, not a request's context: not
				// a context's error, which the requests waiting for this
				// set-up would take for the dialing request's end and
				// wait for another set-up (settingup.go).
				err = fmt.Errorf("rueidis: no TLS handshake with %s within %v: %w", addr, tlsTimeout, os.ErrDeadlineExceeded)
			}
			cancel()
		default:
			nc, err = d.DialContext(dctx, "tcp", addr)
		}
		release()
		if err != nil {
			f.setups.end()
			if cerr := ctx.Err(); cerr != nil {
				// Cut by the end of the request that dials ("i/o
				// timeout" from the net package): its context's error,
				// so that the requests waiting for this set-up make one
				// of their own (settingup.go) instead of failing with
				// another request's deadline.
				return nil, cerr
			}
			return nil, endedAt(ctx, err)
		}
		// The handshake is bounded by the request that dials (its
		// deadline, or its end), not by a second of its own: a node that
		// answers later than that but within the request's deadline is
		// healthy, and only a connection learns it is slow.
		deadline, ok := ctx.Deadline()
		if !ok && d.Timeout > 0 {
			deadline = time.Now().Add(d.Timeout)
		}
		// Tracked until rueidis' own handshake is answered (its first
		// read), so that AbortSetup ends that one too; and, once handed
		// to rueidis, open until its Close, so that the node's Close
		// closes it (closeAll).
		c := &fencedConn{Conn: nc, f: f}
		if !f.setups.add(c, deadline) {
			f.setups.end()
			_ = nc.Close()
			return nil, errSetupAborted
		}
		stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
		fail := func(err error) (net.Conn, error) {
			f.setups.done(nc)
			_ = nc.Close()
			return nil, endedAt(ctx, err)
		}
		c.setting.Store(true)
		cause := func() error { return context.Cause(ctx) }
		ended := func(err error) error { return endedAt(ctx, err) }
		if f.given.Empty() {
			// Nothing to close on the node (a new client's connection,
			// or one after a handshake closed the given-up ones): the
			// handshake's commands go ahead of rueidis' own, in its
			// round trip, and the first read reads their replies before
			// rueidis' (fencedConn.Read). rueidis sends nothing before
			// its handshake is answered, so they still come before any
			// request.
			cmds, auth := f.commands()
			if err := writeCommands(nc, cmds); err != nil {
				stop()
				return fail(err)
			}
			c.ahead = &ahead{replies: len(cmds), learn: true, auth: auth, addr: addr, cause: cause, ended: ended}
			c.watch(stop)
			if !f.setups.opened(c) {
				c.unwatch()
				return fail(errSetupAborted)
			}
			return c, nil
		}
		who, err := f.handshake(nc, addr)
		if err == nil {
			c.who.Store(&who)
			// The kills go ahead of rueidis' handshake: the node runs
			// them before anything sent after them.
			// The list keeps what they close until their replies are
			// read (readAhead): kills that could not be written closed
			// nothing, and the next connection sends them again.
			kills, taken := f.given.Kills(who)
			if len(kills) == 0 {
				f.given.Done(taken)
			} else if err = writeCommands(nc, kills); err == nil {
				c.ahead = &ahead{replies: len(kills), taken: taken, cause: cause, ended: ended}
				c.watch(stop)
				if !f.setups.opened(c) {
					c.unwatch()
					return fail(errSetupAborted)
				}
				return c, nil
			}
		}
		if !stop() && err == nil {
			err = cause() // ended: the deadline may be past
		}
		if err != nil {
			return fail(err)
		}
		_ = nc.SetDeadline(time.Time{})
		if !f.setups.opened(c) {
			return fail(errSetupAborted)
		}
		return c, nil
	}
}

// ahead is a part of a connection's handshake whose commands went ahead
// of rueidis' handshake and whose replies are not read yet
// (fencedConn.Read): the whole handshake (learn), or its kills.
type ahead struct {
	replies int
	learn   bool         // the replies are those of connFence.commands
	auth    bool         // learn: the first command is an AUTH
	addr    string       // learn: the server's address
	taken   []fence.Conn // the kills: the listed connections they stand for
	// cause is the dial's context's cause, once it ended (the watch of
	// it ended the handshake: fencedConn.watch).
	cause func() error
	// ended is endedAt for the dial's context: a read that timed out at
	// its deadline fails as that context's end.
	ended func(err error) error
}

// endedAt returns context.DeadlineExceeded for err, a dial's or a
// handshake's "i/o timeout", when ctx's deadline has passed: the net
// package times a dial and the handshake's reads and writes out at that
// deadline itself, and on a busy machine ctx's own timer may not have run
// yet, so that ctx.Err() is still nil. The requests that waited for this
// set-up then make one of their own (settingup.go), as for ctx's end,
// instead of failing with another request's deadline (a fresh-clone run
// beside two busy loops: "dial tcp 127.0.0.1:12515: i/o timeout" failed
// every request that had joined the dial). Any other err, or one before
// the deadline, is returned as it is.
func endedAt(ctx context.Context, err error) error {
	// A dial's timeout is context.DeadlineExceeded by errors.Is, a read's
	// or a write's os.ErrDeadlineExceeded.
	timedOut := errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
	if cerr := ctx.Err(); cerr != nil && timedOut {
		return cerr // the watch of ctx's end set a past deadline
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) && timedOut {
		return context.DeadlineExceeded
	}
	return err
}

// tlsTimeout bounds a TLS dial (the TCP connection and the TLS handshake).
const tlsTimeout = time.Second

// clusterFence is the fence of a cluster client: a connFence per master
// address, each with its own list of given-up connections, since a
// connection is closed only by a later one to the same node.
type clusterFence struct {
	user, pass string
	known      *facts.Known // every master's facts; nil: not kept
	setups     *setups      // the connections in their handshake; nil: not tracked

	mu    sync.Mutex
	addrs map[string]*connFence
}

// wrap returns a dial function that dials as inner would (or as rueidis
// does by default) and fences the connection with the connections given
// up to the same address.
func (c *clusterFence) wrap(inner dialFn) dialFn {
	return func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		c.mu.Lock()
		f := c.addrs[addr]
		if f == nil {
			f = &connFence{user: c.user, pass: c.pass, known: c.known, setups: c.setups}
			c.addrs[addr] = f
		}
		c.mu.Unlock()
		return f.wrap(inner)(ctx, addr, d, cfg)
	}
}

// handshake authenticates when the client has credentials, learns who
// the connection is on the node (CLIENT ID, INFO server) and what the
// server at addr tells about itself (adapter.FactsCommands, kept in
// known), in one write (commands; its replies read by learn), before the
// kills of the given-up connections of the same run of the node (wrap,
// which sends them ahead of rueidis' handshake). A node that refuses
// CLIENT or INFO leaves the
// connection unfenced; one that refuses GET or CONFIG (an ACL, MOVED on a
// cluster master that does not hold the max ttl's slot) leaves those
// facts unknown. It runs before rueidis' own handshake, so in database 0,
// where `dlm node` advertises its max ttl.
func (f *connFence) handshake(nc net.Conn, addr string) (fence.Conn, error) {
	cmds, auth := f.commands()
	res, err := exchange(nc, cmds)
	if err != nil {
		return fence.Conn{}, err
	}
	return f.learn(res, auth, addr)
}

// commands returns the handshake's commands (handshake), and whether the
// first is an AUTH.
func (f *connFence) commands() (cmds [][]string, auth bool) {
	switch {
	case f.pass != "" && f.user != "":
		cmds = append(cmds, []string{"AUTH", f.user, f.pass})
	case f.pass != "":
		cmds = append(cmds, []string{"AUTH", f.pass})
	}
	auth = len(cmds) == 1
	cmds = append(cmds, fence.Commands()...)
	cmds = append(cmds, adapter.FactsCommands()...)
	return append(cmds, killProbe), auth
}

// learn reads res, the replies to commands: who the connection is, and the
// server's facts, kept in known; or the error of a refused AUTH.
func (f *connFence) learn(res [][]byte, auth bool, addr string) (fence.Conn, error) {
	who0 := 0
	if auth {
		if res[0][0] == '-' {
			// The node's error names the command, never its arguments.
			return fence.Conn{}, fmt.Errorf("rueidis: AUTH on connecting: %s", res[0][1:])
		}
		who0 = 1
	}
	id, info := res[who0], res[who0+1]
	n, err := strconv.ParseInt(string(id[1:]), 10, 64)
	who := fence.Identify(n, id[0] == ':' && err == nil, string(info[1:]), info[0] == '$')
	if f.known != nil {
		facts := serverFacts(addr, info, res[who0+2], res[who0+3:len(res)-1])
		decline(&facts, adapter.RefusedClient, id)
		decline(&facts, adapter.RefusedClient, res[len(res)-1])
		f.known.Set(facts)
	}
	return who, nil
}

// killProbe is the handshake's last command: a CLIENT KILL that closes
// nothing (no connection has id 0; the server answers that the id must be
// greater), whose answer says whether the user may run the kills of the
// fence (an ACL without CLIENT KILL answers NOPERM), before one is
// needed.
var killProbe = []string{"CLIENT", "KILL", "ID", "0"}

// decline records in f that the server refused what, when r, a reply of
// exchange, refuses its command (adapter.Facts.Decline).
func decline(f *adapter.Facts, what string, r []byte) {
	if r[0] == '-' {
		f.Decline(what, string(r[1:]))
	}
}

// serverFacts reads the facts replies of a handshake, as exchange returns
// them: INFO server, the GET of the advertised max ttl, then the CONFIG
// GETs of the persistence and memory settings and the INFO replication
// text (adapter.FactsCommands), each command the server refused named in
// the facts' Refused.
func serverFacts(addr string, info, maxTTL []byte, cfgs [][]byte) adapter.Facts {
	ttl, text := "", ""
	var declined adapter.Facts // what the server refused (Decline)
	switch {
	case info[0] == '$':
		text = string(info[1:])
	default:
		decline(&declined, adapter.RefusedInfo, info)
	}
	switch {
	case maxTTL[0] == '$':
		ttl = string(maxTTL[1:])
	default:
		decline(&declined, adapter.RefusedMaxTTL, maxTTL)
	}
	settings := map[string]string{}
	cmds := adapter.FactsCommands()[1:] // cfgs' commands
	for i, r := range cfgs {
		switch {
		case r[0] == '-':
			decline(&declined, adapter.RefusedBy(cmds[i]), r)
		case r[0] == '$': // INFO replication, INFO cluster
			text += "\n" + string(r[1:])
		case r[0] == '*': // CONFIG GET
			elems := strings.Split(string(r[1:]), "\n")
			for i := 0; i+1 < len(elems); i += 2 {
				settings[elems[i]] = elems[i+1]
			}
		}
	}
	f := adapter.ParseFacts(addr, text, ttl, settings)
	f.Declined(declined)
	return f
}

// exchange writes cmds (RESP2) in one write and reads one reply per
// command, exactly, so that nothing of what rueidis reads next is
// consumed here: a line (+, -, :), a bulk string ('$' and its text; '_'
// for a null one), or an array of bulk strings ('*' and its elements
// joined by newlines, as CONFIG GET answers).
func exchange(nc net.Conn, cmds [][]string) ([][]byte, error) {
	if err := writeCommands(nc, cmds); err != nil {
		return nil, err
	}
	return readReplies(nc, len(cmds))
}

// writeCommands writes cmds (RESP2) in one write.
func writeCommands(nc net.Conn, cmds [][]string) error {
	var buf []byte
	for _, c := range cmds {
		buf = fence.AppendCommand(buf, c...)
	}
	_, err := nc.Write(buf)
	return err
}

// readReplies reads n replies as exchange does.
func readReplies(nc net.Conn, n int) ([][]byte, error) {
	res := make([][]byte, n)
	for i := range n {
		line, err := readLine(nc)
		if err != nil {
			return nil, err
		}
		switch line[0] {
		case '+', '-', ':':
			res[i] = line
			continue
		case '$':
			if res[i], err = readBulk(nc, line); err != nil {
				return nil, err
			}
			continue
		case '*':
			n, err := strconv.Atoi(string(line[1:]))
			if err != nil || n > 64 {
				return nil, fmt.Errorf("rueidis: unexpected array length %q on connecting", line)
			}
			elems := make([]string, 0, max(n, 0))
			for range max(n, 0) {
				el, err := readLine(nc)
				if err == nil && el[0] != '$' {
					err = fmt.Errorf("rueidis: unexpected array element %q on connecting", el)
				}
				var b []byte
				if err == nil {
					b, err = readBulk(nc, el)
				}
				if err != nil {
					return nil, err
				}
				elems = append(elems, string(b[1:]))
			}
			res[i] = append([]byte{'*'}, strings.Join(elems, "\n")...)
			continue
		}
		return nil, fmt.Errorf("rueidis: unexpected reply %q on connecting", line)
	}
	return res, nil
}

// readBulk reads the body of the bulk string whose header line is line:
// '$' and its text, or '_' for a null bulk string.
func readBulk(nc net.Conn, line []byte) ([]byte, error) {
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < -1 || n > 1<<20 {
		return nil, fmt.Errorf("rueidis: unexpected bulk length %q on connecting", line)
	}
	if n == -1 {
		return []byte{'_'}, nil
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(nc, body); err != nil {
		return nil, err
	}
	return append([]byte{'$'}, body[:n]...), nil
}

// readLine reads one reply line, without its CRLF, a byte at a time.
func readLine(nc net.Conn) ([]byte, error) {
	var line []byte
	var b [1]byte
	for len(line) < 2 || line[len(line)-2] != '\r' || line[len(line)-1] != '\n' {
		if _, err := nc.Read(b[:]); err != nil {
			return nil, err
		}
		if line = append(line, b[0]); len(line) > 512 {
			return nil, errors.New("rueidis: reply line too long on connecting")
		}
	}
	if len(line) == 2 {
		return nil, errors.New("rueidis: empty reply line on connecting")
	}
	return line[:len(line)-2], nil
}

// fencedConn is a connection of a fenced client: once a read or a write
// fails or it is closed, its id goes on the list of given-up connections,
// before rueidis can dial again.
type fencedConn struct {
	net.Conn
	f    *connFence
	who  atomic.Pointer[fence.Conn] // nil until its handshake is read
	once sync.Once
	// setting: rueidis' handshake is not answered yet (setups); up: it
	// was, and the connection is counted live (setups.live).
	setting, up atomic.Bool
	// ahead: the handshake whose replies the first read reads (wrap);
	// only the reader touches it.
	ahead *ahead
	// stop ends the watch of the dial's context over ahead's replies
	// (context.AfterFunc's stop), once (unwatch): the first read or
	// Close, whichever comes first.
	stop      func() bool
	unwatched sync.Once
}

// watch keeps stop, the end of the watch of the dial's context over the
// handshake sent ahead (unwatch).
func (c *fencedConn) watch(stop func() bool) { c.stop = stop }

// unwatch ends the watch of the dial's context, and reports whether it
// ended it before the context did (as AfterFunc's stop); true when there
// is none.
func (c *fencedConn) unwatch() bool {
	stopped := true
	c.unwatched.Do(func() {
		if c.stop != nil {
			stopped = c.stop()
		}
	})
	return stopped
}

// setUp stops tracking the connection as being made (setups), and counts
// it live when its handshake was answered (up).
func (c *fencedConn) setUp(up bool) {
	if c.setting.Load() && c.setting.CompareAndSwap(true, false) {
		if up && c.f.setups != nil {
			c.up.Store(true)
			c.f.setups.live.Add(1) // before done, which wakes the waits
		}
		c.f.setups.done(c.Conn)
	}
}

// down stops counting the connection live (setUp).
func (c *fencedConn) down() {
	if c.up.Load() && c.up.CompareAndSwap(true, false) {
		c.f.setups.live.Add(-1)
	}
}

// giveUp lists the connection as given up (once its handshake told who it
// is: before, it carried no request).
func (c *fencedConn) giveUp() {
	c.down()
	c.once.Do(func() {
		if who := c.who.Load(); who != nil {
			c.f.given.Retire(*who)
		}
	})
}

// Read reads; a failed read gives the connection up. The first reads the
// replies of a handshake sent ahead of rueidis' (wrap) first.
func (c *fencedConn) Read(b []byte) (int, error) {
	if a := c.ahead; a != nil {
		c.ahead = nil
		if err := c.readAhead(a); err != nil {
			c.giveUp()
			return 0, err
		}
	}
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.setUp(true)
	}
	if err != nil {
		c.giveUp()
	}
	return n, err
}

// readAhead reads the replies of a, under the dial's deadline, or
// rueidis' once its handshake set its own: it learns who the connection
// is from a whole handshake (no connection was listed as given up when it
// was sent, so there is none to close), or takes the closed connections
// off the list. A kill answers how many it closed, or an error (not
// allowed): neither fails the connection.
func (c *fencedConn) readAhead(a *ahead) error {
	res, err := readReplies(c.Conn, a.replies)
	if !c.unwatch() && err == nil {
		err = a.cause() // ended: the deadline may be past
	}
	if err != nil {
		return a.ended(err)
	}
	if !a.learn {
		c.f.given.Done(a.taken)
		return nil
	}
	who, err := c.f.learn(res, a.auth, a.addr)
	if err != nil {
		return err
	}
	c.who.Store(&who)
	return nil
}

// Write writes; a failed write gives the connection up.
func (c *fencedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		c.giveUp()
	}
	return n, err
}

// Close gives the connection up and closes it.
func (c *fencedConn) Close() error {
	c.unwatch() // a connection closed before its first read
	c.setUp(false)
	c.giveUp()
	c.f.setups.closed(c)
	return c.Conn.Close()
}

var _ adapter.FactsNode = (*Node)(nil)

// Facts returns what the node's servers told about themselves
// (adapter.FactsNode). A node of Dial or DialNode reads them in the
// handshake of each connection its client makes (above): the server's
// run id, advertised max ttl (adapter.MaxTTLKey) and persistence, in the
// same write as the connection's other handshake commands, so no request
// of a lock pays for them. A cluster node has the facts of each master it
// connected to.
func (n *Node) Facts() ([]adapter.Facts, uint64) { return n.known.Get() }

// Connect makes the node's connection (each master's, for a cluster) if
// it has none, and reads again on a live one what a running server can
// change of its facts (its replication, its settings), bounded by ctx
// (adapter.FactsNode): the client calls it before its first lock and then
// while it locks, every few seconds. A node of Dial or DialNode connects
// by one PING per server whose facts it does not know yet, whose
// connection's handshake reads them, and reads the others again by four
// requests per server (adapter.RereadCommands); a cluster node asks
// CLUSTER NODES for its masters first. A node over a client given to
// NewNode, whose handshake it cannot see, reads every fact by requests
// instead, on every call, and learns of a restart only then.
func (n *Node) Connect(ctx context.Context) error {
	c := n.conn(ctx)
	if !n.cluster {
		addr := n.name
		if servers, _ := n.known.Get(); n.handshook && len(servers) == 1 {
			addr = servers[0].Addr // as its handshake named it
		}
		return n.reach(ctx, c, addr)
	}
	txt, err := clusterNodes(ctx, c)
	if err != nil {
		return err
	}
	nodes := c.Nodes()
	var errs []error
	for _, addr := range scripts.ClusterMasters(txt) {
		mc, ok := nodes[addr]
		if !ok {
			errs = append(errs, fmt.Errorf("rueidis: cluster master %s is not known to the client yet", addr))
			continue
		}
		errs = append(errs, n.reach(ctx, mc, addr))
	}
	return errors.Join(errs...)
}

// reach connects c by a PING, whose connection's handshake reads the
// facts, when the node knows none of addr yet; or reads them by requests:
// again, what a running server can change, when the handshake read them
// (Reread), or all of them, when the node cannot see the handshake.
func (n *Node) reach(ctx context.Context, c rueidis.Client, addr string) error {
	if n.handshook && !n.knows(addr) {
		return connect(ctx, c)
	}
	var declined adapter.Facts // what the server refused (Decline)
	refuses := func(err error, what string) bool {
		re, ok := rueidis.IsRedisErr(err)
		return ok && declined.Decline(what, re.Error())
	}
	info, err := text(c.Do(ctx, c.B().Info().Section("server").Build()))
	if err != nil && !refuses(err, adapter.RefusedInfo) {
		return err
	}
	for _, section := range []string{"replication", "cluster"} {
		if more, err := text(c.Do(ctx, c.B().Info().Section(section).Build())); err == nil {
			info += "\n" + more
		}
	}
	maxTTL := ""
	if !n.handshook {
		maxTTL, err = c.Do(ctx, c.B().Get().Key(adapter.MaxTTLKey).Build()).ToString()
		if err != nil {
			refuses(err, adapter.RefusedMaxTTL)
			maxTTL = "" // absent, refused, or MOVED on a cluster master
		}
	}
	cfg, err := c.Do(ctx, c.B().ConfigGet().Parameter("append*").Build()).AsStrMap()
	refuses(err, adapter.RefusedConfig)
	if save, err := c.Do(ctx, c.B().ConfigGet().Parameter("save").Build()).AsStrMap(); err == nil && cfg != nil {
		cfg["save"] = save["save"]
	}
	if mem, err := c.Do(ctx, c.B().ConfigGet().Parameter("maxmemory*").Build()).AsStrMap(); err == nil && cfg != nil {
		cfg["maxmemory"], cfg["maxmemory-policy"] = mem["maxmemory"], mem["maxmemory-policy"]
	}
	if !n.handshook {
		if err := c.Do(ctx, c.B().ClientKill().Id(0).Build()).Error(); err != nil {
			refuses(err, adapter.RefusedClient)
		}
	}
	f := adapter.ParseFacts(addr, info, maxTTL, cfg)
	f.Declined(declined)
	if n.handshook {
		n.known.Reread(f)
	} else {
		n.known.Set(f)
	}
	return nil
}

// connect makes c's connection by a PING, waited for until ctx ends, and
// leaves the connection's set-up unbounded by ctx. rueidis makes one
// connection for every request that needs it, bounded by the context of
// the request that started it: a Connect of a short reading (the client's
// facts reading, bounded by a few hundred milliseconds or two seconds)
// that started it ended it at that bound, and failed with it a lock
// attempt that had joined it and would have waited the patience a grant
// gives a node it has no history of (ttl/2 - drift). So the PING runs on,
// bounded by connTimeout and by Close (AbortSetup, Node.Close); its answer
// is not waited for past ctx.
func connect(ctx context.Context, c rueidis.Client) error {
	done := make(chan error, 1)
	go func() {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connTimeout)
		defer cancel()
		done <- c.Do(pctx, c.B().Ping().Build()).Error()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// knows reports whether the node has facts of the server at addr.
func (n *Node) knows(addr string) bool {
	servers, _ := n.known.Get()
	for _, s := range servers {
		if s.Addr == addr {
			return true
		}
	}
	return false
}

// errSetupAborted fails the dials of a node that gave up making
// connections (AbortSetup).
var errSetupAborted = errors.New("rueidis: node closing: no new connection")

// setups are the connections a node's fences are handshaking, and whether
// the node gave up making any (abort: Client.Close, so that a node that
// hangs before its handshake's answer does not hold it). A nil *setups
// tracks nothing.
type setups struct {
	mu      sync.Mutex
	aborted bool
	conns   map[net.Conn]struct{}
	// open are the node's connections from their hand-over to rueidis
	// to their Close, for closeAll.
	open map[*fencedConn]struct{}
	// dials ends with abort, and with it the dials under way (bind);
	// made on first use.
	dials   context.Context
	stopAll func()

	// live counts the connections whose handshake was answered and that
	// were not given up since (fencedConn.setUp, down); making, those
	// being made: from their dial (begin) to their handshake's answer or
	// their end (done, or end when the dial failed).
	live, making atomic.Int64
	// settled is closed when a connection stops being made (its handshake
	// answered, or its set-up ended), and then replaced (changed); nil
	// until someone waits.
	settled chan struct{}
}

// changed returns a channel closed when a connection of the node next
// stops being made (answered or ended), for a wait for the connection
// (Node.reached). Ask for it before reading connected, so that no change
// falls in between. Never closed when not tracked.
func (s *setups) changed() <-chan struct{} {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settled == nil {
		s.settled = make(chan struct{})
	}
	return s.settled
}

// settle wakes those waiting for a change (changed); s.mu is held.
func (s *setups) settle() {
	if s.settled != nil {
		close(s.settled)
		s.settled = nil
	}
}

// connected reports whether the node has an established connection and
// makes none (settingup.go): a connection being made beside one that
// works (a subscription's, say) may be the one the next request joins.
// True when not tracked.
func (s *setups) connected() bool {
	return s == nil || s.live.Load() > 0 && s.making.Load() == 0
}

// begin counts a connection being made, from its dial.
func (s *setups) begin() {
	if s != nil {
		s.making.Add(1)
	}
}

// end counts a connection whose dial failed, or that was refused, as no
// longer being made.
func (s *setups) end() {
	if s != nil {
		s.mu.Lock()
		s.making.Add(-1)
		s.settle()
		s.mu.Unlock()
	}
}

// bind returns ctx, ended too by abort, for a dial (the TCP connection and
// a TLS handshake, before the connection is tracked), and its release.
func (s *setups) bind(ctx context.Context) (context.Context, func()) {
	if s == nil {
		return ctx, func() {}
	}
	s.mu.Lock()
	if s.dials == nil {
		s.dials, s.stopAll = context.WithCancel(context.Background())
		if s.aborted {
			s.stopAll()
		}
	}
	dials := s.dials
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(dials, cancel)
	return ctx, func() { stop(); cancel() }
}

// hold adds one to calls, for a request that waits for a set-up again,
// and reports true, unless the node gave up making connections (abort):
// under s.mu, so that Close, which waits for calls after abort, never
// waits for a request that starts again after it.
func (s *setups) hold(calls *inflight) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return false
	}
	return calls.add()
}

// add tracks c, a connection just dialled, being made and open, and sets
// its handshake's deadline; it reports false when the node gave up making
// connections. The deadline is set under s.mu: an abort that comes after
// it ends the handshake, and one before it refuses c.
func (s *setups) add(c *fencedConn, deadline time.Time) bool {
	if s == nil {
		_ = c.Conn.SetDeadline(deadline)
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return false
	}
	_ = c.Conn.SetDeadline(deadline)
	if s.conns == nil {
		s.conns, s.open = map[net.Conn]struct{}{}, map[*fencedConn]struct{}{}
	}
	s.conns[c.Conn] = struct{}{}
	return true
}

// opened tracks c, about to be handed to rueidis, as open until its
// Close, and reports false when the node gave up making connections: c is
// then not handed over, so that every connection rueidis has is one that
// closeAll, which comes after abort, closes.
func (s *setups) opened(c *fencedConn) bool {
	if s == nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return false
	}
	s.open[c] = struct{}{}
	return true
}

// closed stops tracking c as open (its Close).
func (s *setups) closed(c *fencedConn) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
}

// closeAll closes every open connection of the node, for its Close, once
// abort made sure that no new one is made. rueidis' Close of a connection
// that is still open first sends it a PING and waits for the answer, up
// to a second (a server that stopped answering), one connection after
// the other: a node's Close waited one round trip per connection, and a
// client's Close that of each node in turn, so that servers slow to
// answer on a loaded machine held it about a second each. Closed here,
// the connections fail that PING at once. A redlock client waits for its
// requests before it closes its nodes; a request still on a connection
// (one left to its deadline, or a caller's own) fails now with the
// connection, as rueidis' Close would fail it after the PING.
func (s *setups) closeAll() {
	if s == nil {
		return
	}
	s.mu.Lock()
	open := make([]*fencedConn, 0, len(s.open))
	for c := range s.open {
		open = append(open, c)
	}
	s.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// count returns how many connections are being made.
func (s *setups) count() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// done stops tracking nc.
func (s *setups) done(nc net.Conn) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if _, ok := s.conns[nc]; ok {
		delete(s.conns, nc)
		s.making.Add(-1)
		s.settle()
	}
	s.mu.Unlock()
}

// abort ends every handshake under way (its reads fail at once) and every
// later dial.
func (s *setups) abort() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
	if s.stopAll != nil {
		s.stopAll()
	}
	for nc := range s.conns {
		_ = nc.SetDeadline(time.Unix(1, 0))
	}
}

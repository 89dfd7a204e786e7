package goredis

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/facts"
	"dlm/redlock/internal/fence"
)

// The node's own connection. go-redis closes a pooled connection whose read
// timed out and dials a new one (its replies can no longer be matched to
// its commands), and its pool makes a request wait for a free connection:
// on a slow or loaded node both cost more than the node timeout. So the
// batched requests of a Node go over one connection the adapter owns,
// dialled with the go-redis client's own settings (Options().Dialer, which
// carries TLSConfig and DialTimeout; the credentials, DB and client name),
// on which it writes each batch as one pipeline and a reader goroutine reads
// the replies in order. A batch whose deadline passes is answered as timed
// out at once, but its replies are still read, later, and discarded: the
// connection stays, in step, for the batches behind it. It is closed only
// when a read or a write fails (the node went away), or by Close; the next
// batch then dials again.

// errClosed answers the requests of a Node closed under them.
var errClosed = errors.New("goredis: node closed")

// reply is one RESP2 reply: a status (+), an error (-), an integer (:),
// a bulk string ($, nil when null), or an array (*, with its elements:
// only the unbatched scripts, script.go, answer with one).
type reply struct {
	kind  byte
	str   string
	num   int64
	null  bool
	elems []reply
}

// err returns the reply as an error when it is one (a redis.Error, so that
// go-redis' helpers recognise it).
func (r reply) err() error {
	if r.kind == '-' {
		return redisError(r.str)
	}
	return nil
}

// redisError is an error reply of the node. It implements redis.Error.
type redisError string

func (e redisError) Error() string { return string(e) }

// RedisError marks the error as the node's (redis.Error).
func (redisError) RedisError() {}

var _ redis.Error = redisError("")

// flight is one batch on the wire: its replies, filled by the reader in
// order, and done, closed when all came or the connection failed (err).
type flight struct {
	res  []reply
	got  int
	err  error
	done chan struct{}
}

// fail ends every flight of fs with err.
func fail(fs []*flight, err error) {
	for _, f := range fs {
		f.err = err
		close(f.done)
	}
}

// wire is one connection of a pipe and the flights written on it. Every
// flight belongs to the connection it was written on: only that
// connection's reader hands it replies, and when the connection fails its
// flights fail with it, taken out under pipe.mu by whichever comes first
// (the reader, a failed write, or the dial of the next connection), so a
// reply can never reach a flight of another connection.
type wire struct {
	nc      net.Conn
	who     fence.Conn // who it is on the node; zero: unknown
	bw      *bufio.Writer
	pending []*flight // in the order written; under pipe.mu
	broken  bool      // failed: no flight joins it; under pipe.mu
}

// pipe is the node's connection, replaced when it fails.
type pipe struct {
	opts *redis.Options

	mu     sync.Mutex
	cur    *wire // nil before the first dial and after a failure
	closed bool
	// given are the connections given up and not yet closed on the node
	// by the handshake of a new one (dial).
	given fence.List
	// known gets what each new connection's server told about itself
	// (dial); nil: not kept.
	known *facts.Known
	// setup is the connection being made (conn), nil when none is;
	// aborted: none is made any more (abortSetup).
	setup   *setup
	aborted bool
	// writing is held by the one caller that writes (write), so that its
	// flight's place in pending is its place on the wire.
	writing sync.Mutex
}

// serverFacts reads the facts replies of a handshake (dial) or of a
// reading again (refresh): INFO server, the GET of the advertised max ttl
// (nil: not asked), then the CONFIG GETs of the persistence and memory
// settings and the INFO replication and cluster texts
// (adapter.FactsCommands), each command the server refused named in the
// facts' Refused.
func serverFacts(addr string, info reply, maxTTL *reply, cfgs []reply) adapter.Facts {
	ttl, text := "", ""
	var declined adapter.Facts // what the server refused (Decline)
	if info.kind == '$' && !info.null {
		text = info.str
	} else if info.kind == '-' {
		declined.Decline(adapter.RefusedInfo, info.str)
	}
	if maxTTL != nil && maxTTL.kind == '$' && !maxTTL.null {
		ttl = maxTTL.str
	} else if maxTTL != nil && maxTTL.kind == '-' {
		declined.Decline(adapter.RefusedMaxTTL, maxTTL.str)
	}
	settings := map[string]string{}
	cmds := adapter.FactsCommands()[1:] // cfgs' commands
	for i, r := range cfgs {
		switch {
		case r.kind == '-':
			declined.Decline(adapter.RefusedBy(cmds[i]), r.str)
		case r.kind == '$' && !r.null: // INFO replication, INFO cluster
			text += "\n" + r.str
		default:
			for i := 0; i+1 < len(r.elems); i += 2 { // CONFIG GET
				settings[r.elems[i].str] = r.elems[i+1].str
			}
		}
	}
	f := adapter.ParseFacts(addr, text, ttl, settings)
	f.Declined(declined)
	return f
}

// conn returns the live connection, or the one being made, waiting for
// it until ctx ends. The batch worker calls it before each write, Connect
// (facts.go) to connect ahead of the first request. One connection is
// made at a time (setup), so one replaces a failed one; its making is not
// the caller's: it goes on when the caller gives up, bounded by
// connTimeout and by close, so that a node whose handshake takes longer
// than one request's deadline (a healthy node on a loaded machine) is
// connected for the requests after it. The flights of a failed connection
// are failed before the next one is dialled, and the next one closes the
// failed one on the node before it carries any request (dial).
func (p *pipe) conn(ctx context.Context) (*wire, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	if w := p.cur; w != nil && !w.broken {
		p.mu.Unlock()
		return w, nil
	}
	s := p.setup
	if s == nil && p.aborted {
		p.mu.Unlock()
		return nil, errClosed
	}
	if s == nil {
		s = p.startSetup()
	}
	p.mu.Unlock()
	select {
	case <-s.done:
		return s.w, s.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// connTimeout bounds the making of a connection (dial and handshake): a
// node that has not answered its handshake by then is given up on, and the
// next request dials again.
const connTimeout = 10 * time.Second

// setup is the making of one connection: done is closed once w (nil on a
// failure, err) is known; cancel ends it (close).
type setup struct {
	done   chan struct{}
	w      *wire
	err    error
	cancel context.CancelFunc
}

// startSetup starts making a connection in place of the failed one, if
// any; p.mu is held.
func (p *pipe) startSetup() *setup {
	var old []*flight
	if w := p.cur; w != nil {
		old, w.pending = w.pending, nil
		p.cur = nil
		p.given.Retire(w.who)
	}
	ctx, cancel := context.WithTimeout(context.Background(), connTimeout)
	s := &setup{done: make(chan struct{}), cancel: cancel}
	p.setup = s
	go func() {
		defer cancel()
		fail(old, io.ErrUnexpectedEOF)
		nc, br, who, err := p.dial(ctx)
		p.mu.Lock()
		p.setup = nil
		if err == nil && p.closed {
			_ = nc.Close()
			err = errClosed
		}
		if err == nil {
			s.w = &wire{nc: nc, who: who, bw: bufio.NewWriterSize(nc, 32<<10)}
			p.cur = s.w
			go p.read(s.w, br)
		}
		s.err = err
		p.mu.Unlock()
		close(s.done)
	}()
	return s
}

// backlog reports whether the live connection still waits for the
// replies of a batch written on it (one that timed out: the node answers
// late).
func (p *pipe) backlog() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.cur
	return w != nil && !w.broken && len(w.pending) > 0
}

// live returns the live connection, nil when there is none; errClosed
// once the pipe is closed.
func (p *pipe) live() (*wire, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
	}
	if w := p.cur; w != nil && !w.broken {
		return w, nil
	}
	return nil, nil
}

// dial opens a connection as the go-redis client would (its Dialer, so
// TLS and the dial timeout too) and runs the handshake, in one write: AUTH
// with the client's credentials, CLIENT ID and INFO server (who the
// connection is on the node, which the next connection will need), the
// server's facts (adapter.FactsCommands: its advertised max ttl and
// persistence, kept in known for adapter.FactsNode), then SELECT its DB
// and CLIENT SETNAME its name. The connection speaks RESP2 whatever the
// client's Protocol.
//
// Then it closes on the node the connections given up before it (given,
// by CLIENT KILL ID: redlock/internal/fence), so that no request left
// behind on one of them (its bytes still on the way, or unread in the
// node's buffers) can run on the node after the requests of this one: a
// late release would delete a key that a later acquisition of the same
// value (WithValue, campaigns) counted. Only the connections of the same
// run of the node are closed (after a restart their ids name other
// clients). A node that refuses CLIENT or INFO (an ACL without them)
// leaves its connections unfenced, as before.
func (p *pipe) dial(ctx context.Context) (net.Conn, *bufio.Reader, fence.Conn, error) {
	o := p.opts
	nc, err := o.Dialer(ctx, o.Network, o.Addr)
	if err != nil {
		return nil, nil, fence.Conn{}, err
	}
	user, pass := o.Username, o.Password
	switch {
	case o.CredentialsProviderContext != nil:
		if user, pass, err = o.CredentialsProviderContext(ctx); err != nil {
			_ = nc.Close()
			return nil, nil, fence.Conn{}, fmt.Errorf("goredis: credentials: %w", err)
		}
	case o.CredentialsProvider != nil:
		user, pass = o.CredentialsProvider()
	}
	var cmds [][]string
	switch {
	case pass != "" && user != "":
		cmds = append(cmds, []string{"AUTH", user, pass})
	case pass != "":
		cmds = append(cmds, []string{"AUTH", pass})
	}
	// Who the connection is and what the server tells about itself, in
	// database 0 (where `dlm node` advertises its max ttl): answered
	// with an error (an ACL without them, MOVED on a cluster master that
	// does not hold the max ttl's slot), they leave it unknown.
	who0 := len(cmds)
	cmds = append(cmds, fence.Commands()...)
	cmds = append(cmds, adapter.FactsCommands()...)
	cmds = append(cmds, killProbe)
	opt := len(cmds)
	if o.DB > 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(o.DB)})
	}
	if o.ClientName != "" {
		cmds = append(cmds, []string{"CLIENT", "SETNAME", o.ClientName})
	}
	br := bufio.NewReaderSize(nc, 32<<10)
	if d, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(d)
	}
	// An end of ctx before its deadline (Connect given up) ends the
	// handshake too, so that the next dial does not wait behind it.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	res, err := handshake(nc, br, cmds, func(i int) bool { return i < who0 || i >= opt })
	if err != nil {
		_ = nc.Close()
		return nil, nil, fence.Conn{}, err
	}
	id, info := res[who0], res[who0+1]
	infoOK := info.kind == '$' && !info.null
	who := fence.Identify(id.num, id.kind == ':', info.str, infoOK)
	if p.known != nil {
		f := serverFacts(o.Addr, info, &res[who0+2], res[who0+3:opt-1])
		if id.kind == '-' {
			f.Decline(adapter.RefusedClient, id.str)
		}
		if probe := res[opt-1]; probe.kind == '-' {
			f.Decline(adapter.RefusedClient, probe.str)
		}
		p.known.Set(f)
	}
	kills, taken := p.given.Kills(who)
	if len(kills) > 0 {
		// Each answers how many it closed (0: gone already), or an
		// error (not allowed): neither stops the dial.
		if _, err := handshake(nc, br, kills, func(int) bool { return false }); err != nil {
			_ = nc.Close()
			return nil, nil, fence.Conn{}, err
		}
	}
	p.given.Done(taken)
	if !stop() { // ctx ended: the deadline may be past
		_ = nc.Close()
		return nil, nil, fence.Conn{}, context.Cause(ctx)
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, br, who, nil
}

// killProbe is the handshake's last command: a CLIENT KILL that closes
// nothing (no connection has id 0; the server answers that the id must be
// greater), whose answer says whether the user may run the kills of the
// reconnect fence (an ACL without CLIENT KILL answers NOPERM), before a
// kill is needed.
var killProbe = []string{"CLIENT", "KILL", "ID", "0"}

// refresh makes the connection when there is none, whose handshake reads
// the server's facts; on the live one it reads again, in order with the
// batches (adapter.RereadCommands), what a running server can change:
// its replication (a replica attached) and its settings (adapter.Facts).
func (p *pipe) refresh(ctx context.Context) error {
	w, err := p.live()
	if err != nil || w == nil || p.known == nil {
		if err == nil {
			_, err = p.conn(ctx)
		}
		return err
	}
	cmds := adapter.RereadCommands()
	var buf []byte
	for _, c := range cmds {
		buf = appendCommand(buf, c...)
	}
	f, err := p.write(ctx, buf, len(cmds))
	if err != nil {
		return err
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if f.err != nil {
		return f.err
	}
	p.known.Reread(serverFacts(p.opts.Addr, f.res[0], nil, f.res[1:]))
	return nil
}

// handshake writes cmds in one write and reads their replies; an error
// reply to a command i that must(i) is an error naming its command (never
// its arguments), to another it is only returned in its reply.
func handshake(nc net.Conn, br *bufio.Reader, cmds [][]string, must func(i int) bool) ([]reply, error) {
	var buf []byte
	for _, c := range cmds {
		buf = appendCommand(buf, c...)
	}
	if _, err := nc.Write(buf); err != nil {
		return nil, err
	}
	res := make([]reply, len(cmds))
	for i := range cmds {
		r, err := readReply(br)
		if err == nil && must(i) {
			err = r.err()
		}
		if err != nil {
			return nil, fmt.Errorf("goredis: %s on connecting: %w", cmds[i][0], err)
		}
		res[i] = r
	}
	return res, nil
}

// read reads the replies of w in order into the flights written on it,
// until w fails; then it fails every flight of w still pending. It never
// touches another connection's flights.
func (p *pipe) read(w *wire, br *bufio.Reader) {
	for {
		r, err := readReply(br)
		p.mu.Lock()
		if err == nil && len(w.pending) == 0 && !w.broken {
			err = errors.New("goredis: a reply no request was waiting for")
		}
		if err != nil || w.broken {
			w.broken = true
			pending := w.pending
			w.pending = nil
			p.mu.Unlock()
			_ = w.nc.Close()
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			fail(pending, err)
			return
		}
		f := w.pending[0]
		f.res[f.got] = r
		f.got++
		if f.got == len(f.res) {
			w.pending[0] = nil
			w.pending = w.pending[1:]
			close(f.done)
		}
		p.mu.Unlock()
	}
}

// errConnLost fails a batch built for a live connection (Node.reached)
// that was lost before the batch was written: the batch does not wait for
// another.
var errConnLost = fmt.Errorf("goredis: the connection was lost before the batch was written: %w", io.ErrUnexpectedEOF)

// write puts a batch's commands (buf, n of them) on the live connection,
// after the flights before it, and returns its flight; with none, it
// fails with errConnLost: a batch is built once its connection is live
// (Node.reached, reachedMaster) and never waits for another. A write that
// fails breaks the connection and fails its flights, f too. ctx's
// deadline bounds the write.
func (p *pipe) write(ctx context.Context, buf []byte, n int) (*flight, error) {
	p.writing.Lock() // the batch worker's, and a reading again of the facts
	defer p.writing.Unlock()
	w, err := p.live()
	if err == nil && w == nil {
		err = errConnLost
	}
	if err != nil {
		return nil, err
	}
	f := &flight{res: make([]reply, n), done: make(chan struct{})}
	p.mu.Lock()
	if w.broken || p.closed {
		p.mu.Unlock()
		return nil, io.ErrUnexpectedEOF
	}
	w.pending = append(w.pending, f)
	p.mu.Unlock()
	d, _ := ctx.Deadline() // zero: none
	_ = w.nc.SetWriteDeadline(d)
	_, werr := w.bw.Write(buf)
	if werr == nil {
		werr = w.bw.Flush()
	}
	if werr != nil {
		// A partial command may be on the wire: the connection is lost.
		p.mu.Lock()
		w.broken = true
		pending := w.pending
		w.pending = nil
		p.mu.Unlock()
		_ = w.nc.Close()
		fail(pending, fmt.Errorf("goredis: write: %w", werr))
	}
	return f, nil
}

// abortSetup ends the making of a connection, if one is under way, and
// makes no new one; the live connection serves on (adapter.SetupNode).
func (p *pipe) abortSetup() {
	p.mu.Lock()
	p.aborted = true
	s := p.setup
	p.mu.Unlock()
	if s != nil {
		s.cancel()
	}
}

// close closes the connection and ends the making of one; the requests
// still waiting fail.
func (p *pipe) close() {
	p.mu.Lock()
	p.closed = true
	w, s := p.cur, p.setup
	p.mu.Unlock()
	if w != nil {
		_ = w.nc.Close()
	}
	if s != nil {
		s.cancel()
	}
}

// appendCommand appends args as one RESP2 command.
func appendCommand(buf []byte, args ...string) []byte { return fence.AppendCommand(buf, args...) }

// readReply reads one RESP2 reply (RESP3 types are not expected on a
// connection that never sent HELLO 3).
func readReply(br *bufio.Reader) (reply, error) {
	line, err := readLine(br)
	if err != nil {
		return reply{}, err
	}
	r := reply{kind: line[0]}
	body := string(line[1:])
	switch r.kind {
	case '+', '-':
		r.str = body
	case ':':
		if r.num, err = strconv.ParseInt(body, 10, 64); err != nil {
			return r, fmt.Errorf("goredis: bad integer reply %q", body)
		}
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return r, fmt.Errorf("goredis: bad bulk length %q", body)
		}
		if n == -1 {
			r.null = true
			return r, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return r, err
		}
		r.str = string(b[:n])
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return r, fmt.Errorf("goredis: bad array length %q", body)
		}
		if n == -1 {
			r.null = true
		}
		if n > 0 {
			r.elems = make([]reply, n)
		}
		for i := range max(n, 0) {
			if r.elems[i], err = readReply(br); err != nil {
				return r, err
			}
		}
	default:
		return r, fmt.Errorf("goredis: unexpected reply type %q", r.kind)
	}
	return r, nil
}

// readLine reads one line without its CRLF; it is not empty.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("goredis: reply line too long")
		}
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("goredis: malformed reply line %q", line)
	}
	return line[:len(line)-2], nil
}

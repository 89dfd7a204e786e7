package tcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"dlm/byzantine"
)

// Frame kinds.
const (
	kindHello   = 1 // handshake
	kindMessage = 2 // a byzantine.Message in wire format
	kindMarker  = 3 // end of round: 2-byte round number, 16-byte run id
	// kindAck goes the other way, from the listener to the dialer on the
	// dialer's connection: the 8-byte count of the dialer's frames the
	// listener has taken in this run (a cumulative acknowledgement).
	kindAck = 4
)

const (
	helloMax         = 256
	handshakeTimeout = 5 * time.Second
	writeTimeout     = 5 * time.Second
	nonceSize        = 32
	// helloSize is the size of the dialer's first frame: kind, its id,
	// its nonce, its run's terms and its signature (see helloFrame).
	helloSize = 1 + 2 + nonceSize + termsSize + ed25519.SignatureSize
	// replySize is the size of the listener's answer: kind, its id, its
	// nonce, the resume point (how many of the dialer's frames it took in
	// this run) and its signature of all that.
	replySize = 1 + 2 + nonceSize + 8 + ed25519.SignatureSize
	ackSize   = 1 + 8
	// ackEvery: the listener acknowledges after every end-of-round marker
	// and every ackEvery frames, so that a dialer keeps at most about
	// that many frames beyond a round's end for a resend.
	ackEvery = 256
	// acceptBackoffMin and acceptBackoffMax bound the pause after an
	// Accept error (for example EMFILE): the loop backs off, then accepts
	// again, instead of stopping.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	// helloGrace is how long a connection is spared to send its hello
	// before it may be closed to make room: a dialer sends it at once.
	helloGrace = 250 * time.Millisecond
)

// Limits that keep one peer, or a stranger, from starving the others.
const (
	// MaxHandshakes bounds the inbound connections whose dialer has not
	// yet proven its identity. A dialer proves it with its first frame,
	// which carries its signature of the run, both ids and a fresh nonce;
	// that hello is read and checked when the connection is accepted,
	// before any other connection is taken (the kernel hands over a
	// connection only once its first data arrived, where it can), so a
	// general's dial is proven at once and needs no room, whatever the
	// rate at which strangers connect. A general has at most one proven
	// connection in its handshake: a newer one replaces it. Above the
	// bound, room is made by closing the oldest unproven connection that
	// had helloGrace to send its hello; when there is none, the new
	// connection is closed. A general whose connection was closed all the
	// same (its hello came in pieces) dials again until the run's last
	// deadline.
	MaxHandshakes = 64
	// MaxHandshakesPerSource bounds the unproven connections from one
	// source address other than loopback (generals on one machine all
	// come from loopback); above it room is made among that source's own
	// connections, the same way.
	MaxHandshakesPerSource = MaxHandshakes / 4
	// HandshakeGrace was how long a proven handshake was spared when room
	// had to be made.
	//
	// Deprecated: proven handshakes take no room now; nothing uses it.
	HandshakeGrace = time.Second
	// PeerQueue is how many received events of one peer may wait for the
	// general to take them. A peer that sends faster is not read further
	// until the general catches up: it slows only its own connection,
	// never the others'.
	PeerQueue = 128
)

// ErrHandshake is wrapped when a peer fails to authenticate.
var ErrHandshake = errors.New("tcp: handshake failed")

// ErrOtherTerms is wrapped when a general proves (with a hello signed
// for its run) that it was started with other run flags than this one:
// see Terms and Node.OtherTerms.
var ErrOtherTerms = errors.New("tcp: a general of the cluster runs with other run flags")

// ErrClosed is returned by a closed Node.
var ErrClosed = errors.New("tcp: node closed")

// Node is one general's TCP endpoint: it listens for its peers, dials each
// of them, and authenticates every connection both ways with the ed25519
// keys of the cluster (A2): a message's sender is the authenticated peer of
// the connection it came in on, whatever the message says. Frames are
// length-prefixed with a size limit; a peer that sends an oversized or
// undecodable frame is cut off and reported as gone, without harming the
// other connections. Node implements byzantine.Endpoint and is safe for
// concurrent use. Nonces come from crypto/rand: authentication must not be
// replayable, so it is the one random choice not drawn from the seed.
type Node struct {
	id       byzantine.ID
	run      byzantine.RunID // set by Start, before any connection is served
	terms    Terms           // the run's terms, sent in every hello
	cluster  Cluster         // the run's cluster, to check a hello of other terms
	priv     ed25519.PrivateKey
	ln       net.Listener
	maxFrame int

	in         chan byzantine.Inbound
	slots      []chan struct{} // per peer: a token per queued event
	done       chan struct{}
	closing    sync.Once
	wg         sync.WaitGroup
	refused    atomic.Int64
	acceptErrs atomic.Int64
	dialFails  atomic.Int64

	// recvd counts, per peer, the frames of the peer taken into in (its
	// stream's next sequence number): the resume point a redialling peer
	// is told. rmu serializes the taking, so that frames sent again on a
	// new connection are taken once and in order.
	recvd []atomic.Uint64
	rmu   []sync.Mutex

	mu      sync.Mutex
	keys    []ed25519.PublicKey
	out     map[byzantine.ID]*outConn
	conns   map[net.Conn]struct{}
	inbound map[byzantine.ID]net.Conn // each peer's current authenticated inbound connection
	pending []*pendingConn            // inbound connections still in their handshake, oldest first
	nonces  map[[nonceSize]byte]bool  // dialer nonces proven in this run: a replayed hello is refused
	// refusing: peers whose link had been up and whose address now
	// refuses connections (their process ended).
	refusing map[byzantine.ID]bool
	// otherTerms: per peer, how the terms of the last hello it signed
	// for another run differ from this run's (see OtherTerms).
	otherTerms map[byzantine.ID][]TermDiff
	// start and round are the run's schedule, when the node runs on one
	// (see onSchedule): Lost then judges a message by its round's
	// deadline.
	start time.Time
	round time.Duration
}

// pendingConn is an inbound connection in its handshake.
type pendingConn struct {
	conn  net.Conn
	src   string // source IP, "" for loopback
	since time.Time
	// proven: its dialer signed a fresh hello with the key of general
	// peer. Only then is the connection spared when room must be made.
	proven bool
	peer   byzantine.ID
	nonce  []byte
}

// outConn is the link to one peer. The frames sent to it form one stream
// numbered from 0 in the run; log holds those the peer has not yet
// acknowledged, from sequence number base, and its writer, one goroutine
// per peer, writes them in order on the current connection. When the
// connection breaks, the link loop (see link) dials again until the run's
// last deadline, proves its identity as in the first handshake, and the
// peer says how many frames of the stream it took: the writer resends
// the rest. So a frame lost with a reset connection, even one the kernel
// had accepted, is sent again, and the peer takes each frame once, in
// order. A Send never waits for the network: a peer whose link is not up
// gets its frames when the link comes up (in time or not, the receiver's
// deadlines decide), and a peer that stops reading costs its own writer
// the write timeout, not every sender.
type outConn struct {
	mu   sync.Mutex
	conn net.Conn // the current connection, nil while the link is down
	gen  int      // bumped on every attach and break: a stale goroutine's news is ignored
	down chan struct{}
	log  [][]byte // frames not yet acknowledged, from sequence number base
	base uint64
	// sent is the sequence number of the next frame to write on the
	// current connection.
	sent   uint64
	queued int  // bytes in log
	busy   bool // the writer holds frames taken from log
	everUp bool // a handshake succeeded once in this run
	breaks int  // how many times a connection of the link broke
	left   bool // the peer closed the last connection in order: it left
	// noListener: the last dial to the peer was refused (nothing
	// listened at its address). See Node.Down.
	noListener bool
	redial     bool // a link loop dials again when the connection breaks
	// broken: the link is given up for the run (the dialer stopped, the
	// peer lied about the stream, or it took nothing for the write
	// timeout): frames are refused.
	broken error
	blamed bool // the link was given up for the peer's fault
	// lost: a message frame was given up undelivered. See Node.Lost.
	lost bool
	wake chan struct{}
}

// wakeUp tells the writer there is work.
func (oc *outConn) wakeUp() {
	select {
	case oc.wake <- struct{}{}:
	default:
	}
}

// end gives the link up for the run with err. When the peer is to blame
// (it lied about its stream, or took nothing while its link was up), the
// messages given up are its fault, not lost by this general (see Lost).
// Called with oc.mu held.
func (oc *outConn) end(err error, peerToBlame bool) {
	if oc.broken == nil {
		oc.broken = err
		oc.blamed = peerToBlame
	}
	oc.lost = oc.lost || (!oc.blamed && hasMessage(oc.log))
	oc.log, oc.queued = nil, 0
}

// writer writes oc's frames to its current connection in order until the
// node closes; a failed write breaks the connection, and the writer goes
// on with the next one.
func (n *Node) writer(oc *outConn) {
	defer n.wg.Done()
	var bw *bufio.Writer
	var bwConn net.Conn
	for {
		select {
		case <-n.done:
			return
		case <-oc.wake:
		}
		for {
			oc.mu.Lock()
			if oc.conn == nil || oc.broken != nil || oc.sent >= oc.base+uint64(len(oc.log)) {
				oc.mu.Unlock()
				break
			}
			conn, gen := oc.conn, oc.gen
			batch := oc.log[oc.sent-oc.base:]
			end := oc.sent + uint64(len(batch))
			oc.busy = true
			oc.mu.Unlock()
			if bwConn != conn {
				bw, bwConn = bufio.NewWriterSize(conn, 64<<10), conn
			}
			var err error
			for _, f := range batch {
				conn.SetWriteDeadline(time.Now().Add(writeTimeout))
				if err = WriteFrame(bw, f); err != nil {
					break
				}
			}
			if err == nil {
				conn.SetWriteDeadline(time.Now().Add(writeTimeout))
				err = bw.Flush()
			}
			oc.mu.Lock()
			oc.busy = false
			if err == nil && oc.gen == gen {
				oc.sent = max(oc.sent, end)
			}
			oc.mu.Unlock()
			if err != nil {
				// What of batch left is for the peer to say when the
				// link is dialled again: it is sent again from there.
				n.linkBroke(oc, gen, err)
			}
		}
	}
}

// attach makes conn the link's connection, the peer having taken resume
// frames of the stream: the frames before resume are dropped, the writer
// sends the others. A resume point outside what was sent and not yet
// acknowledged is a lie (the peer took frames it was never sent, or
// fewer than it acknowledged): the link is given up. It returns the
// channel closed when conn breaks.
func (n *Node) attach(oc *outConn, conn net.Conn, resume uint64) (<-chan struct{}, error) {
	n.mu.Lock()
	select {
	case <-n.done:
		n.mu.Unlock()
		conn.Close()
		return nil, ErrClosed
	default:
	}
	n.conns[conn] = struct{}{}
	n.wg.Add(1)
	n.mu.Unlock()
	oc.mu.Lock()
	var err error
	switch {
	case oc.broken != nil:
		err = oc.broken
	case resume < oc.base || resume > oc.base+uint64(len(oc.log)):
		err = fmt.Errorf("%w: the peer says it took %d frames, but %d were acknowledged and %d sent", ErrHandshake, resume, oc.base, oc.base+uint64(len(oc.log)))
		oc.end(err, true)
	}
	if err != nil {
		oc.mu.Unlock()
		n.wg.Done()
		n.forget(conn)
		return nil, err
	}
	oc.trim(resume)
	oc.sent = resume
	oc.conn, oc.everUp, oc.left = conn, true, false
	oc.gen++
	oc.down = make(chan struct{})
	gen, down := oc.gen, oc.down
	oc.mu.Unlock()
	oc.wakeUp()
	go n.acks(oc, conn, gen)
	return down, nil
}

// trim drops the frames before sequence number k. Called with oc.mu held.
func (oc *outConn) trim(k uint64) {
	if k <= oc.base {
		return
	}
	for _, f := range oc.log[:k-oc.base] {
		oc.queued -= len(f)
	}
	oc.log = oc.log[k-oc.base:]
	oc.base = k
	// The peer may acknowledge frames of a batch the writer is still
	// writing: the next batch starts after them.
	oc.sent = max(oc.sent, k)
	if len(oc.log) == 0 {
		oc.log = nil
	}
}

// acks reads the peer's acknowledgements on the link's connection conn
// of attachment gen, until conn breaks.
func (n *Node) acks(oc *outConn, conn net.Conn, gen int) {
	defer n.wg.Done()
	for {
		f, err := ReadFrame(conn, ackSize)
		if err == nil && (len(f) != ackSize || f[0] != kindAck) {
			err = fmt.Errorf("%w: the peer sent a frame of kind %d where acknowledgements go", ErrHandshake, f[0])
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				oc.mu.Lock()
				oc.left = oc.left || oc.gen == gen
				oc.mu.Unlock()
			}
			n.linkBroke(oc, gen, err)
			return
		}
		k := binary.BigEndian.Uint64(f[1:])
		oc.mu.Lock()
		if oc.gen != gen {
			oc.mu.Unlock()
			return
		}
		if k > oc.base+uint64(len(oc.log)) {
			oc.end(fmt.Errorf("%w: the peer acknowledges %d frames, %d were sent", ErrHandshake, k, oc.base+uint64(len(oc.log))), true)
			oc.mu.Unlock()
			n.linkBroke(oc, gen, nil)
			return
		}
		oc.trim(k)
		oc.mu.Unlock()
	}
}

// linkBroke records that the connection of attachment gen broke with err:
// the link loop dials again, or, when none does any more, the link is
// given up. The connection is reset, not closed in order: an orderly
// close tells the peer this general has left.
func (n *Node) linkBroke(oc *outConn, gen int, err error) {
	oc.mu.Lock()
	if oc.gen != gen || oc.conn == nil {
		oc.mu.Unlock()
		return
	}
	conn := oc.conn
	oc.conn = nil
	oc.gen++
	oc.breaks++
	close(oc.down)
	if !oc.redial && err != nil {
		oc.end(err, false)
	}
	oc.mu.Unlock()
	n.forget(conn)
}

// forget resets conn and stops tracking it.
func (n *Node) forget(conn net.Conn) {
	resetConn(conn)
	n.mu.Lock()
	delete(n.conns, conn)
	n.mu.Unlock()
}

// resetConn closes conn with a reset rather than an orderly close.
func resetConn(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// overdue reports whether the log holds a message of a round whose
// deadline, on the schedule of a run that started at start with rounds
// of round, has passed by now. Called with oc.mu held.
func (oc *outConn) overdue(start time.Time, round time.Duration, now time.Time) bool {
	for _, f := range oc.log {
		// A message frame is the kind, then byzantine's wire format:
		// version, sender, receiver, round.
		if len(f) >= 8 && f[0] == kindMessage {
			r := int(binary.BigEndian.Uint16(f[6:8]))
			if !start.Add(time.Duration(r+1) * round).After(now) {
				return true
			}
		}
	}
	return false
}

// hasMessage reports whether frames hold a message frame (not only
// markers).
func hasMessage(frames [][]byte) bool {
	for _, f := range frames {
		if len(f) > 0 && f[0] == kindMessage {
			return true
		}
	}
	return false
}

// Listen starts a node for general id with private key priv on addr (for
// example "127.0.0.1:0"). maxFrame <= 0 means DefaultMaxFrame.
func Listen(addr string, id byzantine.ID, priv ed25519.PrivateKey, maxFrame int) (*Node, error) {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	lc := net.ListenConfig{Control: listenControl}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	return newNode(ln, id, priv, maxFrame), nil
}

// newNode returns a node for general id accepting on ln, which its Close
// closes.
func newNode(ln net.Listener, id byzantine.ID, priv ed25519.PrivateKey, maxFrame int) *Node {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	return &Node{
		id:       id,
		priv:     priv,
		ln:       ln,
		maxFrame: maxFrame,
		done:     make(chan struct{}),
		out:      make(map[byzantine.ID]*outConn),
		conns:    make(map[net.Conn]struct{}),
		inbound:  make(map[byzantine.ID]net.Conn),
	}
}

// Addr returns the address the node listens on.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// Refused returns how many inbound connections were refused: failed
// handshakes (a first frame that is no valid hello, a replayed hello, a
// proof that fails) and connections above MaxHandshakes or closed to make
// room. A peer's newer proven connection is not refused: it replaces the
// older one.
func (n *Node) Refused() int { return int(n.refused.Load()) }

// DialFailures returns how many of this node's dials of its peers failed,
// in the connection or in the handshake (each is retried).
func (n *Node) DialFailures() int { return int(n.dialFails.Load()) }

// AcceptErrors returns how many Accept calls failed (the loop backed off
// and went on accepting).
func (n *Node) AcceptErrors() int { return int(n.acceptErrs.Load()) }

// Start accepts the cluster's connections and dials every other general
// of the cluster, retrying (failed dials and failed handshakes alike)
// until ctx ends; every handshake is bounded by ctx as well. It returns
// once every link is up, or when ctx ends with the errors of the peers
// it could not reach; the node still works with the others. Until ctx
// ends, a link that breaks is dialled again and what the peer did not
// take is sent again. The run id is RunID(c, t): both sides of every
// handshake sign it, and it is carried by every end-of-round marker, so
// a general of another run (other terms, the same keys, or a cluster
// entry pointing elsewhere) fails the handshake and is refused; one
// that proves it runs with other terms is named by OtherTerms.
// RunNode does not wait for Start past the run's start time: it runs the
// rounds while the links still missing are being dialled, and uses each
// from when it is up.
func (n *Node) Start(ctx context.Context, c Cluster, t Terms) error {
	return n.startRun(ctx, c, RunID(c, t), t)
}

// startRun is Start for the run run with terms t.
func (n *Node) startRun(ctx context.Context, c Cluster, run byzantine.RunID, t Terms) error {
	if err := n.prepare(c, run, t); err != nil {
		return err
	}
	up := make(chan struct{})
	errs := make(chan error, 1)
	go func() { errs <- n.dialAll(ctx, c, up) }()
	select {
	case <-up:
		return nil
	case err := <-errs:
		return err
	}
}

// prepare checks the cluster, sets up the receive queues and starts
// accepting, for the run run with terms t (run is RunID(c, t), but for
// a test's traitor whose clock runs ahead).
func (n *Node) prepare(c Cluster, run byzantine.RunID, t Terms) error {
	keys, err := c.PublicKeys()
	if err != nil {
		return err
	}
	if int(n.id) >= len(keys) || !bytes.Equal(keys[n.id], n.priv.Public().(ed25519.PublicKey)) {
		return fmt.Errorf("%w: general %d: key does not match the cluster file", ErrCluster, n.id)
	}
	n.mu.Lock()
	n.keys = keys
	n.run, n.terms, n.cluster = run, t, c
	n.nonces = make(map[[nonceSize]byte]bool)
	n.refusing = make(map[byzantine.ID]bool)
	n.otherTerms = make(map[byzantine.ID][]TermDiff)
	n.in = make(chan byzantine.Inbound, len(keys)*PeerQueue)
	n.recvd = make([]atomic.Uint64, len(keys))
	n.rmu = make([]sync.Mutex, len(keys))
	n.slots = make([]chan struct{}, len(keys))
	for i := range n.slots {
		n.slots[i] = make(chan struct{}, PeerQueue)
	}
	for i := range keys {
		if byzantine.ID(i) == n.id {
			continue
		}
		oc := &outConn{wake: make(chan struct{}, 1)}
		n.out[byzantine.ID(i)] = oc
		n.wg.Add(1)
		go n.writer(oc)
	}
	n.mu.Unlock()
	n.wg.Add(1)
	go n.acceptLoop()
	return nil
}

// dialAll keeps a link to every other general until ctx ends (see
// link), and closes up once every link is up: a peer that is down or
// stalls costs one wait, not one each. It returns the errors of the
// peers whose link was not up when ctx ended.
func (n *Node) dialAll(ctx context.Context, c Cluster, up chan<- struct{}) error {
	errs := make([]error, len(c.Generals))
	var wg sync.WaitGroup
	var missing atomic.Int64
	missing.Store(int64(len(c.Generals) - 1))
	if missing.Load() <= 0 {
		close(up)
	}
	for i, p := range c.Generals {
		if p.ID == n.id {
			continue
		}
		var once sync.Once
		wg.Go(func() {
			errs[i] = n.link(ctx, p.ID, p.Addr, n.keys[p.ID], func() {
				once.Do(func() {
					if missing.Add(-1) == 0 {
						close(up)
					}
				})
			})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// redialPause is the first pause before another attempt to reach a peer
// after one failed (or after a link that broke as soon as it was up); it
// doubles with each such attempt in a row, up to maxRedialPause.
const redialPause = 5 * time.Millisecond

// maxRedialPause is the longest pause between two attempts to reach a
// peer: an eighth of the round of a run on a schedule (links that come
// back are used within the round), 100 ms otherwise. A peer that
// answers every handshake and resets the link at once so costs each
// general a few dials a round, not hundreds a second.
func (n *Node) maxRedialPause() time.Duration {
	n.mu.Lock()
	round := n.round
	n.mu.Unlock()
	if round <= 0 {
		return 100 * time.Millisecond
	}
	return max(redialPause, round/8)
}

// redialWait is the pause before the next attempt to reach a peer after
// tries attempts in a row that failed or whose link broke within the
// longest pause.
func (n *Node) redialWait(tries int) time.Duration {
	most := n.maxRedialPause()
	d := redialPause
	for range tries {
		if d >= most {
			break
		}
		d *= 2
	}
	return min(d, most)
}

// link keeps the link to peer id up until ctx ends: it dials and
// authenticates, attaches the connection (the peer says where to resume
// the stream), calls up, and when the connection breaks dials again at
// once, pausing after each failed attempt (see redialWait). When ctx ends
// with the link down, the link is given up for the run; a link up then
// stays up until it breaks. It returns the last error when the link was
// not up at the end.
func (n *Node) link(ctx context.Context, id byzantine.ID, addr string, key ed25519.PublicKey, up func()) error {
	n.mu.Lock()
	oc := n.out[id]
	n.mu.Unlock()
	oc.mu.Lock()
	oc.redial = true
	oc.mu.Unlock()
	var d net.Dialer
	var last, refused error // refused: the last failed handshake, which says more
	tries := 0              // attempts in a row that failed, or whose link broke soon
	defer func() {
		oc.mu.Lock()
		oc.redial = false
		if oc.conn == nil && oc.broken == nil {
			// Frames for it can no longer be sent.
			err := last
			if refused != nil {
				err = refused
			}
			if err == nil {
				err = errors.Join(ErrClosed, ctx.Err())
			}
			oc.end(err, false)
		}
		oc.mu.Unlock()
	}()
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		oc.mu.Lock()
		oc.noListener = errors.Is(err, syscall.ECONNREFUSED)
		oc.mu.Unlock()
		if err == nil {
			var resume uint64
			resume, err = n.clientHandshake(ctx, conn, id, key)
			if err == nil {
				down, err := n.attach(oc, conn, resume)
				if err != nil {
					last = err
					return err
				}
				up()
				last, refused = nil, nil
				attached := time.Now()
				select {
				case <-down:
				case <-ctx.Done():
					return nil
				case <-n.done:
					return ErrClosed
				}
				// Dial again at once, unless the connection broke as
				// soon as it was up: a peer that resets every link must
				// not make this general dial without pause, so the
				// pauses grow with each such break in a row.
				if time.Since(attached) >= n.maxRedialPause() {
					tries = 0
				}
				wait := n.redialWait(tries) - time.Since(attached)
				tries++
				if wait > 0 {
					t := time.NewTimer(wait)
					select {
					case <-ctx.Done():
						t.Stop()
						return errors.Join(fmt.Errorf("tcp: general %d to %d: the link broke", n.id, id), ctx.Err())
					case <-n.done:
						t.Stop()
						return ErrClosed
					case <-t.C:
					}
				}
				continue
			}
			if ctx.Err() == nil {
				refused = fmt.Errorf("tcp: general %d to %d: %w", n.id, id, err)
			}
			conn.Close()
			err = fmt.Errorf("tcp: general %d to %d: %w", n.id, id, err)
		} else {
			if errors.Is(err, syscall.ECONNREFUSED) {
				n.listenerGone(id)
			}
			err = fmt.Errorf("tcp: general %d cannot reach %d at %s: %w", n.id, id, addr, err)
		}
		last = err
		n.dialFails.Add(1)
		t := time.NewTimer(n.redialWait(tries))
		tries++
		select {
		case <-ctx.Done():
			t.Stop()
			if refused != nil {
				last = refused
			}
			return errors.Join(last, ctx.Err())
		case <-n.done:
			t.Stop()
			return ErrClosed
		case <-t.C:
		}
	}
}

// handshakeDeadline is when a handshake begun now must be over: after
// handshakeTimeout, and no later than ctx's deadline.
func handshakeDeadline(ctx context.Context) time.Time {
	d := time.Now().Add(handshakeTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	return d
}

func transcript(role string, run byzantine.RunID, nonce []byte, dialer, listener byzantine.ID) []byte {
	b := []byte("dlm/byzantine/tcp/v5/" + role)
	b = append(b, run[:]...)
	b = append(b, nonce...)
	b = binary.BigEndian.AppendUint16(b, uint16(dialer))
	return binary.BigEndian.AppendUint16(b, uint16(listener))
}

// helloFrame returns the dialer's first frame: its id, a fresh nonce,
// the terms of its run and its signature of (run, nonce, dialer,
// listener), which proves its identity before the listener spends a
// handshake slot on it. The terms are not signed on their own: a
// listener of another run checks the signature against RunID of them
// (see checkHello), so it learns them only from the dialer.
func helloFrame(priv ed25519.PrivateKey, run byzantine.RunID, t Terms, nonceD []byte, dialer, listener byzantine.ID) []byte {
	f := binary.BigEndian.AppendUint16([]byte{kindHello}, uint16(dialer))
	f = append(f, nonceD...)
	f = append(f, t.encode()...)
	return append(f, ed25519.Sign(priv, transcript("hello", run, nonceD, dialer, listener))...)
}

// acceptTranscript is what the listener signs in its answer: the dialer's
// nonce, both ids and the resume point, so that no one but the listener
// can say where the dialer's stream resumes.
func acceptTranscript(run byzantine.RunID, nonceD []byte, dialer, listener byzantine.ID, resume uint64) []byte {
	return binary.BigEndian.AppendUint64(transcript("accept", run, nonceD, dialer, listener), resume)
}

// replyFrame returns the listener's answer to a hello with nonce nonceD.
func replyFrame(priv ed25519.PrivateKey, run byzantine.RunID, nonceD, nonceL []byte, dialer, listener byzantine.ID, resume uint64) []byte {
	f := binary.BigEndian.AppendUint16([]byte{kindHello}, uint16(listener))
	f = append(f, nonceL...)
	f = binary.BigEndian.AppendUint64(f, resume)
	return append(f, ed25519.Sign(priv, acceptTranscript(run, nonceD, dialer, listener, resume))...)
}

// clientHandshake: hello(id, nonceD, sigH) -> reply(id, nonceL, resume,
// sigL) -> sigD. It returns the resume point: how many frames of this
// general's stream the listener took in this run. It is bounded by ctx:
// by its deadline and by its end.
func (n *Node) clientHandshake(ctx context.Context, conn net.Conn, want byzantine.ID, key ed25519.PublicKey) (uint64, error) {
	conn.SetDeadline(handshakeDeadline(ctx))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if stop() {
			conn.SetDeadline(time.Time{})
		}
	}()
	nonceD := make([]byte, nonceSize)
	rand.Read(nonceD)
	if err := WriteFrame(conn, helloFrame(n.priv, n.run, n.terms, nonceD, n.id, want)); err != nil {
		return 0, err
	}
	reply, err := ReadFrame(conn, helloMax)
	if errors.Is(err, io.EOF) {
		// A general closes the connection on a hello it cannot verify.
		return 0, fmt.Errorf("%w: general %d closed the connection on our hello: it refused our signature (other run flags, --start or --seq, another cluster file or key, or another version of dlm) or closed it to make room", ErrHandshake, want)
	}
	if err != nil {
		return 0, err
	}
	if len(reply) != replySize || reply[0] != kindHello {
		return 0, fmt.Errorf("%w: bad reply (%d bytes, want %d)", ErrHandshake, len(reply), replySize)
	}
	if got := byzantine.ID(binary.BigEndian.Uint16(reply[1:])); got != want {
		return 0, fmt.Errorf("%w: peer says it is %d, want %d", ErrHandshake, got, want)
	}
	nonceL := reply[3 : 3+nonceSize]
	resume := binary.BigEndian.Uint64(reply[3+nonceSize:])
	if !ed25519.Verify(key, acceptTranscript(n.run, nonceD, n.id, want, resume), reply[3+nonceSize+8:]) {
		return 0, fmt.Errorf("%w: peer %d signature", ErrHandshake, want)
	}
	sig := ed25519.Sign(n.priv, transcript("dial", n.run, nonceL, n.id, want))
	return resume, WriteFrame(conn, append([]byte{kindHello}, sig...))
}

// serverHandshake authenticates an inbound connection and returns the
// peer's id and the resume point it was told: the number of frames of its
// stream this general had taken. When the accept loop already read and
// checked the hello (pc.proven), it goes on from there; otherwise the
// hello is read, early holding its first bytes if the accept loop read
// some.
func (n *Node) serverHandshake(conn net.Conn, pc *pendingConn, early []byte) (byzantine.ID, uint64, error) {
	conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	n.mu.Lock()
	keys, run := n.keys, n.run
	peer, nonceD, proven := pc.peer, pc.nonce, pc.proven
	n.mu.Unlock()
	if !proven {
		hello, err := ReadFrame(io.MultiReader(bytes.NewReader(early), conn), helloMax)
		if err != nil {
			return 0, 0, err
		}
		peer, nonceD, err = n.checkHello(hello)
		if err != nil {
			return 0, 0, err
		}
		n.mu.Lock()
		if !slices.Contains(n.pending, pc) {
			err = fmt.Errorf("%w: general %d's connection was closed to make room before its hello was read", ErrHandshake, peer)
		} else {
			err = n.proven(pc, peer, nonceD)
		}
		n.mu.Unlock()
		if err != nil {
			return 0, 0, err
		}
	}
	nonceL := make([]byte, nonceSize)
	rand.Read(nonceL)
	resume := n.recvd[peer].Load()
	if err := WriteFrame(conn, replyFrame(n.priv, run, nonceD, nonceL, peer, n.id, resume)); err != nil {
		return 0, 0, err
	}
	proof, err := ReadFrame(conn, helloMax)
	if err != nil {
		return 0, 0, err
	}
	if len(proof) != 1+ed25519.SignatureSize || proof[0] != kindHello ||
		!ed25519.Verify(keys[peer], transcript("dial", run, nonceL, peer, n.id), proof[1:]) {
		return 0, 0, fmt.Errorf("%w: general %d did not prove its identity", ErrHandshake, peer)
	}
	return peer, resume, nil
}

// acceptLoop accepts until the node closes. An Accept error (out of file
// descriptors, a reset connection) pauses it, with a backoff doubling from
// acceptBackoffMin to acceptBackoffMax, and it accepts again: no error
// leaves the general deaf. Connections above MaxHandshakes waiting to
// authenticate evict the oldest such connection.
func (n *Node) acceptLoop() {
	defer n.wg.Done()
	backoff := time.Duration(0)
	for {
		conn, err := n.ln.Accept()
		if err != nil {
			select {
			case <-n.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			n.acceptErrs.Add(1)
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			t := time.NewTimer(backoff)
			select {
			case <-n.done:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		backoff = 0
		pc := &pendingConn{conn: conn, src: sourceOf(conn), since: time.Now()}
		// The hello a dialer sent at once is read here, before any
		// other connection is taken: a general's dial is proven when it
		// is accepted, however fast strangers connect.
		early := make([]byte, 4+helloSize)
		early = early[:readReady(conn, early)]
		var peer byzantine.ID
		var nonce []byte
		var bad error
		if len(early) >= 4 && binary.BigEndian.Uint32(early) != helloSize {
			bad = fmt.Errorf("%w: first frame of %d bytes, want a hello of %d", ErrHandshake, binary.BigEndian.Uint32(early), helloSize)
		} else if len(early) == 4+helloSize {
			peer, nonce, bad = n.checkHello(early[4:])
		}
		n.mu.Lock()
		select {
		case <-n.done:
			n.mu.Unlock()
			conn.Close()
			return
		default:
		}
		if bad == nil && nonce != nil {
			bad = n.proven(pc, peer, nonce)
		}
		if bad != nil || (!pc.proven && !n.makeRoom(pc)) {
			n.mu.Unlock()
			n.refused.Add(1)
			conn.Close()
			continue
		}
		n.pending = append(n.pending, pc)
		n.conns[conn] = struct{}{}
		n.wg.Add(1)
		n.mu.Unlock()
		if pc.proven {
			early = nil
		}
		go n.readLoop(conn, pc, early)
	}
}

// sourceOf returns the source IP of conn, "" for loopback.
func sourceOf(conn net.Conn) string {
	a, ok := conn.RemoteAddr().(*net.TCPAddr)
	if !ok || a.IP.IsLoopback() {
		return ""
	}
	return a.IP.String()
}

// makeRoom closes a pending connection when pc, whose dialer has not
// proven its identity yet, would exceed MaxHandshakes, or
// MaxHandshakesPerSource for its source, and reports whether pc may
// join: the victim is the oldest (of the source, or of all) whose dialer
// has not proven its identity within helloGrace. No younger connection
// is closed for it: when there is no victim, pc is refused. Connections
// whose dialer proved its identity take no room (there is at most one
// per general). Called with n.mu held.
func (n *Node) makeRoom(pc *pendingConn) bool {
	now := time.Now()
	evict := func(same func(*pendingConn) bool) bool {
		victim := slices.IndexFunc(n.pending, func(p *pendingConn) bool {
			return same(p) && !p.proven && now.Sub(p.since) > helloGrace
		})
		if victim < 0 {
			return false
		}
		n.pending[victim].conn.Close() // its handshake fails and it is refused
		n.pending = slices.Delete(n.pending, victim, victim+1)
		return true
	}
	if pc.src != "" {
		count := 0
		for _, p := range n.pending {
			if p.src == pc.src && !p.proven {
				count++
			}
		}
		if count >= MaxHandshakesPerSource && !evict(func(p *pendingConn) bool { return p.src == pc.src }) {
			return false
		}
	}
	unproven := 0
	for _, p := range n.pending {
		if !p.proven {
			unproven++
		}
	}
	if unproven >= MaxHandshakes && !evict(func(*pendingConn) bool { return true }) {
		return false
	}
	return true
}

// checkHello checks a dialer's hello: its size, the general it claims to
// be, and that general's signature of the run, its nonce and both ids.
// It returns the general and the nonce. A hello signed for the run of
// the terms it carries, when they are not this run's, proves that the
// general was started with other terms: the difference is kept for
// OtherTerms and named in the error, which wraps ErrOtherTerms.
func (n *Node) checkHello(hello []byte) (byzantine.ID, []byte, error) {
	if len(hello) != helloSize || hello[0] != kindHello {
		return 0, nil, fmt.Errorf("%w: bad hello (%d bytes, want %d: kind, id, nonce, terms, signature)", ErrHandshake, len(hello), helloSize)
	}
	peer := byzantine.ID(binary.BigEndian.Uint16(hello[1:]))
	nonceD := hello[3 : 3+nonceSize]
	theirs := hello[3+nonceSize : 3+nonceSize+termsSize]
	sig := hello[3+nonceSize+termsSize:]
	n.mu.Lock()
	keys, run, ours, c := n.keys, n.run, n.terms, n.cluster
	n.mu.Unlock()
	if int(peer) >= len(keys) || peer == n.id {
		return 0, nil, fmt.Errorf("%w: unknown general %d", ErrHandshake, peer)
	}
	if ed25519.Verify(keys[peer], transcript("hello", run, nonceD, peer, n.id), sig) {
		n.mu.Lock()
		delete(n.otherTerms, peer) // it runs this run
		n.mu.Unlock()
		return peer, nonceD, nil
	}
	if t := decodeTerms(theirs); !bytes.Equal(theirs, ours.encode()) &&
		ed25519.Verify(keys[peer], transcript("hello", RunID(c, t), nonceD, peer, n.id), sig) {
		d := Diff(t, ours)
		n.mu.Lock()
		n.otherTerms[peer] = d
		n.mu.Unlock()
		return 0, nil, fmt.Errorf("%w: %w: general %d: %s", ErrHandshake, ErrOtherTerms, peer, DiffText(d))
	}
	return 0, nil, fmt.Errorf("%w: hello claiming general %d is not signed by its key for this run", ErrHandshake, peer)
}

// OtherTerms returns, per peer, how the run of the last hello it signed
// for another run differs from this one (the flags, with both values),
// for the peers that sent one: such a peer was started with other run
// flags, another --start or another --seq, and its connections are
// refused. The map is the caller's.
func (n *Node) OtherTerms() map[byzantine.ID][]TermDiff {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[byzantine.ID][]TermDiff, len(n.otherTerms))
	for p, d := range n.otherTerms {
		out[p] = slices.Clone(d)
	}
	return out
}

// proven marks pc as proven to come from general peer, whose signed
// hello carried nonce, and closes peer's older connection still in its
// handshake, if any (a general dials one connection at a time, so the
// older one was given up). It fails when nonce was seen before in this
// run (a replayed hello). Called with n.mu held.
func (n *Node) proven(pc *pendingConn, peer byzantine.ID, nonce []byte) error {
	key := [nonceSize]byte(nonce)
	if n.nonces[key] {
		return fmt.Errorf("%w: general %d's hello was replayed (its nonce was seen before in this run)", ErrHandshake, peer)
	}
	n.nonces[key] = true
	n.pending = slices.DeleteFunc(n.pending, func(p *pendingConn) bool {
		if p != pc && p.proven && p.peer == peer {
			p.conn.Close() // its handshake fails and it is refused
			return true
		}
		return false
	})
	pc.proven, pc.peer, pc.nonce = true, peer, nonce
	return nil
}

// push queues ev, waiting while its peer already has PeerQueue events
// queued: a fast peer is throttled on its own connection.
func (n *Node) push(ev byzantine.Inbound) bool {
	select {
	case n.slots[ev.From] <- struct{}{}:
	case <-n.done:
		return false
	}
	select {
	case n.in <- ev:
		return true
	case <-n.done:
		return false
	}
}

// readLoop authenticates one inbound connection and turns its frames into
// events until the peer leaves or misbehaves. The connection becomes the
// peer's current one (an older one, which the peer gave up, is closed);
// its frames continue the peer's stream from the resume point the peer
// was told, and a frame taken before (sent again after a reset) is
// skipped. An orderly close (EOF) means the peer left: it is reported
// gone. Any other break (a reset, a timeout) is not: the peer dials
// again, and if it does not, its deadlines find it out.
func (n *Node) readLoop(conn net.Conn, pc *pendingConn, early []byte) {
	defer n.wg.Done()
	defer n.drop(conn)
	peer, seq, err := n.serverHandshake(conn, pc, early)
	n.mu.Lock()
	if i := slices.IndexFunc(n.pending, func(p *pendingConn) bool { return p.conn == conn }); i >= 0 {
		n.pending = slices.Delete(n.pending, i, i+1)
	}
	var old net.Conn
	if err == nil {
		old = n.inbound[peer]
		n.inbound[peer] = conn
	}
	n.mu.Unlock()
	if err != nil {
		n.refused.Add(1)
		return
	}
	if old != nil {
		old.Close()
	}
	// current reports whether conn is still the peer's connection, and
	// stops it being so.
	current := func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.inbound[peer] != conn {
			return false
		}
		delete(n.inbound, peer)
		return true
	}
	ack := make(chan struct{}, 1)
	stop := make(chan struct{})
	acked := make(chan error, 1)
	stopAcker := sync.OnceValue(func() error {
		close(stop)
		return <-acked
	})
	defer stopAcker()
	n.wg.Add(1)
	go func(from uint64) { acked <- n.acker(conn, peer, from, ack, stop) }(seq)
	for {
		frame, err := ReadFrame(conn, n.maxFrame)
		if err != nil {
			tooLarge := errors.Is(err, ErrFrameTooLarge)
			// A reset seen first by a write of the acker reads as an
			// orderly close afterwards (the socket's error is reported
			// once): an EOF is the peer leaving unless the acker's
			// write was reset. (A write after the peer's orderly close
			// fails too, but with a broken pipe.)
			left := errors.Is(err, io.EOF) && !errors.Is(stopAcker(), syscall.ECONNRESET)
			// A peer that leaves before the run's start missed nothing
			// of it: it may come back (a restart) and link again before
			// round 0; if not, its deadlines find it absent.
			if current() && (tooLarge || ((left || n.refusesDials(peer)) && !n.beforeRun())) {
				ev := byzantine.Inbound{From: peer, Gone: true}
				if tooLarge {
					ev.Rejected = byzantine.RejectOversized
				}
				n.push(ev)
			}
			return
		}
		ev, ok := decodeFrame(peer, n.run, frame)
		ev.At = time.Now()
		if !ok {
			if current() {
				n.push(ev)
			}
			return
		}
		n.rmu[peer].Lock()
		next := n.recvd[peer].Load()
		switch {
		case seq > next:
			// A gap: a stream resumes where it was told to.
			n.rmu[peer].Unlock()
			if current() {
				n.push(byzantine.Inbound{From: peer, Gone: true, Rejected: byzantine.RejectMalformed, At: ev.At})
			}
			return
		case seq == next:
			if !n.push(ev) {
				n.rmu[peer].Unlock()
				return
			}
			n.recvd[peer].Store(next + 1)
		}
		n.rmu[peer].Unlock()
		seq++
		if ev.Marker || seq%ackEvery == 0 {
			select {
			case ack <- struct{}{}:
			default:
			}
		}
	}
}

// listenerGone records that peer, whose link had been up, refuses
// connections: nothing listens at its address any more, its process has
// ended. If its connection to this general has broken too, the peer is
// reported gone now, rather than waited for at every deadline.
func (n *Node) listenerGone(peer byzantine.ID) {
	n.mu.Lock()
	oc := n.out[peer]
	n.mu.Unlock()
	oc.mu.Lock()
	wasUp := oc.everUp
	if wasUp {
		oc.left = true // no use waiting for it at the end (Flush)
	}
	oc.mu.Unlock()
	if !wasUp || n.beforeRun() {
		// Absent from the start, or gone before the run (it may be
		// restarting): its deadlines find it out.
		return
	}
	n.mu.Lock()
	first := !n.refusing[peer]
	n.refusing[peer] = true
	_, linked := n.inbound[peer]
	n.mu.Unlock()
	if first && !linked {
		n.push(byzantine.Inbound{From: peer, Gone: true, At: time.Now()})
	}
}

// beforeRun reports whether the node runs on a schedule (see onSchedule)
// whose start has not come yet.
func (n *Node) beforeRun() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.round > 0 && time.Now().Before(n.start)
}

// refusesDials reports whether peer's link had been up and its address
// now refuses connections (see listenerGone).
func (n *Node) refusesDials(peer byzantine.ID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.refusing[peer]
}

// acker writes on conn the count of peer's frames taken, each time ack
// is signalled and the count has moved, until stop is closed or a write
// fails (the reader then finds conn broken); it returns the write's
// error.
func (n *Node) acker(conn net.Conn, peer byzantine.ID, last uint64, ack <-chan struct{}, stop <-chan struct{}) error {
	defer n.wg.Done()
	for {
		select {
		case <-stop:
			return nil
		case <-n.done:
			return nil
		case <-ack:
		}
		k := n.recvd[peer].Load()
		if k == last {
			continue
		}
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err := WriteFrame(conn, binary.BigEndian.AppendUint64([]byte{kindAck}, k)); err != nil {
			<-stop
			return err
		}
		last = k
	}
}

// decodeFrame turns a frame into an event; ok is false when the frame is
// garbage, or a marker of another run, and the peer must be cut off.
func decodeFrame(peer byzantine.ID, run byzantine.RunID, frame []byte) (byzantine.Inbound, bool) {
	bad := byzantine.Inbound{From: peer, Gone: true, Rejected: byzantine.RejectMalformed}
	if len(frame) == 0 {
		return bad, false
	}
	switch frame[0] {
	case kindMessage:
		var m byzantine.Message
		if err := m.UnmarshalBinary(frame[1:]); err != nil {
			return bad, false
		}
		m.From = peer // A2: the connection names the sender
		return byzantine.Inbound{From: peer, Message: &m}, true
	case kindMarker:
		if len(frame) != 3+len(run) || !bytes.Equal(frame[3:], run[:]) {
			return bad, false
		}
		return byzantine.Inbound{From: peer, Marker: true, EndOfRound: int(binary.BigEndian.Uint16(frame[1:]))}, true
	}
	return bad, false
}

func (n *Node) drop(conn net.Conn) {
	conn.Close()
	n.mu.Lock()
	delete(n.conns, conn)
	n.mu.Unlock()
}

// MaxQueued bounds the bytes held for one peer: frames not yet written,
// and frames written but not yet acknowledged (kept to be sent again if
// the link resets). When it is full, a general whose link to the peer is
// up waits for the peer's acknowledgements to make room, at most the
// write timeout; when the link is down, or no room came, the link is
// given up for the run (the peer takes no more frames: a fault).
const MaxQueued = 8 << 20

func (n *Node) write(ctx context.Context, to byzantine.ID, payload []byte) error {
	n.mu.Lock()
	oc := n.out[to]
	n.mu.Unlock()
	if oc == nil {
		return fmt.Errorf("%w: general %d has no general %d to send to", byzantine.ErrPeerAbsent, n.id, to)
	}
	var tick *time.Ticker
	var waited time.Time
	for {
		oc.mu.Lock()
		if err := oc.broken; err != nil {
			if oc.everUp && !oc.blamed && len(payload) > 0 && payload[0] == kindMessage {
				oc.lost = true // the peer was reachable: see Lost
			}
			oc.mu.Unlock()
			return fmt.Errorf("%w: general %d to %d: %w", byzantine.ErrPeerAbsent, n.id, to, err)
		}
		if oc.queued+len(payload) <= MaxQueued || oc.queued == 0 {
			oc.log = append(oc.log, payload)
			oc.queued += len(payload)
			oc.mu.Unlock()
			oc.wakeUp()
			return nil
		}
		if oc.conn == nil || (!waited.IsZero() && time.Since(waited) > writeTimeout) {
			// Refusing this frame alone would leave a hole in the
			// stream that the peer cannot see: the link is given up.
			// A peer whose link is up and that took nothing for the
			// write timeout is to blame; a link that is down lost them.
			err := fmt.Errorf("%d bytes held for it, none acknowledged for %v", oc.queued, writeTimeout)
			if oc.conn == nil {
				err = fmt.Errorf("no link and %d bytes held for it", oc.queued)
			}
			oc.end(err, oc.conn != nil)
			oc.mu.Unlock()
			return fmt.Errorf("%w: general %d to %d: %w", byzantine.ErrPeerAbsent, n.id, to, err)
		}
		oc.mu.Unlock()
		if tick == nil {
			tick = time.NewTicker(time.Millisecond)
			defer tick.Stop()
			waited = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.done:
			return ErrClosed
		case <-tick.C:
		}
	}
}

// Linked reports whether this node has a working link to peer p: a
// handshake succeeded and the connection has not broken since.
// RunGeneral uses it to tell an absent peer from a late one.
func (n *Node) Linked(p byzantine.ID) bool {
	return n.outLink(p, func(oc *outConn) bool { return oc.conn != nil && oc.broken == nil })
}

// outLink reports what f says of the link this node dials to peer p,
// under the link's lock; false when there is none.
func (n *Node) outLink(p byzantine.ID, f func(*outConn) bool) bool {
	n.mu.Lock()
	oc := n.out[p]
	n.mu.Unlock()
	if oc == nil {
		return false
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return f(oc)
}

// Down reports whether peer p does not take part in this run, as far as
// this node can tell: p has no connection to this node, open or in its
// handshake, and either the last dial to p was refused (nothing listens
// at its address: it crashed, or never came up) or p proved that it runs
// this run's start and sequence number with other terms (see OtherTerms;
// a hello of an earlier run, which anyone can replay, has another start
// or sequence number and proves nothing of the present). Nothing p sent in this run can then
// be waiting unread here (see byzantine.DownReporter). A loyal general of
// the run listens for the whole of it, so a peer that is down is a fault
// either way.
func (n *Node) Down(p byzantine.ID) bool {
	n.mu.Lock()
	oc := n.out[p]
	_, in := n.inbound[p]
	handshaking := slices.ContainsFunc(n.pending, func(pc *pendingConn) bool { return pc.proven && pc.peer == p })
	other := len(n.otherTerms[p]) > 0 && !slices.ContainsFunc(n.otherTerms[p], func(d TermDiff) bool { return d.Name == "start" || d.Name == "seq" })
	n.mu.Unlock()
	if oc != nil && !in && !handshaking && other {
		return true
	}
	if oc == nil || in || handshaking {
		return false
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.noListener
}

var _ byzantine.DownReporter = (*Node)(nil)

// Lost reports whether messages to peer p may not have reached it in
// time: the link broke, and p has not acknowledged a message whose
// round's deadline has passed (when the node runs on a schedule, as
// RunNode's; otherwise: the link is down now while messages wait to be
// sent again), or no link to p ever came up and a message for it waits
// past its round's deadline (on a schedule), or the link was given up
// with messages not acknowledged (the dialling ended, or too much was
// held while the link was down), or a Send was refused since a link had
// been up. A link given up for the peer's fault (it lied about where its
// stream resumes, or took nothing while its link was up) loses nothing:
// the peer is the fault. This general dials a broken or missing link
// again and resends what the peer did not acknowledge, so a message still
// not taken at its round's deadline is the peer's failure (it reset or
// refused the links, refused this general's connections while dialling
// its own, or withheld its acknowledgements): RunGeneral, through
// byzantine.LossReporter, counts the peer among the faults (unreachable,
// or absent when no link to it was ever up: see Reached), not the round
// as this general's lateness. A link that broke and came back in time
// lost nothing: the peer said where its stream resumed and got the rest.
// A peer reached at no time is a fault even when its own messages and
// markers arrive, on the connections it dialled: nothing this general
// sent it ever left.
func (n *Node) Lost(p byzantine.ID) bool {
	n.mu.Lock()
	oc, start, round := n.out[p], n.start, n.round
	n.mu.Unlock()
	if oc == nil {
		return false
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	switch {
	case oc.lost:
		return true
	case oc.broken != nil:
		return false
	case !oc.everUp:
		return round > 0 && oc.overdue(start, round, time.Now())
	case round > 0:
		return oc.breaks > 0 && oc.overdue(start, round, time.Now())
	default:
		return oc.conn == nil && hasMessage(oc.log)
	}
}

// Reached reports whether a link to peer p was up at some time in the
// run (a handshake with it succeeded). RunGeneral, through
// byzantine.ReachReporter, counts a peer Lost reports and that was never
// reached as absent.
func (n *Node) Reached(p byzantine.ID) bool {
	return n.outLink(p, func(oc *outConn) bool { return oc.everUp })
}

// Flush waits until every frame sent so far to a linked peer has been
// written, or ctx ends; a link that broke with frames not acknowledged,
// and is being dialled again, is waited for, unless the peer closed it
// in order (it left). Frames for a peer whose link never came up stay
// queued.
func (n *Node) Flush(ctx context.Context) error {
	n.mu.Lock()
	ocs := make([]*outConn, 0, len(n.out))
	for _, oc := range n.out {
		ocs = append(ocs, oc)
	}
	n.mu.Unlock()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for _, oc := range ocs {
		for {
			oc.mu.Lock()
			written := oc.sent >= oc.base+uint64(len(oc.log)) && !oc.busy
			redialling := oc.everUp && oc.redial && !oc.left
			idle := oc.broken != nil || (oc.conn != nil && written) || (oc.conn == nil && (!redialling || len(oc.log) == 0))
			oc.mu.Unlock()
			if idle {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	return nil
}

// Send sends msg to msg.To.
func (n *Node) Send(ctx context.Context, msg byzantine.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := msg.AppendBinary([]byte{kindMessage})
	if err != nil {
		return err
	}
	return n.write(ctx, msg.To, b)
}

// SendRaw sends payload as one frame to general to, unchecked. It exists to
// test how peers treat garbage.
func (n *Node) SendRaw(to byzantine.ID, payload []byte) error {
	return n.write(context.Background(), to, payload)
}

// EndRound announces to every peer that this general sent all of round r.
// The marker follows the round's messages on each link.
func (n *Node) EndRound(ctx context.Context, r int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	frame := binary.BigEndian.AppendUint16([]byte{kindMarker}, uint16(r))
	frame = append(frame, n.run[:]...)
	var errs []error
	for id := range n.keys {
		if byzantine.ID(id) == n.id {
			continue
		}
		if err := n.write(ctx, byzantine.ID(id), frame); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Recv returns the next inbound event. Call it once Start has returned.
func (n *Node) Recv(ctx context.Context) (byzantine.Inbound, error) {
	select {
	case ev := <-n.in:
		<-n.slots[ev.From]
		return ev, nil
	case <-ctx.Done():
		return byzantine.Inbound{}, ctx.Err()
	case <-n.done:
		return byzantine.Inbound{}, ErrClosed
	}
}

// Close stops the node, closes every connection and waits for its
// goroutines.
func (n *Node) Close() error {
	var err error
	n.closing.Do(func() {
		n.mu.Lock()
		close(n.done)
		for c := range n.conns {
			c.Close()
		}
		n.mu.Unlock()
		err = n.ln.Close()
		n.wg.Wait()
	})
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

var _ byzantine.Endpoint = (*Node)(nil)
var _ byzantine.LossReporter = (*Node)(nil)
var _ byzantine.ReachReporter = (*Node)(nil)
var _ io.Closer = (*Node)(nil)

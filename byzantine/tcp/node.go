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
	"time"

	"dlm/byzantine"
)

// Frame kinds.
const (
	kindHello   = 1 // handshake
	kindMessage = 2 // a byzantine.Message in wire format
	kindMarker  = 3 // end of round: 2-byte round number, 16-byte run id
)

const (
	helloMax         = 256
	handshakeTimeout = 5 * time.Second
	writeTimeout     = 5 * time.Second
	nonceSize        = 32
	// helloSize is the size of the dialer's first frame: kind, its id,
	// its nonce and its signature (see helloFrame).
	helloSize = 1 + 2 + nonceSize + ed25519.SignatureSize
	// acceptBackoffMin and acceptBackoffMax bound the pause after an
	// Accept error (for example EMFILE): the loop backs off, then accepts
	// again, instead of stopping.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// Limits that keep one peer, or a stranger, from starving the others.
const (
	// MaxHandshakes bounds the inbound connections that have not yet
	// authenticated. Above it, room is made by closing the oldest of them
	// whose dialer has not proven its identity (its first frame carries
	// its signature of the run, both ids and a fresh nonce), whatever its
	// age, or else the oldest proven one that has been in its handshake
	// longer than a handshake takes (HandshakeGrace); when there is none,
	// the new connection is closed. A general has at most one proven
	// connection in its handshake: a newer one replaces it. So strangers,
	// who hold no key, can never keep a slot from a general, and no
	// connection flood cuts a general's handshake in progress; a general
	// whose connection was closed before it proved itself dials again
	// until the run's last deadline.
	MaxHandshakes = 64
	// MaxHandshakesPerSource bounds the connections in their handshake
	// from one source address other than loopback (generals on one
	// machine all come from loopback); above it room is made among that
	// source's own connections, the same way.
	MaxHandshakesPerSource = MaxHandshakes / 4
	// HandshakeGrace is how long a handshake whose dialer has proven its
	// identity is spared when room must be made: a handshake takes
	// milliseconds. Connections whose dialer has not are never spared.
	HandshakeGrace = time.Second
	// PeerQueue is how many received events of one peer may wait for the
	// general to take them. A peer that sends faster is not read further
	// until the general catches up: it slows only its own connection,
	// never the others'.
	PeerQueue = 128
)

// ErrHandshake is wrapped when a peer fails to authenticate.
var ErrHandshake = errors.New("tcp: handshake failed")

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

	mu      sync.Mutex
	keys    []ed25519.PublicKey
	out     map[byzantine.ID]*outConn
	conns   map[net.Conn]struct{}
	inbound map[byzantine.ID]bool    // peers with an authenticated inbound connection
	pending []*pendingConn           // inbound connections still in their handshake, oldest first
	nonces  map[[nonceSize]byte]bool // dialer nonces proven in this run: a replayed hello is refused
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
}

// outConn is the link to one peer: the frames sent to it wait in queue
// until its writer, one goroutine per peer, writes them in order. A Send
// never waits for the network: a peer whose link is not up yet gets its
// frames when the link comes up (in time or not, the receiver's deadlines
// decide), and a peer that stops reading costs its own writer the write
// timeout, not every sender.
type outConn struct {
	mu     sync.Mutex
	conn   net.Conn // nil until the handshake succeeded
	queue  [][]byte
	queued int   // bytes in queue
	busy   bool  // the writer holds frames taken from queue
	broken error // the link failed, or the dialer gave up: frames are dropped
	// lost: a message frame was dropped after the link had been up (its
	// write failed, or it was queued when the link failed), though Send
	// had accepted it or the peer had been reachable. See Node.Lost.
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

// writer writes oc's frames to its connection in order until the node
// closes or the link fails.
func (n *Node) writer(oc *outConn) {
	defer n.wg.Done()
	var bw *bufio.Writer
	for {
		select {
		case <-n.done:
			return
		case <-oc.wake:
		}
		for {
			oc.mu.Lock()
			if oc.conn == nil || oc.broken != nil || len(oc.queue) == 0 {
				oc.mu.Unlock()
				break
			}
			batch, conn := oc.queue, oc.conn
			oc.queue, oc.queued, oc.busy = nil, 0, true
			oc.mu.Unlock()
			if bw == nil {
				bw = bufio.NewWriterSize(conn, 64<<10)
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
			if err != nil {
				// Nothing of batch is known to have left (the buffered
				// writer may hold any part of it), nor will the rest of
				// the queue: the messages among them are lost.
				oc.lost = oc.lost || hasMessage(batch) || hasMessage(oc.queue)
				oc.broken, oc.queue = err, nil
			}
			oc.mu.Unlock()
			if err != nil {
				conn.Close()
				return
			}
		}
	}
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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Node{
		id:       id,
		priv:     priv,
		ln:       ln,
		maxFrame: maxFrame,
		done:     make(chan struct{}),
		out:      make(map[byzantine.ID]*outConn),
		conns:    make(map[net.Conn]struct{}),
		inbound:  make(map[byzantine.ID]bool),
	}, nil
}

// Addr returns the address the node listens on.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// Refused returns how many inbound connections were refused: failed
// handshakes, connections above MaxHandshakes, and second connections of
// an already connected peer.
func (n *Node) Refused() int { return int(n.refused.Load()) }

// AcceptErrors returns how many Accept calls failed (the loop backed off
// and went on accepting).
func (n *Node) AcceptErrors() int { return int(n.acceptErrs.Load()) }

// Start accepts the cluster's connections and dials every other general of
// the cluster, retrying (failed dials and failed handshakes alike) until
// ctx ends; every handshake is bounded by ctx as well. It returns the
// errors of the peers it could not reach; the node still works with the
// others. run is the run id (see RunID): both sides of every handshake
// sign it, and it is carried by every end-of-round marker, so a general of
// another run (sharing the keys, or reached through a cluster entry
// pointing elsewhere) fails the handshake and is refused. RunNode does not
// wait for Start past the run's start time: it runs the rounds while the
// links still missing are being dialled, and uses each from when it is up.
func (n *Node) Start(ctx context.Context, c Cluster, run byzantine.RunID) error {
	if err := n.prepare(c, run); err != nil {
		return err
	}
	return n.dialAll(ctx, c)
}

// prepare checks the cluster, sets up the receive queues and starts
// accepting.
func (n *Node) prepare(c Cluster, run byzantine.RunID) error {
	keys, err := c.PublicKeys()
	if err != nil {
		return err
	}
	if int(n.id) >= len(keys) || !bytes.Equal(keys[n.id], n.priv.Public().(ed25519.PublicKey)) {
		return fmt.Errorf("%w: general %d: key does not match the cluster file", ErrCluster, n.id)
	}
	n.mu.Lock()
	n.keys = keys
	n.run = run
	n.nonces = make(map[[nonceSize]byte]bool)
	n.in = make(chan byzantine.Inbound, len(keys)*PeerQueue)
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

// dialAll dials every other general concurrently until each is connected
// or ctx ends: a peer that is down or stalls costs one wait, not one each.
func (n *Node) dialAll(ctx context.Context, c Cluster) error {
	errs := make([]error, len(c.Generals))
	var wg sync.WaitGroup
	for i, p := range c.Generals {
		if p.ID == n.id {
			continue
		}
		wg.Go(func() { errs[i] = n.dial(ctx, p.ID, p.Addr, n.keys[p.ID]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// redialPause is the pause between two attempts to reach a peer.
const redialPause = 20 * time.Millisecond

func (n *Node) dial(ctx context.Context, id byzantine.ID, addr string, key ed25519.PublicKey) error {
	var d net.Dialer
	var last, refused error // refused: the last failed handshake, which says more
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			err = n.clientHandshake(ctx, conn, id, key)
			if err != nil && ctx.Err() == nil {
				refused = fmt.Errorf("tcp: general %d to %d: %w", n.id, id, err)
			}
			if err == nil {
				n.mu.Lock()
				select {
				case <-n.done:
					n.mu.Unlock()
					conn.Close()
					return ErrClosed
				default:
				}
				oc := n.out[id]
				n.conns[conn] = struct{}{}
				n.mu.Unlock()
				oc.mu.Lock()
				oc.conn = conn
				oc.mu.Unlock()
				oc.wakeUp()
				return nil
			}
			conn.Close()
			err = fmt.Errorf("tcp: general %d to %d: %w", n.id, id, err)
		} else {
			err = fmt.Errorf("tcp: general %d cannot reach %d at %s: %w", n.id, id, addr, err)
		}
		last = err
		t := time.NewTimer(redialPause)
		select {
		case <-ctx.Done():
			t.Stop()
			if refused != nil {
				last = refused
			}
			n.mu.Lock()
			oc := n.out[id]
			n.mu.Unlock()
			oc.mu.Lock()
			if oc.conn == nil { // frames for it can no longer be sent
				oc.broken, oc.queue = last, nil
			}
			oc.mu.Unlock()
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
	b := []byte("dlm/byzantine/tcp/v3/" + role)
	b = append(b, run[:]...)
	b = append(b, nonce...)
	b = binary.BigEndian.AppendUint16(b, uint16(dialer))
	return binary.BigEndian.AppendUint16(b, uint16(listener))
}

// helloFrame returns the dialer's first frame: its id, a fresh nonce and
// its signature of (run, nonce, dialer, listener), which proves its
// identity before the listener spends a handshake slot on it.
func helloFrame(priv ed25519.PrivateKey, run byzantine.RunID, nonceD []byte, dialer, listener byzantine.ID) []byte {
	f := binary.BigEndian.AppendUint16([]byte{kindHello}, uint16(dialer))
	f = append(f, nonceD...)
	return append(f, ed25519.Sign(priv, transcript("hello", run, nonceD, dialer, listener))...)
}

// clientHandshake: hello(id, nonceD, sigH) -> reply(id, nonceL, sigL) ->
// sigD. It is bounded by ctx: by its deadline and by its end.
func (n *Node) clientHandshake(ctx context.Context, conn net.Conn, want byzantine.ID, key ed25519.PublicKey) error {
	conn.SetDeadline(handshakeDeadline(ctx))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if stop() {
			conn.SetDeadline(time.Time{})
		}
	}()
	nonceD := make([]byte, nonceSize)
	rand.Read(nonceD)
	if err := WriteFrame(conn, helloFrame(n.priv, n.run, nonceD, n.id, want)); err != nil {
		return err
	}
	reply, err := ReadFrame(conn, helloMax)
	if errors.Is(err, io.EOF) {
		// A general closes the connection on a hello it cannot verify.
		return fmt.Errorf("%w: general %d closed the connection on our hello: it refused our signature (another run id, cluster file or key) or closed it to make room", ErrHandshake, want)
	}
	if err != nil {
		return err
	}
	if len(reply) != 1+2+nonceSize+ed25519.SignatureSize || reply[0] != kindHello {
		return fmt.Errorf("%w: bad reply", ErrHandshake)
	}
	if got := byzantine.ID(binary.BigEndian.Uint16(reply[1:])); got != want {
		return fmt.Errorf("%w: peer says it is %d, want %d", ErrHandshake, got, want)
	}
	nonceL := reply[3 : 3+nonceSize]
	if !ed25519.Verify(key, transcript("accept", n.run, nonceD, n.id, want), reply[3+nonceSize:]) {
		return fmt.Errorf("%w: peer %d signature", ErrHandshake, want)
	}
	sig := ed25519.Sign(n.priv, transcript("dial", n.run, nonceL, n.id, want))
	return WriteFrame(conn, append([]byte{kindHello}, sig...))
}

// serverHandshake authenticates an inbound connection and returns the
// peer's id.
func (n *Node) serverHandshake(conn net.Conn) (byzantine.ID, error) {
	conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	hello, err := ReadFrame(conn, helloMax)
	if err != nil {
		return 0, err
	}
	if len(hello) != helloSize || hello[0] != kindHello {
		return 0, fmt.Errorf("%w: bad hello (%d bytes, want %d: kind, id, nonce, signature)", ErrHandshake, len(hello), helloSize)
	}
	peer := byzantine.ID(binary.BigEndian.Uint16(hello[1:]))
	nonceD := hello[3 : 3+nonceSize]
	n.mu.Lock()
	keys, run := n.keys, n.run
	n.mu.Unlock()
	if int(peer) >= len(keys) || peer == n.id {
		return 0, fmt.Errorf("%w: unknown general %d", ErrHandshake, peer)
	}
	if !ed25519.Verify(keys[peer], transcript("hello", run, nonceD, peer, n.id), hello[3+nonceSize:]) {
		return 0, fmt.Errorf("%w: hello claiming general %d is not signed by its key", ErrHandshake, peer)
	}
	if err := n.proven(conn, peer, nonceD); err != nil {
		return 0, err
	}
	nonceL := make([]byte, nonceSize)
	rand.Read(nonceL)
	sig := ed25519.Sign(n.priv, transcript("accept", run, nonceD, peer, n.id))
	reply := binary.BigEndian.AppendUint16([]byte{kindHello}, uint16(n.id))
	reply = append(append(reply, nonceL...), sig...)
	if err := WriteFrame(conn, reply); err != nil {
		return 0, err
	}
	proof, err := ReadFrame(conn, helloMax)
	if err != nil {
		return 0, err
	}
	if len(proof) != 1+ed25519.SignatureSize || proof[0] != kindHello ||
		!ed25519.Verify(keys[peer], transcript("dial", run, nonceL, peer, n.id), proof[1:]) {
		return 0, fmt.Errorf("%w: general %d did not prove its identity", ErrHandshake, peer)
	}
	return peer, nil
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
		n.mu.Lock()
		select {
		case <-n.done:
			n.mu.Unlock()
			conn.Close()
			return
		default:
		}
		pc := &pendingConn{conn: conn, src: sourceOf(conn), since: time.Now()}
		if !n.makeRoom(pc) {
			n.mu.Unlock()
			n.refused.Add(1)
			conn.Close()
			continue
		}
		n.pending = append(n.pending, pc)
		n.conns[conn] = struct{}{}
		n.wg.Add(1)
		n.mu.Unlock()
		go n.readLoop(conn)
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

// makeRoom closes a pending connection when pc would exceed
// MaxHandshakes, or MaxHandshakesPerSource for its source, and reports
// whether pc may join: the victim is the oldest (of the source, or of
// all) whose dialer has not proven its identity, whatever its age, or
// else the oldest proven one in its handshake for longer than
// HandshakeGrace. Called with n.mu held.
func (n *Node) makeRoom(pc *pendingConn) bool {
	now := time.Now()
	evict := func(same func(*pendingConn) bool) bool {
		victim := -1
		for i, p := range n.pending {
			if same(p) && !p.proven {
				victim = i
				break
			}
		}
		if victim < 0 {
			for i, p := range n.pending {
				if same(p) && now.Sub(p.since) > HandshakeGrace {
					victim = i
					break
				}
			}
		}
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
			if p.src == pc.src {
				count++
			}
		}
		if count >= MaxHandshakesPerSource && !evict(func(p *pendingConn) bool { return p.src == pc.src }) {
			return false
		}
	}
	if len(n.pending) >= MaxHandshakes && !evict(func(*pendingConn) bool { return true }) {
		return false
	}
	return true
}

// proven marks conn as proven to come from general peer, whose signed
// hello carried nonce, and closes peer's older connection still in its
// handshake, if any (a general dials one connection at a time, so the
// older one was given up). It fails when nonce was seen before in this
// run (a replayed hello) or conn was already closed to make room.
func (n *Node) proven(conn net.Conn, peer byzantine.ID, nonce []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := [nonceSize]byte(nonce)
	if n.nonces[key] {
		return fmt.Errorf("%w: general %d's hello was replayed (its nonce was seen before in this run)", ErrHandshake, peer)
	}
	n.nonces[key] = true
	i := slices.IndexFunc(n.pending, func(p *pendingConn) bool { return p.conn == conn })
	if i < 0 {
		return fmt.Errorf("%w: general %d's connection was closed to make room before its hello was read", ErrHandshake, peer)
	}
	pc := n.pending[i]
	n.pending = slices.DeleteFunc(n.pending, func(p *pendingConn) bool {
		if p != pc && p.proven && p.peer == peer {
			p.conn.Close() // its handshake fails and it is refused
			return true
		}
		return false
	})
	pc.proven, pc.peer = true, peer
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
// events until the peer leaves or misbehaves.
func (n *Node) readLoop(conn net.Conn) {
	defer n.wg.Done()
	defer n.drop(conn)
	peer, err := n.serverHandshake(conn)
	n.mu.Lock()
	if i := slices.IndexFunc(n.pending, func(p *pendingConn) bool { return p.conn == conn }); i >= 0 {
		n.pending = slices.Delete(n.pending, i, i+1)
	}
	n.mu.Unlock()
	if err != nil {
		n.refused.Add(1)
		return
	}
	// One authenticated connection per peer: a second one (a replayed or
	// mixed-up dial) is refused while the first lives.
	n.mu.Lock()
	dup := n.inbound[peer]
	n.inbound[peer] = true
	n.mu.Unlock()
	if dup {
		n.refused.Add(1)
		return
	}
	defer func() {
		n.mu.Lock()
		delete(n.inbound, peer)
		n.mu.Unlock()
	}()
	for {
		frame, err := ReadFrame(conn, n.maxFrame)
		if err != nil {
			ev := byzantine.Inbound{From: peer, Gone: true}
			if errors.Is(err, ErrFrameTooLarge) {
				ev.Rejected = byzantine.RejectOversized
			}
			n.push(ev)
			return
		}
		ev, ok := decodeFrame(peer, n.run, frame)
		ev.At = time.Now()
		if !n.push(ev) || !ok {
			return
		}
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

// MaxQueued bounds the bytes queued for one peer. A general whose link to
// the peer is up waits, when the queue is full, for its writer to drain
// it (at most the write timeout, after which the link is cut); frames for
// a peer whose link is not up are refused above it (the peer is absent).
const MaxQueued = 8 << 20

func (n *Node) write(ctx context.Context, to byzantine.ID, payload []byte) error {
	n.mu.Lock()
	oc := n.out[to]
	n.mu.Unlock()
	if oc == nil {
		return fmt.Errorf("%w: general %d has no general %d to send to", byzantine.ErrPeerAbsent, n.id, to)
	}
	var tick *time.Ticker
	for {
		oc.mu.Lock()
		if err := oc.broken; err != nil {
			if oc.conn != nil && len(payload) > 0 && payload[0] == kindMessage {
				oc.lost = true // the peer was reachable: see Lost
			}
			oc.mu.Unlock()
			return fmt.Errorf("%w: general %d to %d: %w", byzantine.ErrPeerAbsent, n.id, to, err)
		}
		if oc.queued+len(payload) <= MaxQueued || oc.queued == 0 {
			oc.queue = append(oc.queue, payload)
			oc.queued += len(payload)
			oc.mu.Unlock()
			oc.wakeUp()
			return nil
		}
		up := oc.conn != nil
		oc.mu.Unlock()
		if !up {
			return fmt.Errorf("%w: general %d to %d: no link yet and %d bytes queued", byzantine.ErrPeerAbsent, n.id, to, MaxQueued)
		}
		if tick == nil {
			tick = time.NewTicker(time.Millisecond)
			defer tick.Stop()
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

// Linked reports whether this node has a working link to peer p: its
// handshake succeeded and no write to it failed. RunGeneral uses it to
// tell an absent peer from a late one.
func (n *Node) Linked(p byzantine.ID) bool {
	n.mu.Lock()
	oc := n.out[p]
	n.mu.Unlock()
	if oc == nil {
		return false
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.conn != nil && oc.broken == nil
}

// Lost reports whether a message to peer p was dropped undelivered after
// the link to p had been up: Send queues a message and returns, and when
// the link fails before the writer got it through (a reset connection),
// the message and everything queued behind it are dropped; a Send after
// that is refused with byzantine.ErrPeerAbsent. A peer that is alive but
// lost a message from a loyal general breaks the synchrony of the run, so
// RunGeneral, through byzantine.LossReporter, then says the run is out of
// time. Frames for a peer whose link never came up are not counted: that
// peer is absent, a fault the run allows.
func (n *Node) Lost(p byzantine.ID) bool {
	n.mu.Lock()
	oc := n.out[p]
	n.mu.Unlock()
	if oc == nil {
		return false
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.lost
}

// Flush waits until every frame sent so far to a linked peer has been
// written, or ctx ends. Frames for a peer whose link is not up stay
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
			idle := oc.conn == nil || oc.broken != nil || (len(oc.queue) == 0 && !oc.busy)
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
var _ io.Closer = (*Node)(nil)

package tcp

import (
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
	// acceptBackoffMin and acceptBackoffMax bound the pause after an
	// Accept error (for example EMFILE): the loop backs off, then accepts
	// again, instead of stopping.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// Limits that keep one peer, or a stranger, from starving the others.
const (
	// MaxHandshakes bounds the inbound connections that have not yet
	// authenticated; above it the oldest of them is closed to make room,
	// so idle strangers cannot hold more than this many descriptors, and a
	// peer's handshake (a few milliseconds) still gets through unless that
	// many connections arrive during it.
	MaxHandshakes = 64
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
	inbound map[byzantine.ID]bool // peers with an authenticated inbound connection
	pending []net.Conn            // inbound connections still in their handshake, oldest first
}

type outConn struct {
	mu   sync.Mutex
	conn net.Conn
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
// the cluster, retrying until ctx ends. It returns the errors of the peers it
// could not reach; the node still works with the others. run is the run id
// (see RunID): both sides of every handshake sign it, and it is carried by
// every end-of-round marker, so a general of another run (sharing the
// keys, or reached through a cluster entry pointing elsewhere) fails the
// handshake and is refused.
func (n *Node) Start(ctx context.Context, c Cluster, run byzantine.RunID) error {
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
	n.in = make(chan byzantine.Inbound, len(keys)*PeerQueue)
	n.slots = make([]chan struct{}, len(keys))
	for i := range n.slots {
		n.slots[i] = make(chan struct{}, PeerQueue)
	}
	n.mu.Unlock()
	n.wg.Add(1)
	go n.acceptLoop()
	// Dial concurrently: a peer that is down costs one wait, not one each.
	errs := make([]error, len(c.Generals))
	var wg sync.WaitGroup
	for i, p := range c.Generals {
		if p.ID == n.id {
			continue
		}
		wg.Go(func() { errs[i] = n.dial(ctx, p.ID, p.Addr, keys[p.ID]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (n *Node) dial(ctx context.Context, id byzantine.ID, addr string, key ed25519.PublicKey) error {
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			err = n.clientHandshake(conn, id, key)
			if err == nil {
				n.mu.Lock()
				n.out[id] = &outConn{conn: conn}
				n.conns[conn] = struct{}{}
				n.mu.Unlock()
				return nil
			}
			conn.Close()
			return fmt.Errorf("tcp: general %d to %d: %w", n.id, id, err)
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("tcp: general %d cannot reach %d at %s: %w", n.id, id, addr, errors.Join(err, ctx.Err()))
		case <-n.done:
			t.Stop()
			return ErrClosed
		case <-t.C:
		}
	}
}

func transcript(role string, run byzantine.RunID, nonce []byte, dialer, listener byzantine.ID) []byte {
	b := []byte("dlm/byzantine/tcp/v2/" + role)
	b = append(b, run[:]...)
	b = append(b, nonce...)
	b = binary.BigEndian.AppendUint16(b, uint16(dialer))
	return binary.BigEndian.AppendUint16(b, uint16(listener))
}

// clientHandshake: hello(id, nonceD) -> reply(id, nonceL, sigL) -> sigD.
func (n *Node) clientHandshake(conn net.Conn, want byzantine.ID, key ed25519.PublicKey) error {
	conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	nonceD := make([]byte, nonceSize)
	rand.Read(nonceD)
	hello := binary.BigEndian.AppendUint16([]byte{kindHello}, uint16(n.id))
	if err := WriteFrame(conn, append(hello, nonceD...)); err != nil {
		return err
	}
	reply, err := ReadFrame(conn, helloMax)
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
	if len(hello) != 1+2+nonceSize || hello[0] != kindHello {
		return 0, fmt.Errorf("%w: bad hello", ErrHandshake)
	}
	peer := byzantine.ID(binary.BigEndian.Uint16(hello[1:]))
	n.mu.Lock()
	keys, run := n.keys, n.run
	n.mu.Unlock()
	if int(peer) >= len(keys) || peer == n.id {
		return 0, fmt.Errorf("%w: unknown general %d", ErrHandshake, peer)
	}
	nonceL := make([]byte, nonceSize)
	rand.Read(nonceL)
	sig := ed25519.Sign(n.priv, transcript("accept", run, hello[3:], peer, n.id))
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
		if len(n.pending) >= MaxHandshakes {
			n.pending[0].Close() // its handshake fails and it is refused
			n.pending = n.pending[1:]
		}
		n.pending = append(n.pending, conn)
		n.conns[conn] = struct{}{}
		n.wg.Add(1)
		n.mu.Unlock()
		go n.readLoop(conn)
	}
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
	if i := slices.Index(n.pending, conn); i >= 0 {
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

func (n *Node) write(to byzantine.ID, payload []byte) error {
	n.mu.Lock()
	oc := n.out[to]
	n.mu.Unlock()
	if oc == nil {
		return fmt.Errorf("%w: general %d has no connection to %d", byzantine.ErrPeerAbsent, n.id, to)
	}
	oc.mu.Lock()
	defer oc.mu.Unlock()
	oc.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := WriteFrame(oc.conn, payload); err != nil {
		// The link is broken: later sends fail at once, and a redial
		// (while the dialer runs) may replace it.
		n.mu.Lock()
		if n.out[to] == oc {
			delete(n.out, to)
		}
		n.mu.Unlock()
		oc.conn.Close()
		return fmt.Errorf("%w: general %d to %d: %w", byzantine.ErrPeerAbsent, n.id, to, err)
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
	return n.write(msg.To, b)
}

// SendRaw sends payload as one frame to general to, unchecked. It exists to
// test how peers treat garbage.
func (n *Node) SendRaw(to byzantine.ID, payload []byte) error { return n.write(to, payload) }

// EndRound announces to every peer that this general sent all of round r.
func (n *Node) EndRound(ctx context.Context, r int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.mu.Lock()
	ids := make([]byzantine.ID, 0, len(n.out))
	for id := range n.out {
		ids = append(ids, id)
	}
	n.mu.Unlock()
	frame := binary.BigEndian.AppendUint16([]byte{kindMarker}, uint16(r))
	frame = append(frame, n.run[:]...)
	var errs []error
	for _, id := range ids {
		if err := n.write(id, frame); err != nil {
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
var _ io.Closer = (*Node)(nil)

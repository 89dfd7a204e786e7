package tcp

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"dlm/byzantine"
)

// linkedPair starts two nodes of a two-general cluster and links them;
// their links are redialled until ctx ends.
func linkedPair(ctx context.Context, t testing.TB) []*Node {
	t.Helper()
	keys := newKeys(t, 2)
	nodes := []*Node{listenAt(t, "127.0.0.1:0", 0, keys[0]), listenAt(t, "127.0.0.1:0", 1, keys[1])}
	c := clusterOf([]string{nodes[0].Addr(), nodes[1].Addr()}, keys)
	terms := Terms{Start: time.Now(), Seq: 1}
	done := make(chan error, 2)
	for _, n := range nodes {
		go func() { done <- n.Start(ctx, c, terms) }()
	}
	for range nodes {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// TestResetLinkLosesNoFrame: general 0 sends general 1 far more messages
// than 1 takes before the link is reset: 1's queue is full, its socket
// buffer and 0's hold what the kernels accepted, and the reset (linger 0)
// discards 0's. General 1 must still
// receive every message once, in order, and never see 0 gone: 0 redials
// and resends from the last frame 1 took, which 1 names in the handshake
// (regression: a link that broke after its handshake was not redialled,
// the frames the kernel had accepted were lost unseen, and the peer was
// reported gone, a fault, for one transient reset).
func TestResetLinkLosesNoFrame(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	nodes := linkedPair(ctx, t)
	const total = 100_000 // about 10 MB: more than the kernel buffers hold
	for i := range total {
		msg := byzantine.Message{From: 0, To: 1, Round: 0, Order: byzantine.Attack, Seq: uint64(i), Path: []byzantine.ID{0}}
		if err := nodes[0].Send(ctx, msg); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	// General 1 takes nothing until its queue of general 0's events is
	// full: the rest waits in the kernels' buffers and 0's writer.
	waitFor(t, 20*time.Second, func() bool { return len(nodes[1].slots[0]) == PeerQueue })
	nodes[0].ResetLinks()
	if err := nodes[0].EndRound(ctx, 0); err != nil {
		t.Fatalf("EndRound after the reset: %v, want it queued for the redialled link", err)
	}
	for i := 0; i <= total; i++ {
		ev, err := nodes[1].Recv(ctx)
		if err != nil {
			t.Fatalf("general 1 received %d of %d messages, then: %v", i, total, err)
		}
		switch {
		case ev.Gone:
			t.Fatalf("general 1 sees general 0 gone after %d of %d messages (rejected %q): a transient reset made a loyal peer a fault", i, total, ev.Rejected)
		case i == total:
			if !ev.Marker || ev.EndOfRound != 0 {
				t.Fatalf("after every message, general 1 got %+v, want the marker of round 0", ev)
			}
		case ev.Message == nil || ev.Message.Seq != uint64(i):
			t.Fatalf("event %d of general 1 is %+v, want message %d (each once, in order)", i, ev, i)
		}
	}
	if nodes[0].Lost(1) {
		t.Errorf("Lost(1) = true after every frame was delivered")
	}
}

// tamperProxy forwards connections from its address to target. It keeps
// the first frame each client sends (a dialer's hello) and, while
// tamper is set, adds one to the resume point of the first answer it
// forwards back, then clears tamper: a man in the middle who would make
// the dialer skip a frame.
type tamperProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	hellos [][]byte
	tamper bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newTamperProxy(t *testing.T, target string) *tamperProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tamperProxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Go(func() {
				hello, err := ReadFrame(c, helloMax)
				if err != nil || WriteFrame(s, hello) != nil {
					return
				}
				p.mu.Lock()
				p.hellos = append(p.hellos, hello)
				p.mu.Unlock()
				io.Copy(s, c)
			})
			p.wg.Go(func() {
				reply, err := ReadFrame(s, helloMax)
				if err != nil {
					return
				}
				p.mu.Lock()
				if p.tamper && len(reply) == replySize {
					k := binary.BigEndian.Uint64(reply[3+nonceSize:])
					binary.BigEndian.PutUint64(reply[3+nonceSize:], k+1)
					p.tamper = false
				}
				p.mu.Unlock()
				if WriteFrame(c, reply) != nil {
					return
				}
				io.Copy(c, s)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// TestResumeCannotBeForged: general 1 reaches general 0 through a man in
// the middle. Replaying general 1's hello on a new connection is refused
// and leaves its link as it was; after a reset, an answer whose resume
// point was changed (so that 1 would skip a frame) fails the handshake,
// and 1 dials again and resumes where 0 really stopped: every message
// arrives once, in order.
func TestResumeCannotBeForged(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	keys := newKeys(t, 2)
	n0, n1 := listenAt(t, "127.0.0.1:0", 0, keys[0]), listenAt(t, "127.0.0.1:0", 1, keys[1])
	proxy := newTamperProxy(t, n0.Addr())
	c0 := clusterOf([]string{n0.Addr(), n1.Addr()}, keys)
	c1 := clusterOf([]string{proxy.ln.Addr().String(), n1.Addr()}, keys)
	terms := Terms{Start: time.Now(), Seq: 1}
	run := RunID(c0, terms) // general 1 reaches 0 through the proxy, in the same run
	done := make(chan error, 2)
	go func() { done <- n0.startRun(ctx, c0, run, terms) }()
	go func() { done <- n1.startRun(ctx, c1, run, terms) }()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	inbound := func() net.Conn {
		n0.mu.Lock()
		defer n0.mu.Unlock()
		return n0.inbound[1]
	}
	waitFor(t, 10*time.Second, func() bool { return inbound() != nil })
	linked := inbound()
	proxy.mu.Lock()
	hello := proxy.hellos[0]
	proxy.mu.Unlock()

	// A replayed hello.
	before := n0.Refused()
	replay, err := net.Dial("tcp", n0.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	if err := WriteFrame(replay, hello); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return n0.Refused() > before })
	if n0.Refused() == before || inbound() != linked {
		t.Fatalf("a replay of general 1's hello was not refused, or took over its link (refused %d -> %d)", before, n0.Refused())
	}

	// A forged resume point.
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if err := n1.Send(ctx, byzantine.Message{From: 1, To: 0, Seq: uint64(i), Path: []byzantine.ID{0}, Order: byzantine.Attack}); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
	}
	send(0, 10)
	proxy.mu.Lock()
	proxy.tamper = true
	proxy.mu.Unlock()
	n1.ResetLinks()
	send(10, 20)
	for i := range 20 {
		ev, err := n0.Recv(ctx)
		if err != nil {
			t.Fatalf("general 0 received %d of 20 messages, then: %v", i, err)
		}
		if ev.Message == nil || ev.Message.Seq != uint64(i) {
			t.Fatalf("event %d of general 0 is %+v, want message %d (each once, in order)", i, ev, i)
		}
	}
	proxy.mu.Lock()
	tampered := !proxy.tamper
	proxy.mu.Unlock()
	if !tampered {
		t.Errorf("the proxy never saw an answer to tamper with")
	}
}

// TestLyingResumeIsTheLiarsFault: general 1 is a traitor. It takes
// general 0's first connection and reads its frames without a word, then
// resets it; when 0 dials again, 1 answers (with a valid signature) that
// it took more frames than 0 ever sent. The link is given up: 0's next
// send to 1 is refused as to an absent peer (a fault 0 reports), and
// Lost must not say that a message of 0 was lost, which would make 0,
// loyal, say it ran out of time for a traitor's lie (regression: giving
// up a link that had been up counted its messages as lost, whoever was to
// blame).
func TestLyingResumeIsTheLiarsFault(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	keys := newKeys(t, 2)
	n0 := listenAt(t, "127.0.0.1:0", 0, keys[0])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := clusterOf([]string{n0.Addr(), ln.Addr().String()}, keys)
	terms := Terms{Start: time.Now(), Seq: 1}
	run := RunID(c, terms)
	got := make(chan int, 1) // frames the traitor read on its first connection
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for i := 0; ; i++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
			hello, err := ReadFrame(conn, helloMax)
			if err != nil || len(hello) != helloSize {
				return
			}
			resume := uint64(0)
			if i > 0 {
				resume = 1 << 20 // more than general 0 ever sent
			}
			nonceL := make([]byte, nonceSize)
			if WriteFrame(conn, replyFrame(keys[1], run, hello[3:3+nonceSize], nonceL, 0, 1, resume)) != nil {
				return
			}
			if _, err := ReadFrame(conn, helloMax); err != nil || i > 0 {
				return
			}
			k := 0
			for k < 10 {
				if _, err := ReadFrame(conn, DefaultMaxFrame); err != nil {
					break
				}
				k++
			}
			got <- k
			resetConn(conn)
		}
	})
	if err := n0.Start(ctx, c, terms); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := n0.Send(ctx, byzantine.Message{From: 0, To: 1, Seq: uint64(i), Path: []byzantine.ID{0}, Order: byzantine.Attack}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if k := <-got; k != 10 {
		t.Fatalf("the traitor read %d frames, want 10", k)
	}
	var sendErr error
	waitFor(t, 20*time.Second, func() bool {
		sendErr = n0.Send(ctx, byzantine.Message{From: 0, To: 1, Round: 1, Path: []byzantine.ID{0}, Order: byzantine.Attack})
		return sendErr != nil
	})
	if !errors.Is(sendErr, byzantine.ErrPeerAbsent) {
		t.Fatalf("send to a peer that lied about its stream: %v, want byzantine.ErrPeerAbsent", sendErr)
	}
	if n0.Lost(1) {
		t.Errorf("Lost(1) = true: a traitor's lie about where its stream resumes makes loyal general 0 say it ran out of time")
	}
}

// TestAckDuringWriteKeepsTheStream: the peer may acknowledge frames of a
// batch the writer is still writing (it reads them as the buffer is
// flushed). The link's next frame to write must stay within what is
// held, and the batch's end must not move it back (regression: the
// acknowledgement moved the start of what is held past the next frame to
// write, and the writer's next batch began before it: a slice out of
// range).
func TestAckDuringWriteKeepsTheStream(t *testing.T) {
	oc := &outConn{}
	for i := range 20 {
		oc.log = append(oc.log, []byte{kindMarker, 0, byte(i)})
		oc.queued += 3
	}
	end := oc.sent + uint64(len(oc.log)) // the writer took every frame
	oc.trim(15)                          // the peer took 15 of them meanwhile
	if oc.sent < oc.base {
		t.Fatalf("after an acknowledgement of 15: next frame to write %d, first held %d: the next batch would begin before what is held", oc.sent, oc.base)
	}
	oc.sent = max(oc.sent, end) // the writer's batch is written
	if got, want := oc.sent, uint64(20); got != want {
		t.Errorf("next frame to write = %d, want %d", got, want)
	}
	if got, want := oc.queued, 5*3; got != want {
		t.Errorf("bytes held = %d, want %d", got, want)
	}
}

// TestCrashedPeerIsGone: general 1 dies with general 0's frames unread in
// its socket, so its kernel resets the connections rather than closing
// them in order. A reset alone does not mean a peer left (its link is
// dialled again), but a peer whose address then refuses connections has:
// general 0 must report it gone at once, not wait for it at every
// deadline (regression: once resets no longer meant gone, a crashed
// general cost every round its timeout, and a general whose last frames
// to it were unacknowledged waited a round timeout more before it could
// close).
func TestCrashedPeerIsGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	nodes := linkedPair(ctx, t)
	for i := range 1000 {
		if err := nodes[0].Send(ctx, byzantine.Message{From: 0, To: 1, Seq: uint64(i), Path: []byzantine.ID{0}, Order: byzantine.Attack}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, func() bool { return len(nodes[1].slots[0]) == PeerQueue })
	nodes[1].Close()
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	ev, err := nodes[0].Recv(rctx)
	if err != nil || !ev.Gone || ev.From != 1 {
		t.Fatalf("general 0 after general 1 died: %+v, %v; want general 1 gone", ev, err)
	}
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	defer fcancel()
	began := time.Now()
	if err := nodes[0].Flush(fctx); err != nil {
		t.Errorf("Flush waited %v for a general that died: %v", time.Since(began), err)
	}
}

// TestAckAheadOfTheWriter: a peer that acknowledges frames the writer has
// not written yet (only a traitor can: they were never sent) leaves the
// stream in a state the writer can read: the next frame to write is never
// before the first one kept. Before the acknowledgement advanced it, the
// writer computed a negative offset into its log and panicked ("slice
// bounds out of range").
func TestAckAheadOfTheWriter(t *testing.T) {
	oc := &outConn{}
	for range 3 {
		oc.log = append(oc.log, []byte{kindMarker, 0, 0})
		oc.queued += 3
	}
	oc.trim(3) // all three acknowledged, none written
	if oc.sent < oc.base || oc.queued != 0 || len(oc.log) != 0 {
		t.Fatalf("after an acknowledgement ahead of the writer: sent %d, base %d, queued %d, log %d; want sent >= base and nothing kept", oc.sent, oc.base, oc.queued, len(oc.log))
	}
	oc.log = append(oc.log, []byte{kindMarker, 0, 0})
	if batch := oc.log[oc.sent-oc.base:]; len(batch) != 1 {
		t.Fatalf("the next batch holds %d frames, want the one queued after", len(batch))
	}
}

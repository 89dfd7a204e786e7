package tcp

import (
	"encoding/binary"
	"net"
	"os"
	"testing"
	"time"
)

// TestAttack3AckAheadOfTheWriter: attack3 finding 3 (the mechanism). A
// peer acknowledges frames the general has queued for it but its writer
// has not yet written (a traitor guesses them: a loyal general's frames
// per round are known to all). acks accepts any count up to what is
// queued and moves base past sent; the writer then slices its log at
// sent-base, which wraps around, and panics, killing the loyal general's
// process.
func TestAttack3AckAheadOfTheWriter(t *testing.T) {
	if os.Getenv("ATTACK3") == "" {
		t.Skip("attack3 finding 3")
	}
	n := &Node{done: make(chan struct{}), conns: make(map[net.Conn]struct{})}
	defer close(n.done)
	ours, peer := net.Pipe()
	defer ours.Close()
	defer peer.Close()
	oc := &outConn{wake: make(chan struct{}, 1), conn: ours, gen: 1, down: make(chan struct{})}
	for range 3 {
		oc.log = append(oc.log, []byte{kindMarker, 0, 0}) // queued, not yet written
		oc.queued += 3
	}
	// The peer acknowledges all 3 queued frames before the writer ran.
	go WriteFrame(peer, binary.BigEndian.AppendUint64([]byte{kindAck}, 3))
	n.wg.Add(1)
	go n.acks(oc, ours, 1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		oc.mu.Lock()
		base := oc.base
		oc.mu.Unlock()
		if base == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the acknowledgement was not taken")
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("after the ack: base %d sent %d log %d", oc.base, oc.sent, len(oc.log))
	panicked := make(chan any, 1)
	n.wg.Add(1)
	go func() {
		defer func() { panicked <- recover() }()
		n.writer(oc)
	}()
	go func() { // drain whatever the writer writes
		buf := make([]byte, 1024)
		for {
			if _, err := peer.Read(buf); err != nil {
				return
			}
		}
	}()
	oc.wakeUp()
	select {
	case p := <-panicked:
		if p != nil {
			t.Fatalf("the writer panicked: %v", p)
		}
	case <-time.After(2 * time.Second):
		t.Log("the writer did not panic")
	}
}

package tcp

import (
	"context"
	"crypto/ed25519"
	"net"
	"sync"
	"time"

	"dlm/byzantine"
)

// EpochListener is a general's listening socket kept for the life of a
// team that runs in epochs (see RunInteractiveEpochOn): each epoch's node
// takes the connections it accepts, and between two epochs the port stays
// bound, so no other process of the machine can take it and keep the
// general out of the next epoch. A connection that comes between two
// epochs waits for the next one's node (its run id then decides whether
// its handshake holds). It is safe for concurrent use; one epoch at a time
// takes its connections.
type EpochListener struct {
	ln      net.Listener
	conns   chan net.Conn
	closing chan struct{} // closed by Close
	once    sync.Once
	done    chan struct{} // closed when accepting stopped
	err     error         // why, set before done is closed
}

// ListenEpochs binds addr (the general's cluster address) for the epochs
// to come. Close it when the team's run is over.
func ListenEpochs(addr string) (*EpochListener, error) {
	lc := net.ListenConfig{Control: listenControl}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &EpochListener{ln: ln, conns: make(chan net.Conn), closing: make(chan struct{}), done: make(chan struct{})}
	go l.accept()
	return l, nil
}

// accept hands every accepted connection to the epoch that takes it,
// until the socket is closed.
func (l *EpochListener) accept() {
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			l.err = err
			close(l.done)
			return
		}
		select {
		case l.conns <- conn:
		case <-l.closing:
			conn.Close() // Accept fails next: the socket is closed
		}
	}
}

// Addr returns the address it listens on.
func (l *EpochListener) Addr() string { return l.ln.Addr().String() }

// Close unbinds the port; an epoch running on it stops accepting.
func (l *EpochListener) Close() error {
	var err error
	l.once.Do(func() {
		err = l.ln.Close()
		close(l.closing)
	})
	<-l.done
	return err
}

// epoch returns the listener one epoch's node accepts on: its Close ends
// that epoch's accepting, not the socket.
func (l *EpochListener) epoch() net.Listener {
	return &epochView{l: l, closed: make(chan struct{})}
}

// epochView is one epoch's view of an EpochListener.
type epochView struct {
	l      *EpochListener
	closed chan struct{}
	once   sync.Once
}

func (v *epochView) Accept() (net.Conn, error) {
	select {
	case conn := <-v.l.conns:
		return conn, nil
	case <-v.closed:
		return nil, net.ErrClosed
	case <-v.l.done:
		return nil, v.l.err
	}
}

func (v *epochView) Close() error {
	v.once.Do(func() { close(v.closed) })
	return nil
}

func (v *epochView) Addr() net.Addr { return v.l.ln.Addr() }

// RunInteractiveEpochOn is RunInteractiveEpoch on a listener kept across
// the epochs (see ListenEpochs): the general's port is never free between
// two epochs.
func RunInteractiveEpochOn(ctx context.Context, l *EpochListener, c Cluster, id byzantine.ID, priv ed25519.PrivateKey, ic byzantine.InteractiveConfig, use string, start time.Time, value byzantine.Order) (byzantine.InteractiveGeneralResult, map[byzantine.ID][]TermDiff, error) {
	return runInteractiveEpoch(ctx, func() (*Node, error) { return newNode(l.epoch(), id, priv, 0), nil }, c, id, priv, ic, use, start, value)
}

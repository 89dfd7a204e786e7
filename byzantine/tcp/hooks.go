package tcp

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"dlm/byzantine"
)

// This file holds what tests need to play a traitor that controls timing
// and links over real connections (package tcptest builds its adversary
// on it). None of it is needed to run a general.

// MarkerFrame returns the end-of-round marker of round r of run, as
// EndRound sends it to every peer. With SendRaw a traitor sends it to the
// peers it chooses.
func MarkerFrame(run byzantine.RunID, r int) []byte {
	f := binary.BigEndian.AppendUint16([]byte{kindMarker}, uint16(r))
	return append(f, run[:]...)
}

// ResetLinks cuts every connection of the node with a reset rather than
// an orderly close, as a crashing machine or a hostile peer does; the node
// stays open. It exists to test how peers treat reset links.
func (n *Node) ResetLinks() {
	n.mu.Lock()
	conns := make([]net.Conn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
}

// AnswerHandshake plays the listening side of a handshake on conn as
// general id of run, with its key priv: it reads the dialer's hello
// (without checking its signature), answers it as a general that took
// none of the dialer's frames, and reads (without checking) the dialer's
// proof; it returns the id the dialer claimed. The dialer then holds an
// authenticated link to id. It exists to test peers that authenticate
// and then misbehave (one that stops reading).
func AnswerHandshake(conn net.Conn, id byzantine.ID, priv ed25519.PrivateKey, run byzantine.RunID) (byzantine.ID, error) {
	conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer conn.SetDeadline(time.Time{})
	hello, err := ReadFrame(conn, helloMax)
	if err != nil {
		return 0, err
	}
	if len(hello) != helloSize || hello[0] != kindHello {
		return 0, fmt.Errorf("%w: bad hello", ErrHandshake)
	}
	dialer := byzantine.ID(binary.BigEndian.Uint16(hello[1:]))
	nonceL := make([]byte, nonceSize)
	rand.Read(nonceL)
	if err := WriteFrame(conn, replyFrame(priv, run, hello[3:3+nonceSize], nonceL, dialer, id, 0)); err != nil {
		return 0, err
	}
	if _, err := ReadFrame(conn, helloMax); err != nil {
		return 0, err
	}
	return dialer, nil
}

// RunOver runs general g of cfg over ep, which is node itself or an
// Endpoint wrapping it (a traitor that controls its timing and links),
// the way RunNode runs a loyal general: it connects node to the cluster
// c, starts round 0 when every link is up or at start, whichever is
// first, keeps dialling the missing links until the run's last deadline,
// and writes what is queued before it returns. cfg.RunID must be
// RunID(c, TermsOf(cfg, start of the run)), and g made with that cfg (a
// traitor whose clock runs ahead passes an earlier start, with the run's
// RunID).
func RunOver(ctx context.Context, node *Node, g *byzantine.General, ep byzantine.Endpoint, c Cluster, cfg byzantine.Config, start time.Time, trace *[]byzantine.TraceEvent) (byzantine.GeneralResult, error) {
	return runOver(ctx, node, g, ep, c, cfg, start, trace)
}

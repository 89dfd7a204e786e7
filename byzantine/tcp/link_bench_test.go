package tcp

import (
	"context"
	"testing"
	"time"

	"dlm/byzantine"
)

// BenchmarkLink measures one link's throughput: general 0 sends b.N
// relays to general 1 over loopback, which takes them all (with the
// stream numbered and acknowledged, and every frame held until then).
//
//	go test ./byzantine/tcp -run '^$' -bench Link -benchtime 200000x
func BenchmarkLink(b *testing.B) {
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	nodes := linkedPair(ctx, b)
	msg := byzantine.Message{From: 0, To: 1, Round: 2, Order: byzantine.Attack, Path: []byzantine.ID{0, 2}}
	recvd := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range b.N {
			if _, err := nodes[1].Recv(ctx); err != nil {
				recvd <- err
				return
			}
		}
		recvd <- nil
	}()
	for range b.N {
		if err := nodes[0].Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-recvd; err != nil {
		b.Fatal(err)
	}
}

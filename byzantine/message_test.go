package byzantine_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"dlm/byzantine"
)

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }

func TestMessageWireRoundTrip(t *testing.T) {
	tests := []byzantine.Message{
		{From: 0, To: 1, Round: 0, Seq: 1, Order: byzantine.Attack, Path: []byzantine.ID{0}},
		{From: 3, To: 200, Round: 2, Seq: 1 << 40, Order: "hold the ridge", Path: []byzantine.ID{0, 7, 3}, Sigs: [][]byte{make([]byte, 64), {1, 2}, nil}},
	}
	for _, m := range tests {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != m.EncodedSize() {
			t.Errorf("encoded %d bytes, EncodedSize says %d", len(b), m.EncodedSize())
		}
		var got byzantine.Message
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		for i := range m.Sigs {
			if m.Sigs[i] == nil {
				m.Sigs[i] = []byte{}
			}
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip: got %+v, want %+v", got, m)
		}
		for cut := range len(b) {
			if err := new(byzantine.Message).UnmarshalBinary(b[:cut]); !errors.Is(err, byzantine.ErrMalformedMessage) {
				t.Fatalf("truncated to %d bytes: err = %v, want ErrMalformedMessage", cut, err)
			}
		}
	}
}

// TestMessageGarbage: decoding arbitrary bytes never panics.
func TestMessageGarbage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		b := make([]byte, r.IntN(80))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		if len(b) > 0 && r.IntN(2) == 0 {
			b[0] = 1 // a plausible version
		}
		var m byzantine.Message
		_ = m.UnmarshalBinary(b)
	}
}

func TestChain(t *testing.T) {
	m := byzantine.Message{Order: byzantine.Attack, Path: []byzantine.ID{0, 2, 3}}
	if got, want := m.Chain(), "attack:0:2:3"; got != want {
		t.Errorf("Chain() = %q, want %q", got, want)
	}
}

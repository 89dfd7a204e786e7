package byzantine_test

import (
	"fmt"
	"testing"

	"dlm/byzantine"
)

// floodOrders is how many distinct orders the flooding traitors of these
// tests send. Before the bounds 2,000 made the loyal generals of
// SM(2), n=10, send 114,064 messages instead of 81; 500 keep the test fast
// under -race and still fail without the bounds.
const floodOrders = 500

// floodCommander is a traitorous SM commander that sends the honest order
// to every lieutenant, then n distinct orders, each signed, to lieutenant
// 1 only. The signed orders are also kept in *signed for an accomplice.
func floodCommander(n int, signed *[]byzantine.Message) byzantine.TraitorFunc {
	return func(round int, honest []byzantine.Message, s byzantine.Signer) []byzantine.Message {
		if round != 0 || len(honest) == 0 {
			return honest
		}
		out := honest
		for i := range n {
			m := honest[0]
			m.To, m.Order = 1, byzantine.Order(fmt.Sprintf("v%d", i))
			m, err := s.Sign(m)
			if err != nil {
				panic(err)
			}
			out = append(out, m)
			if signed != nil {
				*signed = append(*signed, m)
			}
		}
		return out
	}
}

// floodRelay is a traitorous lieutenant that, in round 1, relays every
// order of *signed (signed by its accomplice, the commander) to lieutenant
// 1 under its own signature.
func floodRelay(signed *[]byzantine.Message) byzantine.TraitorFunc {
	return func(round int, honest []byzantine.Message, s byzantine.Signer) []byzantine.Message {
		if round != 1 {
			return honest
		}
		out := honest
		for _, c := range *signed {
			m := c
			m.To, m.Round = 1, 1
			m.Path = []byzantine.ID{0, s.ID()}
			m.Sigs = append([][]byte{c.Sigs[0]}, nil)
			m, err := s.Sign(m)
			if err != nil {
				panic(err)
			}
			out = append(out, m)
		}
		return out
	}
}

// floodForged is a traitorous lieutenant that, in round 1, sends every
// other lieutenant n chains o:0:self of distinct orders, each with a
// made-up commander signature and its own valid one.
func floodForged(n int) byzantine.TraitorFunc {
	return func(round int, honest []byzantine.Message, s byzantine.Signer) []byzantine.Message {
		if round != 1 || len(honest) == 0 {
			return honest
		}
		out := honest
		for _, h := range honest {
			for i := range n / len(honest) {
				m := h
				m.Order = byzantine.Order(fmt.Sprintf("f%d", i))
				m.Sigs = [][]byte{make([]byte, 64), nil}
				m, err := s.Sign(m)
				if err != nil {
					panic(err)
				}
				out = append(out, m)
			}
		}
		return out
	}
}

// loyalWork sums what the loyal generals of res did.
func loyalWork(res *byzantine.Result) (sent, verified, made int) {
	for _, g := range res.Generals {
		if g.Loyal {
			sent += g.Stats.Sent
			verified += g.Stats.SignaturesVerified
			made += g.Stats.SignaturesMade
		}
	}
	return sent, verified, made
}

// TestSMFloodBounded: a traitor's volume does not become the loyal
// generals' work. SM(2) with n=10: a traitorous commander sends
// attack to all, then floodOrders distinct signed orders to lieutenant 1;
// with an accomplice lieutenant, the accomplice relays them all to
// lieutenant 1 too; or a traitorous lieutenant sends everyone chains with
// made-up commander signatures. Loyal generals agree, and what they send, sign and
// verify stays within twice what the same generals do in the loyal run
// (the bound: each loyal lieutenant relays at most two orders, and takes
// one order from the commander, and at most two messages from any
// lieutenant are examined). Before the fix, with 2,000 orders, the loyal
// generals sent 114,064 messages and made 32,072 verifications; forged
// chains cost 2,072 verifications.
func TestSMFloodBounded(t *testing.T) {
	const n, m = 10, 2
	base := config(byzantine.SM, n, m)
	loyalRes := mustRun(t, base)
	lSent, lVer, lMade := loyalWork(loyalRes)
	tests := []struct {
		name   string
		faulty func() []byzantine.Traitor
	}{
		{"commander floods lieutenant 1", func() []byzantine.Traitor {
			return []byzantine.Traitor{{ID: 0, Strategy: byzantine.Custom, Func: floodCommander(floodOrders, nil)}}
		}},
		{"commander and lieutenant 2 flood lieutenant 1", func() []byzantine.Traitor {
			var signed []byzantine.Message
			return []byzantine.Traitor{
				{ID: 0, Strategy: byzantine.Custom, Func: floodCommander(floodOrders, &signed)},
				{ID: 2, Strategy: byzantine.Custom, Func: floodRelay(&signed)},
			}
		}},
		// Each chain carries a made-up commander signature: before the
		// per-sender cap every one cost each receiver a verification.
		{"lieutenant 2 sends forged chains to everyone", func() []byzantine.Traitor {
			return []byzantine.Traitor{{ID: 2, Strategy: byzantine.Custom, Func: floodForged(floodOrders)}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			cfg.Faulty = tt.faulty()
			res := mustRun(t, cfg)
			if err := res.Verify(); err != nil {
				t.Fatalf("loyal generals disagree: %v", err)
			}
			sent, ver, made := loyalWork(res)
			t.Logf("loyal generals: %d sent, %d verified, %d signed (loyal run: %d, %d, %d)", sent, ver, made, lSent, lVer, lMade)
			if sent > 2*lSent {
				t.Errorf("loyal generals sent %d messages, more than twice the loyal run's %d", sent, lSent)
			}
			if ver > 2*lVer {
				t.Errorf("loyal generals verified %d signatures, more than twice the loyal run's %d", ver, lVer)
			}
			if made > 2*lMade {
				t.Errorf("loyal generals made %d signatures, more than twice the loyal run's %d", made, lMade)
			}
			for _, g := range res.Generals {
				if g.Loyal && len(g.Values) > 2 {
					t.Errorf("general %d holds %d orders; two decide choice(V)", g.ID, len(g.Values))
				}
			}
		})
	}
}

// BenchmarkSMFlood times SM(2), n=10, in memory: the loyal run, and the
// run where the commander floods lieutenant 1 with floodOrders distinct
// signed orders made once beforehand (so the traitor's own signing is not
// timed; what is timed is what the flood costs the others).
func BenchmarkSMFlood(b *testing.B) {
	base := config(byzantine.SM, 10, 2)
	var signed []byzantine.Message
	pre := base
	pre.Faulty = []byzantine.Traitor{{ID: 0, Strategy: byzantine.Custom, Func: floodCommander(floodOrders, &signed)}}
	if _, err := byzantine.Run(b.Context(), pre); err != nil {
		b.Fatal(err)
	}
	flood := base
	flood.Faulty = []byzantine.Traitor{{ID: 0, Strategy: byzantine.Custom, Func: func(round int, honest []byzantine.Message, _ byzantine.Signer) []byzantine.Message {
		if round != 0 {
			return honest
		}
		return append(honest, signed...)
	}}}
	for _, bc := range []struct {
		name string
		cfg  byzantine.Config
	}{{"loyal", base}, {"flood", flood}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				res, err := byzantine.Run(b.Context(), bc.cfg)
				if err != nil {
					b.Fatal(err)
				}
				if res.Verify() != nil {
					b.Fatal(res.Verify())
				}
			}
		})
	}
}

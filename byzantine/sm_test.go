package byzantine_test

import (
	"crypto/ed25519"
	"math/rand/v2"
	"slices"
	"testing"

	"dlm/byzantine"
)

// TestSMLoyalMessageCount: SM(m), m >= 1, with a loyal commander and loyal
// lieutenants sends exactly (n-1)^2 messages and every lieutenant decides
// the order. Signatures: the commander signs once; lieutenants sign their
// link unless it is the m-th (B9: never relayed). Verification work is one
// check per distinct link, not per message.
func TestSMLoyalMessageCount(t *testing.T) {
	for n := 3; n <= 9; n++ {
		for m := 1; m <= n-2 && m <= 4; m++ {
			cfg := config(byzantine.SM, n, m)
			cfg.Order = "hold"
			res := mustRun(t, cfg)
			if want := (n - 1) * (n - 1); res.Messages != want {
				t.Errorf("SM(%d) n=%d: %d messages, want %d", m, n, res.Messages, want)
			}
			for id, d := range res.Decisions() {
				if d != "hold" {
					t.Errorf("SM(%d) n=%d: general %d decided %s, want hold", m, n, id, d)
				}
			}
			wantMade, wantVerified := 1, n-1
			if m >= 2 {
				wantMade, wantVerified = n, (n-1)*(n-1)
			}
			if res.SignaturesMade != wantMade || res.SignaturesVerified != wantVerified {
				t.Errorf("SM(%d) n=%d: signatures made/verified = %d/%d, want %d/%d",
					m, n, res.SignaturesMade, res.SignaturesVerified, wantMade, wantVerified)
			}
		}
	}
}

// sameV checks that every loyal lieutenant holds the same set V (B9) and
// the same decision.
func sameV(t *testing.T, cfg byzantine.Config, res *byzantine.Result) {
	t.Helper()
	var want []byzantine.Order
	first := true
	for _, g := range res.Generals {
		if !g.Loyal || g.ID == 0 {
			continue
		}
		v := slices.Clone(g.Values)
		slices.Sort(v)
		if first {
			want, first = v, false
			continue
		}
		if !slices.Equal(v, want) {
			t.Fatalf("%s: lieutenant %d holds V = %v, another holds %v", describe(cfg), g.ID, v, want)
		}
	}
	checkSound(t, cfg, res)
}

// TestSMEquivocatingCommander: whatever a traitorous commander does, with
// at most m-1 more traitors, all loyal lieutenants end with the same V and
// the same decision.
func TestSMEquivocatingCommander(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for n := 3; n <= 8; n++ {
		for m := 1; m <= n-2 && m <= 3; m++ {
			for _, s := range []byzantine.Strategy{byzantine.TwoFaced, byzantine.Colluding, byzantine.RandomOrders, byzantine.Late, byzantine.Replay} {
				faulty := []byzantine.Traitor{{ID: 0, Strategy: s}}
				for _, tr := range randomTraitors(r, n-1, m-1, byzantine.Strategies()) {
					faulty = append(faulty, byzantine.Traitor{ID: tr.ID + 1, Strategy: tr.Strategy})
				}
				cfg := config(byzantine.SM, n, m, faulty...)
				cfg.Seed = r.Int64()
				sameV(t, cfg, mustRun(t, cfg))
			}
		}
	}
}

// TestSMExhaustive: IC1 and IC2 hold, and all loyal lieutenants hold the
// same V, for every n <= 6, every m <= n-2 and every subset of at most m
// traitors: with every assignment of the eight strategies when n <= 5 and
// m <= 2 (for m = 1 that is every strategy of the single traitor), and with
// every strategy shared by the traitors of the subset otherwise (mixed
// strategies are exhaustive for n=4, m=2 in TestSMToleratesManyTraitors and
// seeded random in TestSMRandomized).
func TestSMExhaustive(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	runs := 0
	for n := 2; n <= 6; n++ {
		for m := 0; m <= n-2; m++ {
			subsets(n, m, func(ids []byzantine.ID) {
				try := func(faulty []byzantine.Traitor) {
					cfg := config(byzantine.SM, n, m, faulty...)
					cfg.Seed = r.Int64()
					sameV(t, cfg, mustRun(t, cfg))
					runs++
				}
				if n <= 5 && m <= 2 {
					assignments(ids, byzantine.Strategies(), try)
					return
				}
				for _, s := range byzantine.Strategies() {
					var faulty []byzantine.Traitor
					for _, id := range ids {
						faulty = append(faulty, byzantine.Traitor{ID: id, Strategy: s})
					}
					try(faulty)
				}
			})
		}
	}
	t.Logf("%d runs", runs)
}

// TestSMToleratesManyTraitors: SM(2) with n=4 and SM(3) with n=5 tolerate
// their traitors, where OM would need 7 and 10 generals (B3, B9). n=4, m=2
// is exhaustive over every assignment of strategies.
func TestSMToleratesManyTraitors(t *testing.T) {
	subsets(4, 2, func(ids []byzantine.ID) {
		assignments(ids, byzantine.Strategies(), func(faulty []byzantine.Traitor) {
			cfg := config(byzantine.SM, 4, 2, faulty...)
			sameV(t, cfg, mustRun(t, cfg))
		})
	})
	r := rand.New(rand.NewPCG(5, 3))
	for range 150 {
		ids := r.Perm(5)[:3]
		var faulty []byzantine.Traitor
		for _, id := range ids {
			faulty = append(faulty, byzantine.Traitor{ID: byzantine.ID(id), Strategy: byzantine.Strategies()[r.IntN(8)]})
		}
		cfg := config(byzantine.SM, 5, 3, faulty...)
		cfg.Seed = r.Int64()
		sameV(t, cfg, mustRun(t, cfg))
	}
}

// TestSMRandomized: beyond n = 6, seeded random traitors and strategies.
func TestSMRandomized(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for range 40 {
		n := 7 + r.IntN(4)
		m := 1 + r.IntN(3)
		cfg := config(byzantine.SM, n, m, randomTraitors(r, n, m, byzantine.Strategies())...)
		cfg.Seed = r.Int64()
		cfg.Trace = true
		res := mustRun(t, cfg)
		sameV(t, cfg, res)
		// Relays stop at k = m: no general believes a longer chain, and no
		// loyal general sends one.
		for _, ev := range res.Trace {
			if len(ev.Message.Path) > m+1 && (ev.Rejected == "" || res.Generals[ev.Message.From].Loyal) {
				t.Fatalf("%s: chain %s with more than m relays (rejected %q)", describe(cfg), ev.Message.Chain(), ev.Rejected)
			}
		}
	}
}

// chainFixture builds genuine SM(2) chains among five generals.
type chainFixture struct {
	cfg    byzantine.Config
	keys   []ed25519.PrivateKey
	pub    []ed25519.PublicKey
	v0     byzantine.Message // attack:0 to general 3
	v01    byzantine.Message // attack:0:1 to general 3
	v012   byzantine.Message // attack:0:1:2 to general 3
	staleV byzantine.Message // attack:0 of the run before (seq 0)
}

func general(t *testing.T, cfg byzantine.Config, id byzantine.ID, priv []ed25519.PrivateKey, pub []ed25519.PublicKey) *byzantine.General {
	t.Helper()
	g, err := byzantine.NewGeneral(cfg, id, byzantine.Keyring{Private: priv[id], Public: pub})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func to(msgs []byzantine.Message, id byzantine.ID) byzantine.Message {
	for _, m := range msgs {
		if m.To == id {
			return m
		}
	}
	panic("no message")
}

func newChainFixture(t *testing.T) chainFixture {
	t.Helper()
	f := chainFixture{cfg: config(byzantine.SM, 5, 2)}
	f.keys, f.pub = byzantine.DeriveKeys(f.cfg.Seed, 5)
	c := general(t, f.cfg, 0, f.keys, f.pub)
	c.Advance(0)
	out0 := c.Outbox(nil)
	f.v0 = to(out0, 3)
	g1 := general(t, f.cfg, 1, f.keys, f.pub)
	g1.Advance(0)
	if why := g1.Receive(to(out0, 1)); why != "" {
		t.Fatalf("general 1 rejected v:0: %s", why)
	}
	g1.Advance(1)
	out1 := g1.Outbox(nil)
	f.v01 = to(out1, 3)
	g2 := general(t, f.cfg, 2, f.keys, f.pub)
	g2.Advance(0)
	g2.Advance(1)
	if why := g2.Receive(to(out1, 2)); why != "" {
		t.Fatalf("general 2 rejected v:0:1: %s", why)
	}
	g2.Advance(2)
	f.v012 = to(g2.Outbox(nil), 3)
	old := f.cfg
	old.Seq = 0
	oc := general(t, old, 0, f.keys, f.pub)
	oc.Advance(0)
	f.staleV = to(oc.Outbox(nil), 3)
	return f
}

// TestSMChainsNeverAccepted: forged, altered, truncated, reordered,
// replayed, oversized and otherwise malformed chains are rejected with a
// reason and never join V (A4, B9).
func TestSMChainsNeverAccepted(t *testing.T) {
	f := newChainFixture(t)
	edit := func(m byzantine.Message, fn func(*byzantine.Message)) byzantine.Message {
		m.Path = slices.Clone(m.Path)
		m.Sigs = slices.Clone(m.Sigs)
		fn(&m)
		return m
	}
	junk := make([]byte, ed25519.SignatureSize)
	tests := []struct {
		name  string
		round int
		msg   byzantine.Message
		want  byzantine.RejectReason
	}{
		{"genuine v:0", 0, f.v0, ""},
		{"genuine v:0:1", 1, f.v01, ""},
		{"genuine v:0:1:2 (m-th link unsigned)", 2, f.v012, ""},
		{"forged commander signature", 0, edit(f.v0, func(m *byzantine.Message) { m.Sigs[0] = junk }), byzantine.RejectForged},
		{"altered order", 1, edit(f.v01, func(m *byzantine.Message) { m.Order = byzantine.Retreat }), byzantine.RejectForged},
		{"fabricated lieutenant signature", 1, edit(f.v01, func(m *byzantine.Message) { m.Sigs[1] = junk }), byzantine.RejectForged},
		{"signature on the m-th link", 2, edit(f.v012, func(m *byzantine.Message) { m.Sigs[2] = junk }), byzantine.RejectForged},
		{"truncated signatures", 1, edit(f.v01, func(m *byzantine.Message) { m.Sigs = m.Sigs[:1] }), byzantine.RejectMalformed},
		{"truncated chain, middle link dropped", 1, edit(f.v012, func(m *byzantine.Message) {
			m.Path = []byzantine.ID{0, 2}
			m.Sigs = [][]byte{m.Sigs[0], m.Sigs[1]}
			m.Round = 1
		}), byzantine.RejectForged},
		{"truncated chain, last link dropped", 1, edit(f.v012, func(m *byzantine.Message) {
			m.Path, m.Sigs = m.Path[:2], m.Sigs[:2]
		}), byzantine.RejectSpoofed},
		{"reordered chain", 2, edit(f.v012, func(m *byzantine.Message) {
			m.Path = []byzantine.ID{0, 2, 1}
			m.From = 1
		}), byzantine.RejectForged},
		{"replayed from another run", 0, f.staleV, byzantine.RejectStale},
		{"chain not starting with the commander", 1, edit(f.v01, func(m *byzantine.Message) { m.Path[0] = 4 }), byzantine.RejectMalformed},
		{"chain naming a general twice", 2, edit(f.v012, func(m *byzantine.Message) { m.Path[2] = 1; m.From = 1 }), byzantine.RejectMalformed},
		{"chain containing the receiver", 1, edit(f.v01, func(m *byzantine.Message) { m.Path[1] = 3; m.From = 3 }), byzantine.RejectMalformed},
		{"chain beyond k = m", 2, edit(f.v012, func(m *byzantine.Message) {
			m.Path = append(m.Path, 4)
			m.Sigs = append(m.Sigs, nil)
			m.From = 4
		}), byzantine.RejectOversized},
		{"oversized order", 0, edit(f.v0, func(m *byzantine.Message) { m.Order = byzantine.Order(make([]byte, 65)) }), byzantine.RejectOversized},
		{"spoofed sender", 0, edit(f.v0, func(m *byzantine.Message) { m.From = 2 }), byzantine.RejectSpoofed},
		{"late: v:0 in round 1", 1, f.v0, byzantine.RejectLate},
		{"misaddressed", 0, edit(f.v0, func(m *byzantine.Message) { m.To = 4 }), byzantine.RejectMisaddressed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := general(t, f.cfg, 3, f.keys, f.pub)
			for r := 0; r <= tt.round; r++ {
				g.Advance(r)
			}
			got := g.Receive(tt.msg)
			if got != tt.want {
				t.Fatalf("Receive(%s) = %q, want %q", tt.msg.Chain(), got, tt.want)
			}
			if tt.want != "" && len(g.Values()) != 0 {
				t.Errorf("V = %v after a rejected chain, want empty", g.Values())
			}
			if tt.want != "" && g.Stats().Rejected[tt.want] != 1 {
				t.Errorf("rejected = %v, want one %s", g.Stats().Rejected, tt.want)
			}
		})
	}
	t.Run("duplicate", func(t *testing.T) {
		g := general(t, f.cfg, 3, f.keys, f.pub)
		g.Advance(0)
		if got := g.Receive(f.v0); got != "" {
			t.Fatalf("first delivery rejected: %s", got)
		}
		verified := g.Stats().SignaturesVerified
		if got := g.Receive(f.v0); got != byzantine.RejectDuplicate {
			t.Fatalf("second delivery = %q, want duplicate", got)
		}
		if g.Stats().SignaturesVerified != verified {
			t.Errorf("a duplicate was verified again")
		}
	})
}

// TestSMVerifiesPrefixOnce: a chain prefix already verified is not verified
// again; the work grows with distinct chains, not messages.
func TestSMVerifiesPrefixOnce(t *testing.T) {
	f := newChainFixture(t)
	g := general(t, f.cfg, 3, f.keys, f.pub)
	g.Advance(0)
	g.Receive(f.v0)
	if got := g.Stats().SignaturesVerified; got != 1 {
		t.Fatalf("after v:0: %d verifications, want 1", got)
	}
	g.Advance(1)
	g.Receive(f.v01) // link 0 is cached: only link 1 is checked
	if got := g.Stats().SignaturesVerified; got != 2 {
		t.Fatalf("after v:0:1: %d verifications, want 2", got)
	}
	g.Advance(2)
	g.Receive(f.v012) // links 0 and 1 cached; link 2 is the unsigned m-th
	if got := g.Stats().SignaturesVerified; got != 2 {
		t.Fatalf("after v:0:1:2: %d verifications, want 2", got)
	}
}

// TestSMRelaysStopAtM: a lieutenant relays a new value only while k < m.
func TestSMRelaysStopAtM(t *testing.T) {
	f := newChainFixture(t)
	tests := []struct {
		name      string
		round     int
		msg       byzantine.Message
		wantRelay int
	}{
		{"k=0 relayed to the 3 others", 0, f.v0, 3},
		{"k=1 relayed to the 2 not on the chain", 1, f.v01, 2},
		{"k=m=2 not relayed", 2, f.v012, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := general(t, f.cfg, 3, f.keys, f.pub)
			for r := 0; r <= tt.round; r++ {
				g.Advance(r)
			}
			if why := g.Receive(tt.msg); why != "" {
				t.Fatal(why)
			}
			g.Advance(tt.round + 1)
			out := g.Outbox(nil)
			if len(out) != tt.wantRelay {
				t.Fatalf("relayed %d messages, want %d", len(out), tt.wantRelay)
			}
			for _, m := range out {
				if len(m.Path) != len(tt.msg.Path)+1 || m.Path[len(m.Path)-1] != 3 {
					t.Errorf("relay %s does not extend %s with 3", m.Chain(), tt.msg.Chain())
				}
			}
		})
	}
}

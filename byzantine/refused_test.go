package byzantine_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/byzantine"
)

// corruptEndpoint sends what its general makes after passing it through
// change: a traitor that runs the real general and mangles its messages.
type corruptEndpoint struct {
	chanEndpoint
	change func(*byzantine.Message)
}

func (e corruptEndpoint) Send(ctx context.Context, m byzantine.Message) error {
	m.Path = slices.Clone(m.Path)
	m.Sigs = slices.Clone(m.Sigs)
	for i := range m.Sigs {
		m.Sigs[i] = slices.Clone(m.Sigs[i])
	}
	e.change(&m)
	return e.chanEndpoint.Send(ctx, m)
}

// TestRefusedMessageNamesItsSender: a commander whose every order is
// refused as one no loyal general sends (malformed, or with its own
// signature forged) is a fault of that commander, proven by the message
// its authenticated link delivered: every lieutenant must name it (kind
// refused). Before, the lieutenants said they saw no fault and decided
// retreat, so a run that broke nothing visible exited 0 whatever the
// commander had meant.
func TestRefusedMessageNamesItsSender(t *testing.T) {
	for _, tc := range []struct {
		name   string
		alg    byzantine.Algorithm
		m      int
		change func(*byzantine.Message)
	}{
		{"om/malformed", byzantine.OM, 1, func(m *byzantine.Message) {
			m.Path = append(m.Path, 0) // the commander twice
		}},
		{"sm/forged", byzantine.SM, 1, func(m *byzantine.Message) {
			if k := len(m.Sigs) - 1; k >= 0 && len(m.Sigs[k]) > 0 {
				m.Sigs[k][0] ^= 1 // its own link's signature
			}
		}},
		{"sm/malformed", byzantine.SM, 1, func(m *byzantine.Message) {
			m.Sigs = m.Sigs[:0] // a chain without its signatures
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 4
				cfg := byzantine.DefaultConfig()
				cfg.Algorithm, cfg.Generals, cfg.MaxTraitors = tc.alg, n, tc.m
				cfg.Order = byzantine.Attack
				net := newChanNet(n)
				priv, pub := byzantine.DeriveKeys(cfg.Seed, n)
				res := make([]byzantine.GeneralResult, n)
				errs := make([]error, n)
				start := time.Now()
				var wg sync.WaitGroup
				for i := range n {
					g, err := byzantine.NewGeneral(cfg, byzantine.ID(i), byzantine.Keyring{Private: priv[i], Public: pub})
					if err != nil {
						t.Fatal(err)
					}
					var ep byzantine.Endpoint = chanEndpoint{net, byzantine.ID(i)}
					if i == 0 {
						ep = corruptEndpoint{chanEndpoint{net, 0}, tc.change}
					}
					wg.Go(func() { res[i], errs[i] = byzantine.RunGeneral(t.Context(), g, ep, start, nil) })
				}
				wg.Wait()
				for i := 1; i < n; i++ {
					if errs[i] != nil {
						t.Fatal(errs[i])
					}
					want := []byzantine.PeerFault{{ID: 0, Kind: byzantine.PeerRefused, Round: 0}}
					if !slices.Equal(res[i].Faults, want) {
						t.Errorf("lieutenant %d: faults %v, want %v (decision %s, rejected %v)", i, res[i].Faults, want, res[i].Decision, res[i].Stats.Rejected)
					}
				}
			})
		})
	}
}

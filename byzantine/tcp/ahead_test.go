package tcp

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"dlm/byzantine"
)

// markerWithholder follows the algorithm but sends its end-of-round
// markers to every peer except victim: the victim closes each round at
// its deadline while the others, who get every marker, run a round ahead.
type markerWithholder struct {
	*Node
	victim byzantine.ID
}

func (w markerWithholder) EndRound(ctx context.Context, r int) error {
	frame := binary.BigEndian.AppendUint16([]byte{kindMarker}, uint16(r))
	frame = append(frame, w.run[:]...)
	for id := range w.keys {
		if byzantine.ID(id) != w.id && byzantine.ID(id) != w.victim {
			w.SendRaw(byzantine.ID(id), frame)
		}
	}
	return nil
}

// TestRoundAheadIsNotRefused: in OM(4) with 13 generals a traitor that
// sends every order honestly withholds its end-of-round markers from one
// victim; the others run one round ahead, and their 720 round-4 relays
// per peer reach the victim while it is still in round 3. Every one of
// them must be kept for its round (regression: the buffer of early
// messages kept 256 per peer and round and refused the rest as flood; the
// victim counted them as RETREAT and decided retreat against a loyal
// commander's attack, with no round marked out of time).
func TestRoundAheadIsNotRefused(t *testing.T) {
	const n, m, traitor, victim = 13, 4, 5, 7
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	keys := newKeys(t, n)
	nodes := make([]*Node, n)
	addrs := make([]string, n)
	for i := range nodes {
		nodes[i] = listenAt(t, "127.0.0.1:0", byzantine.ID(i), keys[i])
		addrs[i] = nodes[i].Addr()
	}
	c := clusterOf(addrs, keys)
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm = byzantine.OM
	cfg.Generals, cfg.MaxTraitors = n, m
	cfg.Order = byzantine.Attack
	cfg.RoundTimeout = 3 * time.Second
	start := time.Now().Add(time.Second)
	res := make([]byzantine.GeneralResult, n)
	errs := make([]error, n)
	done := make(chan struct{})
	for i := range nodes {
		go func() {
			defer func() { done <- struct{}{} }()
			if i != traitor {
				res[i], _, errs[i] = RunNode(ctx, nodes[i], cfg, keys[i], c, start)
				return
			}
			errs[i] = runWith(ctx, nodes[i], cfg, keys[i], c, start, func(nd *Node) byzantine.Endpoint {
				return markerWithholder{Node: nd, victim: victim}
			})
		}()
	}
	for range nodes {
		<-done
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("general %d: %v", i, err)
		}
	}
	for i, r := range res {
		if i == traitor {
			continue
		}
		if f := r.Stats.Rejected[byzantine.RejectFlood]; f > 0 {
			t.Errorf("loyal general %d refused %d messages as flood (rejected %v)", i, f, r.Stats.Rejected)
		}
		if len(r.Overran) > 0 {
			t.Logf("general %d overran rounds %v (loaded machine?)", i, r.Overran)
			continue
		}
		if i != 0 && r.Decision != byzantine.Attack {
			t.Errorf("loyal general %d decided %s against the loyal commander's attack, and kept the schedule (rejected %v)", i, r.Decision, r.Stats.Rejected)
		}
	}
}

// runWith runs general node.id of cfg like RunNode, over the endpoint wrap
// makes of the node: a traitor that controls timing and links.
func runWith(ctx context.Context, nd *Node, cfg byzantine.Config, priv []byte, c Cluster, start time.Time, wrap func(*Node) byzantine.Endpoint) error {
	pubs, err := c.PublicKeys()
	if err != nil {
		return err
	}
	cfg.RunID = RunID(c, start, cfg.Seq)
	g, err := byzantine.NewGeneral(cfg, nd.id, byzantine.Keyring{Private: priv, Public: pubs})
	if err != nil {
		return err
	}
	dctx, cancel := context.WithDeadline(ctx, start.Add(cfg.RoundTimeout/4))
	nd.Start(dctx, c, cfg.RunID)
	cancel()
	_, err = byzantine.RunGeneral(ctx, g, wrap(nd), start, nil)
	return err
}

package tcp

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"testing"
	"time"

	"dlm/byzantine"
)

// serveDying follows the launch protocol until the go signal, then dies
// without a report, as a general whose process crashes.
func serveDying(_ context.Context, in io.Reader, out io.Writer) error {
	j, err := joinLaunch(in, out)
	if err != nil {
		return err
	}
	defer j.node.Close()
	var g goSignal
	j.dec.Decode(&g)
	return io.ErrUnexpectedEOF // dies: no report
}

// joined is a test general that joined a launch (joinLaunch).
type joined struct {
	dec  *json.Decoder
	enc  *json.Encoder
	a    assignment
	node *Node
}

// joinLaunch follows the launch protocol as Serve does up to the go
// signal: it reads the assignment, listens with a fresh key on a free
// loopback port and reports its address and key. The caller closes the
// node.
func joinLaunch(in io.Reader, out io.Writer) (*joined, error) {
	j := &joined{dec: json.NewDecoder(in), enc: json.NewEncoder(out)}
	if err := j.dec.Decode(&j.a); err != nil {
		return nil, err
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	if j.node, err = Listen("127.0.0.1:0", j.a.ID, priv, 0); err != nil {
		return nil, err
	}
	if err := j.enc.Encode(Peer{ID: j.a.ID, Addr: j.node.Addr(), PublicKey: EncodeKey(pub)}); err != nil {
		j.node.Close()
		return nil, err
	}
	return j, nil
}

// dyingSpawner runs general dead as serveDying and the others as Serve.
func dyingSpawner(dead byzantine.ID) Spawner { return localSpawnerWith(dead, serveDying) }

// TestLaunchReportsCrashedGeneral: a general whose process dies during the
// run is reported as crashed; the survivors' decisions are kept and the
// verdict covers the loyal survivors (regression: Launch discarded every
// decision and returned an error).
func TestLaunchReportsCrashedGeneral(t *testing.T) {
	for _, dead := range []byzantine.ID{0, 2} {
		t.Run(map[byzantine.ID]string{0: "commander", 2: "lieutenant"}[dead], func(t *testing.T) {
			cfg := byzantine.DefaultConfig()
			cfg.RoundTimeout = 500 * time.Millisecond
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := Launch(ctx, cfg, dyingSpawner(dead))
			if err != nil {
				t.Fatalf("Launch = %v, want the survivors' result", err)
			}
			if !res.Generals[dead].Crashed {
				t.Errorf("general %d not marked crashed: %+v", dead, res.Generals[dead])
			}
			if err := res.Verify(); err != nil {
				t.Errorf("Verify() = %v, want nil over the loyal survivors", err)
			}
			if _, ok := res.Decisions()[dead]; ok {
				t.Errorf("decisions %v include the crashed general %d", res.Decisions(), dead)
			}
			for id, d := range res.Decisions() {
				if dead != 0 && d != cfg.Order {
					t.Errorf("survivor %d decided %s, want %s", id, d, cfg.Order)
				}
			}
			if got, want := len(res.Decisions()), map[byzantine.ID]int{0: 3, 2: 2}[dead]; got != want {
				t.Errorf("%d survivors' decisions, want %d", got, want)
			}
		})
	}
}

// TestLaunchExplains: an explanation asked for in the config comes back
// from the general's process with its report.
func TestLaunchExplains(t *testing.T) {
	cfg := byzantine.DefaultConfig()
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.TwoFaced}}
	cfg.Explain = []byzantine.ID{2}
	res, err := Launch(t.Context(), cfg, LocalSpawner())
	if err != nil {
		t.Fatal(err)
	}
	e := res.Generals[2].Explanation
	if e == nil || e.Tree == nil || len(e.Tree.Children) != 2 || e.Tree.Majority != byzantine.Attack {
		t.Fatalf("explanation of general 2 = %+v, want a tree of 3 nodes deciding attack", e)
	}
	if res.Generals[1].Explanation != nil {
		t.Errorf("general 1 explained without being asked")
	}
}

package tcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"dlm/byzantine"
)

// TestServeStopsWhenTheCoordinatorIsGone: a general's input ends (its
// coordinator died, even by SIGKILL, which no handler sees, or gave up on
// the run) before the go signal or during the run: Serve stops at once,
// with an error wrapping ErrCoordinatorGone, and writes no report (nobody
// would read it). A silent traitor and a one-minute round would keep the
// run going about four minutes. This is how a general's process (dlm
// generals serve) learns of its coordinator's death where the kernel
// does not tell it.
// (Regression: after the go signal, Serve read its input no more and ran
// to the run's last deadline.)
func TestServeStopsWhenTheCoordinatorIsGone(t *testing.T) {
	t.Parallel()
	cfg := byzantine.DefaultConfig()
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.Silent}}
	cfg.RoundTimeout = time.Minute // nothing ends the run but its coordinator's end
	for _, tc := range []struct {
		name string
		// sendGo: the coordinator's end comes after the go signal.
		sendGo bool
	}{
		{name: "before the go signal"},
		{name: "after the go signal", sendGo: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type general struct {
				in   *io.PipeWriter
				out  *json.Decoder
				rest chan []byte // what the general wrote after its hello
				done chan error
			}
			gs := make([]general, cfg.Generals)
			var cluster Cluster
			for i := range gs {
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				g := general{in: inW, out: json.NewDecoder(outR), rest: make(chan []byte, 1), done: make(chan error, 1)}
				go func() {
					err := Serve(t.Context(), inR, outW)
					inR.CloseWithError(io.EOF)
					outW.CloseWithError(io.EOF)
					g.done <- err
				}()
				if err := json.NewEncoder(inW).Encode(assignment{Config: cfg, ID: byzantine.ID(i)}); err != nil {
					t.Fatal(err)
				}
				var p Peer
				if err := g.out.Decode(&p); err != nil {
					t.Fatalf("general %d's hello: %v", i, err)
				}
				cluster.Generals = append(cluster.Generals, p)
				go func() {
					b, _ := io.ReadAll(io.MultiReader(g.out.Buffered(), outR))
					g.rest <- b
				}()
				gs[i] = g
			}
			if tc.sendGo {
				for i, g := range gs {
					if err := json.NewEncoder(g.in).Encode(goSignal{Cluster: cluster, Start: time.Now()}); err != nil {
						t.Fatalf("general %d's go: %v", i, err)
					}
				}
			}
			for _, g := range gs {
				g.in.Close() // the coordinator's end
			}
			bound := time.After(30 * time.Second)
			for i, g := range gs {
				select {
				case err := <-g.done:
					if !errors.Is(err, ErrCoordinatorGone) {
						t.Errorf("general %d: Serve = %v, want an error wrapping ErrCoordinatorGone", i, err)
					}
				case <-bound:
					t.Fatalf("general %d still ran 30s after its coordinator's end", i)
				}
				if b := <-g.rest; len(bytes.TrimSpace(b)) > 0 {
					t.Errorf("general %d wrote %q after its hello, want nothing (nobody reads it)", i, b)
				}
			}
		})
	}
}

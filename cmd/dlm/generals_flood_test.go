package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/byzantine/tcp"
)

// floodEndpoint is the traitorous commander's endpoint: after the honest
// orders of round 0 and before its end-of-round marker, it sends orders
// distinct, validly signed orders to lieutenant 1, signing each as it goes.
type floodEndpoint struct {
	*tcp.Node
	signer *byzantine.Signer
	cfg    byzantine.Config
	orders int
}

func (f floodEndpoint) EndRound(ctx context.Context, r int) error {
	if r == 0 {
		for i := range f.orders {
			m := byzantine.Message{From: 0, To: 1, Round: 0, Seq: f.cfg.Seq, Run: f.cfg.RunID,
				Order: byzantine.Order(fmt.Sprintf("v%d", i)), Path: []byzantine.ID{0}}
			m, err := f.signer.Sign(m)
			if err != nil {
				return err
			}
			if err := f.Send(ctx, m); err != nil {
				return err
			}
		}
	}
	return f.Node.EndRound(ctx, r)
}

// clusterFiles writes n keys and a cluster file on free loopback
// addresses into dir, and returns the cluster file and the key files.
func clusterFiles(t *testing.T, dir string, n int) (string, []string) {
	t.Helper()
	var c struct {
		Generals []map[string]any `json:"generals"`
	}
	var keys []string
	for i := range n {
		key := filepath.Join(dir, fmt.Sprintf("g%d.key", i))
		c.Generals = append(c.Generals, map[string]any{"id": i, "addr": freeAddr(t), "public_key": writeKey(t, key)})
		keys = append(keys, key)
	}
	b, _ := json.Marshal(c)
	file := filepath.Join(dir, "cluster.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, keys
}

// TestGeneralsNodeFlood is a flood attack over real processes:
// SM(2), n=5, four loyal "dlm generals node" processes over TCP, and a
// traitorous commander (this test) that sends attack to everyone, then
// floods lieutenant 1 with distinct, validly signed orders. The loyal
// lieutenants must agree, each sends at most two orders' relays, and
// each process stays small. Before the fix lieutenant 1 decided retreat
// and the others attack, every process exiting 0.
func TestGeneralsNodeFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const (
		n, m   = 5, 2
		orders = 8000
		// A round that a loaded machine keeps: with 500ms the flooded
		// lieutenant sent its round-1 relays after the deadline (exit 3,
		// "ran out of time") while other packages' tests ran.
		timeout = 2 * time.Second
		seq     = 7
	)
	clusterFile, keys, c, pubs, priv := commanderKeys(t, n)
	t0 := time.Now().Add(10 * time.Second) // every process must be up before it: a start already past is refused
	start := t0.UTC().Format(time.RFC3339Nano)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	type outcome struct {
		Decision byzantine.Order `json:"decision"`
		Stats    byzantine.Stats `json:"stats"`
		Overran  []int           `json:"overran"`
	}
	outs := make([]outcome, n)
	errs := make([]error, n)
	rss := make([]int64, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() {
			cmd := exec.CommandContext(ctx, dlmBin(), "generals", "node", "--cluster", clusterFile, "--id", strconv.Itoa(i),
				"--key", keys[i], "--start", start, "--seq", strconv.Itoa(seq), "--algorithm", "sm", "-n", strconv.Itoa(n),
				"-m", strconv.Itoa(m), "--faulty", "0", "--round-timeout", timeout.String(), "--json")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if cmd.ProcessState != nil {
				if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
					rss[i] = ru.Maxrss // KiB on Linux
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("general %d: %v\nstdout: %s\nstderr: %s", i, err, stdout.String(), stderr.String())
				return
			}
			errs[i] = json.Unmarshal(stdout.Bytes(), &outs[i])
		})
	}

	var signer byzantine.Signer
	cfg := byzantine.DefaultConfig()
	cfg.Algorithm, cfg.Generals, cfg.MaxTraitors, cfg.RoundTimeout, cfg.Seq = byzantine.SM, n, m, timeout, seq
	cfg.RunID = tcp.RunID(c, tcp.TermsOf(cfg, t0))
	cfg.Faulty = []byzantine.Traitor{{ID: 0, Strategy: byzantine.Custom, Func: func(_ int, honest []byzantine.Message, s byzantine.Signer) []byzantine.Message {
		signer = s
		return honest
	}}}
	g, node := startCommander(ctx, t, cfg, c, pubs, priv, t0)
	if _, err := byzantine.RunGeneral(ctx, g, floodEndpoint{Node: node, signer: &signer, cfg: cfg, orders: orders}, t0, nil); err != nil {
		t.Errorf("traitor: %v", err)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < n; i++ {
		t.Logf("general %d: decides %s, sent %d, verified %d, rejected %v, overran %v, max RSS %d KiB",
			i, outs[i].Decision, outs[i].Stats.Sent, outs[i].Stats.SignaturesVerified, outs[i].Stats.Rejected, outs[i].Overran, rss[i])
		if outs[i].Decision != outs[1].Decision {
			t.Errorf("general %d decides %s, general 1 %s: IC1 violated", i, outs[i].Decision, outs[1].Decision)
		}
		// Two orders at most, each relayed once to at most n-2 others.
		if want := byzantine.MaxValues * (n - 2); outs[i].Stats.Sent > want {
			t.Errorf("general %d sent %d messages, more than %d", i, outs[i].Stats.Sent, want)
		}
		if rss[i] > 256<<10 {
			t.Errorf("general %d used %d KiB, more than 256 MiB", i, rss[i])
		}
	}
}

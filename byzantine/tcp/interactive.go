package tcp

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"dlm/byzantine"
)

// RunInteractiveNode runs general node.id of the interactive-consistency
// run ic over node, once node listens: it connects to the cluster and runs
// the n instances from start over the node's connections (see
// byzantine.RunInteractiveGeneral). As with RunNode, the run id is derived
// here, RunID(c, InteractiveTermsOf(ic.Config, start)), replacing any
// ic.Config.RunID, and every general must be given the same cluster, ic
// and start.
func RunInteractiveNode(ctx context.Context, node *Node, ic byzantine.InteractiveConfig, priv ed25519.PrivateKey, c Cluster, start time.Time) (byzantine.InteractiveGeneralResult, error) {
	return runInteractiveNode(ctx, node, ic, priv, c, InteractiveTermsOf(ic.Config, start))
}

// runInteractiveNode is RunInteractiveNode for the run with terms t (an
// epoch's carry its use).
func runInteractiveNode(ctx context.Context, node *Node, ic byzantine.InteractiveConfig, priv ed25519.PrivateKey, c Cluster, t Terms) (byzantine.InteractiveGeneralResult, error) {
	keys, err := c.PublicKeys()
	if err != nil {
		return byzantine.InteractiveGeneralResult{}, err
	}
	if len(keys) != ic.Config.Generals {
		return byzantine.InteractiveGeneralResult{}, fmt.Errorf("%w: %d generals in the cluster, config says %d", ErrCluster, len(keys), ic.Config.Generals)
	}
	if int(node.id) >= len(keys) || !keys[node.id].Equal(priv.Public()) {
		return byzantine.InteractiveGeneralResult{}, fmt.Errorf("%w: general %d: key does not match the cluster file", ErrCluster, node.id)
	}
	t.Seq = ic.Config.Seq
	ic.Config.RunID = RunID(c, t)
	if err := ic.Validate(); err != nil {
		return byzantine.InteractiveGeneralResult{}, err
	}
	return runInteractiveOver(ctx, node, node, ic, byzantine.Keyring{Private: priv, Public: keys}, c, t)
}

// RunInteractiveOver connects node to the cluster and runs the general's
// n instances of ic over ep (node itself, or a test's traitor wrapping
// it, as package tcptest does), with keys in the generals' own ids, as
// RunOver does for one instance: round 0 starts at start at the latest,
// links still missing are dialled until the run's last deadline and used
// from when they are up, and the last markers are written before the node
// may close. ic.Config.RunID must be the run's (RunID(c,
// InteractiveTermsOf(ic.Config, start)));
// RunInteractiveNode sets it.
func RunInteractiveOver(ctx context.Context, node *Node, ep byzantine.Endpoint, ic byzantine.InteractiveConfig, keys byzantine.Keyring, c Cluster, start time.Time) (byzantine.InteractiveGeneralResult, error) {
	return runInteractiveOver(ctx, node, ep, ic, keys, c, InteractiveTermsOf(ic.Config, start))
}

// runInteractiveOver is RunInteractiveOver for the run with terms t.
func runInteractiveOver(ctx context.Context, node *Node, ep byzantine.Endpoint, ic byzantine.InteractiveConfig, keys byzantine.Keyring, c Cluster, t Terms) (byzantine.InteractiveGeneralResult, error) {
	start := t.Start
	var res byzantine.InteractiveGeneralResult
	err := node.onSchedule(ctx, c, ic.Config, t, start, func() error {
		var err error
		res, err = byzantine.RunInteractiveGeneral(ctx, ic, node.id, keys, ep, start)
		return err
	})
	return res, err
}

// LaunchInteractive runs ic with every general in a goroutine of this
// process, each with its own ed25519 key and its own listener on loopback,
// talking over real TCP connections, and assembles the result. A general
// that ic.Config.Crashes makes crash is marked crashed; any other failure
// of a general is returned as an error wrapping ErrGeneral.
func LaunchInteractive(ctx context.Context, ic byzantine.InteractiveConfig) (*byzantine.InteractiveResult, error) {
	if err := ic.Validate(); err != nil {
		return nil, err
	}
	n := ic.Config.Generals
	nodes := make([]*Node, 0, n)
	privs := make([]ed25519.PrivateKey, 0, n)
	defer func() {
		for _, nd := range nodes {
			nd.Close()
		}
	}()
	var c Cluster
	for i := range n {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		nd, err := Listen("127.0.0.1:0", byzantine.ID(i), priv, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: general %d: %w", ErrGeneral, i, err)
		}
		nodes = append(nodes, nd)
		privs = append(privs, priv)
		c.Generals = append(c.Generals, Peer{ID: byzantine.ID(i), Addr: nd.Addr(), PublicKey: EncodeKey(pub)})
	}
	// A stop closes every general's node at once: the generals' own
	// returns follow, and no general goes on writing to and reading from
	// the others meanwhile (a large run's queues keep a busy process at
	// it for seconds).
	closeAll := context.AfterFunc(ctx, func() {
		var wg sync.WaitGroup
		for _, nd := range nodes {
			wg.Go(func() { nd.Close() })
		}
		wg.Wait()
	})
	defer closeAll()
	start := time.Now().Add(max(ic.Config.RoundTimeout, 500*time.Millisecond))
	results := make(map[byzantine.ID]byzantine.InteractiveGeneralResult, n)
	errs := make([]error, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := RunInteractiveNode(ctx, nodes[i], ic, privs[i], c, start)
			if errors.Is(err, byzantine.ErrCrashed) {
				nodes[i].Close() // as a crashed process's connections close
				return
			}
			if err != nil {
				errs[i] = fmt.Errorf("%w: general %d: %w", ErrGeneral, i, err)
				return
			}
			mu.Lock()
			results[byzantine.ID(i)] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, stopCauses(ctx, errs)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ic.Config.RunID = RunID(c, InteractiveTermsOf(ic.Config, start))
	return byzantine.AssembleInteractive(ic, results), nil
}

// RunInteractiveEpoch runs general id's part of one epoch of a team that
// runs interactive consistency in epochs: it listens on addr (the
// general's cluster address), runs RunInteractiveNode from start with
// value as its private value, and closes the listener, so the next epoch
// listens afresh. Each general knows only its own value: the other entries
// of ic.Values are placeholders. The sequence number is derived from
// start, so every epoch is its own run (run id, signatures, handshakes).
// use names what the agreed values are for (Terms.Use: leader, failures,
// clock): it is bound into the run id, so generals of one team that read
// the vector for different uses refuse each other. It also returns the
// peers refused for running the epoch with other terms (see
// Node.OtherTerms).
func RunInteractiveEpoch(ctx context.Context, addr string, c Cluster, id byzantine.ID, priv ed25519.PrivateKey, ic byzantine.InteractiveConfig, use string, start time.Time, value byzantine.Order) (byzantine.InteractiveGeneralResult, map[byzantine.ID][]TermDiff, error) {
	return runInteractiveEpoch(ctx, func() (*Node, error) { return Listen(addr, id, priv, 0) }, c, id, priv, ic, use, start, value)
}

// runInteractiveEpoch runs one epoch over the node listen makes.
func runInteractiveEpoch(ctx context.Context, listen func() (*Node, error), c Cluster, id byzantine.ID, priv ed25519.PrivateKey, ic byzantine.InteractiveConfig, use string, start time.Time, value byzantine.Order) (byzantine.InteractiveGeneralResult, map[byzantine.ID][]TermDiff, error) {
	n := ic.Config.Generals
	if int(id) < 0 || int(id) >= n {
		return byzantine.InteractiveGeneralResult{}, nil, fmt.Errorf("%w: general %d out of range 0..%d", ErrCluster, id, n-1)
	}
	ic.Values = make([]byzantine.Order, n)
	for i := range ic.Values {
		ic.Values[i] = "-"
	}
	ic.Values[id] = value
	ic.Config.Seq = uint64(start.UnixNano())
	node, err := listen()
	if err != nil {
		return byzantine.InteractiveGeneralResult{}, nil, err
	}
	defer node.Close()
	t := InteractiveTermsOf(ic.Config, start)
	t.Use = use
	res, err := runInteractiveNode(ctx, node, ic, priv, c, t)
	return res, node.OtherTerms(), err
}

// stopCauses is the error of a run of this process's generals that ctx
// stopped: the stop once, and whatever else failed (errs, one per
// general), leaving out what the stop itself did to each general: a run
// stopped, a node closed.
func stopCauses(ctx context.Context, errs []error) error {
	var others []error
	for _, err := range errs {
		if err != nil && !errors.Is(err, ErrClosed) {
			others = append(others, err)
		}
	}
	return byzantine.StoppedError(ctx, "", others...)
}

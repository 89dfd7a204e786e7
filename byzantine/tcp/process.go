package tcp

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"dlm/byzantine"
)

// The launch protocol between a coordinator and the process of one general,
// one JSON object per line:
//
//	coordinator -> general   assignment{config, id}
//	general -> coordinator   hello{id, addr, public_key}   (listening)
//	coordinator -> general   go{cluster, start}
//	general -> coordinator   report{result, trace} or report{error}
//
// Each general generates its own ed25519 identity; the coordinator only
// learns and distributes the public keys.

type assignment struct {
	Config byzantine.Config `json:"config"`
	ID     byzantine.ID     `json:"id"`
	// Listen is the address to listen on; empty means 127.0.0.1:0.
	Listen string `json:"listen,omitempty"`
}

type goSignal struct {
	Cluster Cluster   `json:"cluster"`
	Start   time.Time `json:"start"`
}

type report struct {
	Result byzantine.GeneralResult `json:"result"`
	Trace  []byzantine.TraceEvent  `json:"trace,omitempty"`
	Error  string                  `json:"error,omitempty"`
}

// ErrGeneral is wrapped when a general's process fails.
var ErrGeneral = errors.New("tcp: general failed")

// ErrCoordinatorGone is wrapped by Serve's error when its input ended
// before the run did: the coordinator died (even by SIGKILL, which closes
// its end of the pipe) or gave up on the run, and nobody reads a report.
var ErrCoordinatorGone = errors.New("tcp: the coordinator is gone")

// Serve runs one general under the launch protocol, reading from in and
// writing to out. The dlm command runs it in a hidden subcommand; tests run
// it in re-executed test binaries.
//
// The coordinator sends nothing after the go signal and keeps in open
// until it has the general's report, so Serve reads in to its end while
// the general runs: the end of in (the coordinator's death, however it
// died, closes its end of the pipe) stops the run, and Serve returns an
// error wrapping ErrCoordinatorGone without a report, as it does when in
// ends before the go signal. When the run ends first, Serve returns and
// leaves a goroutine reading in until in ends.
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	var a assignment
	if err := dec.Decode(&a); err != nil {
		return fmt.Errorf("tcp: reading assignment: %w", err)
	}
	if err := a.Config.Validate(); err != nil {
		return err
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	addr := a.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	node, err := Listen(addr, a.ID, priv, 0)
	if err != nil {
		return err
	}
	defer node.Close()
	if err := enc.Encode(Peer{ID: a.ID, Addr: node.Addr(), PublicKey: EncodeKey(pub)}); err != nil {
		return err
	}
	var g goSignal
	if err := dec.Decode(&g); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w before the go signal", ErrCoordinatorGone)
		}
		return fmt.Errorf("tcp: reading go: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), in))
		cancel(ErrCoordinatorGone)
	}()
	res, trace, err := RunNode(ctx, node, a.Config, priv, g.Cluster, g.Start)
	if errors.Is(context.Cause(ctx), ErrCoordinatorGone) {
		if err == nil {
			return ErrCoordinatorGone
		}
		return fmt.Errorf("%w: %w", ErrCoordinatorGone, err)
	}
	if errors.Is(err, byzantine.ErrCrashed) {
		return err // a crash sends no report: the coordinator finds it dead
	}
	r := report{Result: res, Trace: trace}
	if err != nil {
		r.Error = err.Error()
	}
	if eerr := enc.Encode(r); eerr != nil {
		return errors.Join(err, eerr)
	}
	return err
}

// RunNode runs general node.id of cfg over node, once node listens: it
// connects to the cluster, runs the rounds from start, and returns the
// general's result and, when cfg.Trace is set, what it received. This is
// the entry point for generals on several machines, each given the same
// cluster file, config and start time. The run id is always derived here,
// RunID(c, TermsOf(cfg, start)), replacing any cfg.RunID: generals of
// another cluster, other terms (algorithm, n, m, majority, round timeout),
// start or sequence number cannot take part, and those that prove other
// terms are named by node.OtherTerms.
func RunNode(ctx context.Context, node *Node, cfg byzantine.Config, priv ed25519.PrivateKey, c Cluster, start time.Time) (byzantine.GeneralResult, []byzantine.TraceEvent, error) {
	keys, err := c.PublicKeys()
	if err != nil {
		return byzantine.GeneralResult{}, nil, err
	}
	if len(keys) != cfg.Generals {
		return byzantine.GeneralResult{}, nil, fmt.Errorf("%w: %d generals in the cluster, config says %d", ErrCluster, len(keys), cfg.Generals)
	}
	if int(node.id) >= len(keys) || !keys[node.id].Equal(priv.Public()) {
		return byzantine.GeneralResult{}, nil, fmt.Errorf("%w: general %d: key does not match the cluster file", ErrCluster, node.id)
	}
	cfg.RunID = RunID(c, TermsOf(cfg, start))
	g, err := byzantine.NewGeneral(cfg, node.id, byzantine.Keyring{Private: priv, Public: keys})
	if err != nil {
		return byzantine.GeneralResult{}, nil, err
	}
	var trace *[]byzantine.TraceEvent
	var events []byzantine.TraceEvent
	if cfg.Trace {
		trace = &events
	}
	res, err := runOver(ctx, node, g, node, c, cfg, start, trace)
	return res, events, err
}

// runOver connects node to the cluster and runs g over ep (node itself,
// or a traitor's wrapping of it in tests). Timing belongs to the
// schedule, not to the slowest handshake: round 0 starts at start at the
// latest, links still missing then are dialled (dials and handshakes
// retried) until the run's last deadline and used from when they are up,
// and a peer without a link when a message is due is a fault the general
// sees (byzantine.PeerAbsent).
func runOver(ctx context.Context, node *Node, g *byzantine.General, ep byzantine.Endpoint, c Cluster, cfg byzantine.Config, start time.Time, trace *[]byzantine.TraceEvent) (byzantine.GeneralResult, error) {
	var res byzantine.GeneralResult
	err := node.onSchedule(ctx, c, cfg, TermsOf(cfg, start), start, func() error {
		var err error
		res, err = byzantine.RunGeneral(ctx, g, ep, start, trace)
		return err
	})
	return res, err
}

// onSchedule runs run, one general's part of the run cfg (with terms t,
// which its hellos carry) over node, on
// the run's schedule: the node keeps a link to every peer (dialling the
// missing ones, and again those that break) until a round timeout after
// the run's last deadline, and run starts once every link is up or at
// start, whichever comes first (a link that comes up later is used from
// then on). The last markers run queued are then written before the node
// may close, so that peers still in the last round need not wait for its
// deadline.
func (node *Node) onSchedule(ctx context.Context, c Cluster, cfg byzantine.Config, t Terms, start time.Time, run func() error) error {
	if err := node.prepare(c, cfg.RunID, t); err != nil {
		return err
	}
	node.mu.Lock()
	node.start, node.round = start, cfg.RoundTimeout
	node.mu.Unlock()
	end := start.Add(time.Duration(cfg.MaxTraitors+3) * cfg.RoundTimeout)
	dctx, cancel := context.WithDeadline(ctx, end)
	up := make(chan struct{})
	dialed := make(chan struct{})
	go func() {
		defer close(dialed)
		node.dialAll(dctx, c, up)
	}()
	defer func() {
		cancel()
		<-dialed
	}()
	wait := time.NewTimer(time.Until(start))
	select {
	case <-up:
	case <-wait.C:
	case <-ctx.Done():
	}
	wait.Stop()
	err := run()
	fctx, fcancel := context.WithTimeout(ctx, cfg.RoundTimeout)
	node.Flush(fctx)
	fcancel()
	return err
}

// Child is one running general as the coordinator sees it.
type Child struct {
	// In is the general's standard input.
	In io.WriteCloser
	// Out is the general's standard output.
	Out io.Reader
	// Wait waits for the general to exit.
	Wait func() error
}

// Spawner starts the general id and returns its pipes.
type Spawner func(ctx context.Context, id byzantine.ID) (*Child, error)

// CommandSpawner starts each general as an OS process built by cmd, which
// must run Serve on its standard input and output.
func CommandSpawner(cmd func(ctx context.Context, id byzantine.ID) *exec.Cmd) Spawner {
	return func(ctx context.Context, id byzantine.ID) (*Child, error) {
		c := cmd(ctx, id)
		in, err := c.StdinPipe()
		if err != nil {
			return nil, err
		}
		out, err := c.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := c.Start(); err != nil {
			return nil, err
		}
		return &Child{In: in, Out: out, Wait: c.Wait}, nil
	}
}

// LocalSpawner runs each general in a goroutine of this process, still over
// real loopback TCP connections. It serves tests and the conformance suite.
func LocalSpawner() Spawner {
	return func(ctx context.Context, id byzantine.ID) (*Child, error) {
		return inGoroutine(ctx, Serve), nil
	}
}

// inGoroutine runs serve as a general's process in a goroutine of this
// process, its input and output over pipes.
func inGoroutine(ctx context.Context, serve func(ctx context.Context, in io.Reader, out io.Writer) error) *Child {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := serve(ctx, inR, outW)
		inR.CloseWithError(io.EOF)
		outW.CloseWithError(io.EOF)
		done <- err
	}()
	return &Child{In: inW, Out: outR, Wait: func() error { return <-done }}
}

// Launch runs cfg with every general in its own process (or goroutine)
// made by spawn, connected over TCP on loopback, and assembles the result.
// A general that dies after the run started (no report, or a report with
// an error) is marked Crashed in the result and the survivors' decisions
// are kept: the verdict then covers the loyal survivors. Launch returns an
// error wrapping ErrGeneral only when the run could not take place (a
// general could not be started or did not come up), or one wrapping
// ctx.Err() when ctx ends first.
func Launch(ctx context.Context, cfg byzantine.Config, spawn Spawner) (*byzantine.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := cfg.Generals
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	children := make([]*Child, 0, n)
	readers := make([]*json.Decoder, 0, n)
	defer func() {
		for _, c := range children {
			c.In.Close()
		}
		cancel() // every report is in, or the run failed: stop stragglers
		for _, c := range children {
			c.Wait()
		}
	}()
	for i := range n {
		c, err := spawn(ctx, byzantine.ID(i))
		if err != nil {
			return nil, fmt.Errorf("%w: starting general %d: %w", ErrGeneral, i, err)
		}
		children = append(children, c)
		readers = append(readers, json.NewDecoder(bufio.NewReader(c.Out)))
		if err := json.NewEncoder(c.In).Encode(assignment{Config: cfg, ID: byzantine.ID(i)}); err != nil {
			return nil, fmt.Errorf("%w: general %d: %w", ErrGeneral, i, err)
		}
	}
	var cluster Cluster
	for i, r := range readers {
		var p Peer
		if err := r.Decode(&p); err != nil {
			return nil, fmt.Errorf("%w: general %d did not start: %w", ErrGeneral, i, err)
		}
		cluster.Generals = append(cluster.Generals, p)
	}
	// Round deadlines count from start; leave the generals time to receive
	// the cluster and dial each other first. Rounds that every general
	// finishes end earlier, on the markers.
	start := time.Now().Add(max(cfg.RoundTimeout, 500*time.Millisecond))
	for i, c := range children {
		if err := json.NewEncoder(c.In).Encode(goSignal{Cluster: cluster, Start: start}); err != nil {
			return nil, fmt.Errorf("%w: general %d: %w", ErrGeneral, i, err)
		}
	}
	reports := make([]report, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range readers {
		wg.Go(func() {
			if err := r.Decode(&reports[i]); err != nil {
				errs[i] = fmt.Errorf("%w: general %d: no report: %w", ErrGeneral, i, err)
			} else if reports[i].Error != "" {
				errs[i] = fmt.Errorf("%w: general %d: %s", ErrGeneral, i, reports[i].Error)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		// The generals' processes were stopped too (by the same signal,
		// or killed when ctx ended): what each reported, or its missing
		// report, is the stop, said once.
		return nil, byzantine.StoppedError(ctx, "")
	}
	cfg.RunID = RunID(cluster, TermsOf(cfg, start))
	results := make([]byzantine.GeneralResult, n)
	traces := make([][]byzantine.TraceEvent, n)
	crashed := 0
	for i, r := range reports {
		if errs[i] != nil {
			id := byzantine.ID(i)
			strat := cfg.StrategyOf(id)
			results[i] = byzantine.GeneralResult{ID: id, Loyal: strat == "", Strategy: strat, Crashed: true}
			crashed++
			continue
		}
		results[i] = r.Result
		traces[i] = r.Trace
	}
	if crashed == n {
		return nil, errors.Join(errs...)
	}
	return byzantine.Assemble(cfg, results, traces...), nil
}

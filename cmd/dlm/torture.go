package main

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"dlm/checker"
	"dlm/checker/torture"
)

// newTortureCmd builds "dlm torture": the safety checker over real
// redis-server processes with real faults (package checker).
func newTortureCmd() *cobra.Command {
	var (
		scenario, reportPath, historyPath, checkPath string
		random, asJSON, list, verbose                bool
		seed                                         uint64
		faults                                       []string
	)
	d := torture.DefaultConfig("random")
	var (
		nodes, clients, resources            = d.Nodes, d.Clients, d.Resources
		ttl, nodeTimeout, duration, delay    = d.TTL, d.NodeTimeout, d.Duration, d.RestartDelay
		persistence, delayed, fencing, bound = false, false, false, time.Duration(0)
		byzantine, workers                   = 0, d.Workers
		clusterNodes, clusterReplicas        = 0, 0
		promotable                           = false
		adapter                              = defaultAdapter // the adapter users get, not torture.DefaultAdapter
		progress                             = 5 * time.Second
	)
	cmd := &cobra.Command{
		Use:   "torture --scenario NAME | --random | --list | --check HISTORY.json",
		Short: "Run Redlock clients against real redis-servers with real faults and check safety",
		Long: `dlm torture starts its own redis-server processes, puts a TCP proxy
(toxiproxy) in front of each for every group of clients, runs Redlock
clients, injects real faults (SIGKILL and restart with or without
persistence or delay, SIGSTOP, slow and cut links, clock jumps under
libfaketime, client pauses past the ttl; on nodes that are Redis Clusters,
with --cluster-nodes or the cluster scenarios, masters killed, paused,
failed over by hand, cut from their cluster while clients still reach
them, and slots migrated), records a history on one
monotonic clock and checks it: mutual exclusion, fencing (stale writes to a
protected register), linearizability of the register (porcupine) and
liveness.

Each named scenario reproduces one published argument about Redlock, and
its expected verdict follows from the configuration: for instance
restart-without-persistence must reproduce the violation a node that restarts without
persistence causes (it forgot its locks), while
the same fault with --delayed-restart or --persistence must not break
anything. Every run prints its seed; --seed replays the same choices.

Exit status: 0 when the outcome matches what the configuration promises
(no violation where safety is promised, the violation reproduced where the
scenario breaks it), 1 otherwise, 3 when the history cannot decide
(inconclusive: no successful acquisition, a check that ran out of time or
could not decide, values out of range; never reported as promised), 64 for
bad usage (including an output path that cannot be written, refused before
the run), 69 when this machine cannot run the scenario (redis-server or
libfaketime missing).

Scenarios (dlm torture --list for the expected verdicts):
  ` + strings.Join(torture.ScenarioNames(), ", "),
		Example: `  dlm torture --scenario restart-without-persistence
  dlm torture --scenario client-pause --fencing --report pause.html
  dlm torture --random --duration 60s --seed 42 --json
  dlm torture --random --cluster-nodes 2 --cluster-replicas 1 --fencing --duration 20m
  dlm torture --check history.json --scenario split-votes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if list {
				return listScenarios(out)
			}
			switch {
			case random && scenario != "" && scenario != "random":
				return usageErrorf("give either --scenario or --random, not both")
			case random:
				scenario = "random"
			case scenario == "" && checkPath == "":
				return usageErrorf("no scenario: give --scenario NAME (one of %s), --random, --list or --check FILE", strings.Join(torture.ScenarioNames(), ", "))
			case scenario == "":
				scenario = "split-votes"
			}
			cfg := torture.DefaultConfig(scenario)
			f := cmd.Flags()
			set := func(name string, apply func()) {
				if f.Changed(name) {
					apply()
				}
			}
			set("nodes", func() { cfg.Nodes = nodes })
			set("clients", func() { cfg.Clients = clients })
			set("resources", func() { cfg.Resources = resources })
			set("ttl", func() { cfg.TTL = ttl })
			set("node-timeout", func() { cfg.NodeTimeout = nodeTimeout })
			set("duration", func() { cfg.Duration = duration })
			set("restart-delay", func() { cfg.RestartDelay = delay; cfg.DelayedRestart = true })
			set("persistence", func() { cfg.Persistence = persistence })
			set("delayed-restart", func() { cfg.DelayedRestart = delayed })
			set("fencing", func() { cfg.Fencing = fencing })
			set("byzantine", func() { cfg.Byzantine = byzantine })
			cfg.Adapter = adapter
			set("workers", func() { cfg.Workers = workers })
			set("cluster-nodes", func() { cfg.ClusterNodes = clusterNodes })
			set("cluster-replicas", func() { cfg.ClusterReplicas = clusterReplicas })
			set("promotable-replicas", func() { cfg.PromotableReplicas = promotable })
			set("faults", func() { cfg.Faults = faults })
			set("liveness-bound", func() { cfg.LivenessBound = bound })
			if f.Changed("seed") {
				cfg.Seed = seed
			} else {
				var b [8]byte
				if _, err := rand.Read(b[:]); err != nil {
					return err
				}
				cfg.Seed = binary.LittleEndian.Uint64(b[:]) >> 1
			}
			if err := cfg.Validate(); err != nil {
				return withCode(exitUsage, err)
			}
			// Output paths are checked before a run that may take minutes.
			if err := firstErr(checkOutputPath("--history", historyPath), checkOutputPath("--report", reportPath)); err != nil {
				return err
			}
			var rep *torture.Report
			if checkPath != "" {
				h, err := checker.LoadHistory(checkPath)
				if err != nil {
					return withCode(exitUsage, err)
				}
				rep = torture.Analyze(cfg, h)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "dlm torture: %s (replay: %s)\n", cfg.Scenario, replayLine(cfg))
				var opts []torture.Option
				if self, err := os.Executable(); err == nil {
					opts = append(opts, torture.WithDLM(self)) // process-holders runs dlm lock processes
				}
				if verbose {
					opts = append(opts, torture.WithLog(cmd.ErrOrStderr()))
				}
				var err error
				stop := showProgress(cmd.ErrOrStderr(), progress)
				rep, err = torture.Run(cmd.Context(), cfg, opts...)
				stop()
				if errors.Is(err, torture.ErrEnvironment) {
					return withCode(exitUnavailable, err)
				}
				if err != nil {
					return err
				}
			}
			if historyPath != "" {
				if err := writeFile(historyPath, rep.History.WriteJSON); err != nil {
					return err
				}
			}
			if reportPath != "" {
				if err := writeFile(reportPath, rep.WriteHTML); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else if err := rep.WriteSummary(out); err != nil {
				return err
			}
			if rep.Inconclusive {
				return withCode(exitInconclusive, nil)
			}
			if !rep.Matches {
				return withCode(exitFailure, nil)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&scenario, "scenario", "", "scenario to run: "+strings.Join(torture.ScenarioNames(), ", "))
	fl.BoolVar(&random, "random", false, "random mode: faults from a seeded schedule for --duration")
	fl.BoolVar(&list, "list", false, "list the scenarios with what each promises, and exit")
	fl.Uint64Var(&seed, "seed", 0, "seed of every random choice (default: a fresh one, printed)")
	fl.IntVar(&nodes, "nodes", d.Nodes, "number of redis-server nodes")
	fl.DurationVar(&ttl, "ttl", d.TTL, "lock validity time of every acquisition")
	fl.DurationVar(&nodeTimeout, "node-timeout", d.NodeTimeout, "timeout of each request to a node")
	fl.DurationVar(&duration, "duration", d.Duration, "length of the looping scenarios and of --random")
	fl.IntVar(&clients, "clients", d.Clients, "contending clients of the looping scenarios (split-votes: twice as many)")
	fl.IntVar(&resources, "resources", d.Resources, "resources locked in --random mode")
	fl.BoolVar(&persistence, "persistence", false, "nodes keep an AOF with appendfsync always")
	fl.BoolVar(&delayed, "delayed-restart", false, "a crashed node stays down longer than the ttl before restarting; on by default in --random")
	fl.DurationVar(&delay, "restart-delay", 0, "delay of a delayed restart (implies --delayed-restart; default ttl + ttl/4)")
	fl.BoolVar(&fencing, "fencing", false, "clients take fencing tokens and the protected register rejects stale ones")
	fl.IntVar(&byzantine, "byzantine", 0, "clients tolerate this many lying nodes (redlock.WithByzantineNodes): quorum ceil((N+f+1)/2)")
	fl.StringVar(&adapter, "adapter", adapter, "node adapter of the clients: "+strings.Join(torture.Adapters(), " or ")+" (the default is that of the other subcommands)")
	fl.DurationVar(&progress, "progress", progress, "while a run lasts, say on stderr every this often how long it has run (0: never)")
	fl.IntVar(&workers, "workers", d.Workers, "Lock calls each client runs at once in the looping scenarios and --random (1 to 16); over rueidis the lock passes between them")
	fl.IntVar(&clusterNodes, "cluster-nodes", 0, "in --random, how many of the --nodes are Redis Clusters of 3 masters (the last ones): they get cluster faults (a master killed, paused, cut from its cluster while clients still reach it, failed over by hand, a slot migrated)")
	fl.IntVar(&clusterReplicas, "cluster-replicas", 0, "replicas per master of the --cluster-nodes (0 or 1; they never promote themselves: failovers are by hand, after the ttl)")
	fl.BoolVar(&promotable, "promotable-replicas", false, "cluster-master-partitioned: the replicas may promote themselves and the clients accept them (on by default there: the configuration that breaks safety)")
	fl.StringSliceVar(&faults, "faults", d.Faults, "fault kinds of --random: "+strings.Join(torture.AllFaults(), ", "))
	fl.DurationVar(&bound, "liveness-bound", 0, "longest a wanted resource may stay unheld with no fault active (default 2 x ttl)")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.StringVar(&reportPath, "report", "", "write an HTML timeline of the run to this file")
	fl.StringVar(&historyPath, "history", "", "write the recorded history as JSON to this file")
	fl.StringVar(&checkPath, "check", "", "check a stored history (JSON) instead of running; --scenario names what it promises")
	fl.BoolVarP(&verbose, "verbose", "v", false, "narrate the run's steps on stderr")
	return cmd
}

// showProgress prints on w, every interval, how long the run has lasted,
// until the function it returns is called (and has returned: nothing is
// printed after it). A zero or negative interval prints nothing.
func showProgress(w io.Writer, every time.Duration) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	start := time.Now()
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "dlm torture: running for %v\n", time.Since(start).Round(time.Second/10))
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// listScenarios prints each scenario with its rule and what its default
// configuration promises.
func listScenarios(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tRULE\tEXPECTED\tWHAT HAPPENS")
	for _, s := range torture.Scenarios() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Rule, torture.DefaultConfig(s.Name).Expect(), s.Summary)
	}
	return tw.Flush()
}

// checkOutputPath refuses (64) an output path that cannot be written: its
// directory must exist and take a new file, and the path must not be a
// directory. It creates nothing at path. An empty path is not asked for.
func checkOutputPath(flag, path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usageErrorf("%s %s: is a directory; give a file name", flag, path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".dlm-write-check-*")
	if err != nil {
		return usageErrorf("%s %s: cannot write there: %v", flag, path, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// writeFile writes path with write, reporting the path on error.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// replayLine is the command that replays the run cfg, the adapter always
// named: the configuration's own text leaves out its default adapter,
// which is not dlm's default.
func replayLine(cfg torture.Config) string {
	line := "dlm torture " + cfg.String()
	if !strings.Contains(line, " --adapter ") {
		a := cfg.Adapter
		if a == "" {
			a = torture.DefaultAdapter
		}
		line += " --adapter " + a
	}
	return line
}

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dlm/byzantine"
	"dlm/redlock/redlocktest"
)

// TestGeneralsCtrlCSaysOnce: Ctrl-C of a tcp run (SIGINT to dlm's whole
// process group, as a terminal sends it) ends the run at once and says
// so in one line, whatever the number of generals and instances that
// stopped, and whenever it comes: while the generals' processes start, or
// once every general listens (TestGeneralsStopBeforeDlmHearsOfIt forces
// the orders and the phase before any general). A silent traitor and a one-minute round keep the run
// waiting on its deadlines (about three minutes) until the signal. No
// process of the run is left.
// (Regression: the error joined one "run stopped" per general, each
// general's process printed its own, and an interactive run over tcp
// printed n x n of them. And, 1 of about 40 runs beside two busy loops,
// a Ctrl-C while the generals started said "general failed: general 3
// did not start: EOF": the general's process had stopped on the same
// Ctrl-C before dlm had heard of it.)
func TestGeneralsCtrlCSaysOnce(t *testing.T) {
	t.Parallel()
	perGeneral := []string{"generals", "--transport", "tcp", "--faulty", "3", "--strategy", "silent", "--round-timeout", "1m"}
	for _, tc := range []struct {
		name string
		args []string
		// when reports whether the Ctrl-C is due: the run reached the
		// phase the case stops it in.
		when func(pid int) bool
	}{
		{
			name: "a process per general, while they start",
			args: perGeneral,
			when: func(pid int) bool { return len(childrenOf(pid)) > 0 },
		},
		{
			name: "a process per general, under way",
			args: perGeneral,
			when: func(pid int) bool {
				listening := 0
				for _, k := range childrenOf(pid) {
					if socketsOf(k) > 0 {
						listening++
					}
				}
				return listening == 4
			},
		},
		{
			name: "interactive, generals in one process",
			args: []string{"generals", "--interactive", "--transport", "tcp", "--faulty", "3", "--strategy", "silent", "--round-timeout", "1m"},
			when: func(pid int) bool { return socketsOf(pid) >= 4 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, _, stderr := dlmCmd(t, nil, tc.args...)
			cmd.SysProcAttr.Setpgid = true // dlm leads its own group, as a shell's foreground job does
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			redlocktest.Eventually(t, 30*time.Second, func() bool { return tc.when(cmd.Process.Pid) }, "the run never reached the phase; stderr: %s", stderr)
			sent := time.Now()
			if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				t.Fatalf("dlm %s still ran 30s after Ctrl-C; stderr: %s", strings.Join(tc.args, " "), stderr)
			}
			took := time.Since(sent)
			if code := exitOf(err); code != exitCouldNotRun {
				t.Errorf("exit %d, want %d (the run was interrupted); stderr: %s", code, exitCouldNotRun, stderr)
			}
			out := strings.TrimSpace(stderr.String())
			if lines := strings.Split(out, "\n"); len(lines) != 1 || !strings.HasPrefix(out, "dlm: byzantine: run stopped") {
				t.Errorf("stderr has %d lines, want one saying the run stopped:\n%s", len(lines), out)
			}
			if n := strings.Count(out, "run stopped"); n != 1 {
				t.Errorf("stderr says %q %d times, want once:\n%.600s", "run stopped", n, out)
			}
			// dlm waited for its generals: nothing of its group is left.
			if err := syscall.Kill(-cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Errorf("a process of the run outlived dlm (signal 0 to its group: %v)", err)
			}
			t.Logf("ended %v after Ctrl-C", took.Round(time.Millisecond))
		})
	}
}

// TestGeneralsStopBeforeDlmHearsOfIt forces the orders of a Ctrl-C that
// TestGeneralsCtrlCSaysOnce can only happen upon: the generals' processes
// are stopped by a signal that dlm (ctx) has not heard of yet, or ever, at
// start-up or under way; and the signal came before any general started.
// Each is a run stopped (byzantine.ErrStopped, so that dlm says it once,
// exit 69), and every process that started was waited for. Failed before
// in every case, with "tcp: general failed: starting general 0: context
// canceled"; "tcp: general failed: general 2 did not start: EOF"; and
// four joined "tcp: general failed: general N: byzantine: run stopped:
// general N round 0: context canceled".
func TestGeneralsStopBeforeDlmHearsOfIt(t *testing.T) {
	t.Parallel()
	cfg := byzantine.DefaultConfig()
	cfg.Faulty = []byzantine.Traitor{{ID: 3, Strategy: byzantine.Silent}}
	cfg.RoundTimeout = time.Minute // nothing ends the run but the stop
	mark := "DLM_TEST_GENERAL=" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	serve := func(ctx context.Context, _ byzantine.ID) *exec.Cmd {
		cmd := exec.CommandContext(ctx, dlmBin(), "generals", "serve")
		cmd.Env = append(os.Environ(), mark)
		return cmd
	}
	for _, tc := range []struct {
		name string
		// before: the signal came before launchProcesses (ctx ended).
		before  bool
		command func(ctx context.Context, id byzantine.ID) *exec.Cmd
		// underWay: once every general's process talks to a peer, the
		// test sends each one SIGINT (not dlm).
		underWay bool
	}{
		{name: "before any general started", before: true, command: serve},
		{name: "a general at start-up", command: func(ctx context.Context, id byzantine.ID) *exec.Cmd {
			if id == 2 {
				// Stopped before its handler was installed.
				return exec.CommandContext(ctx, "sh", "-c", "kill -INT $$")
			}
			return serve(ctx, id)
		}},
		{name: "every general under way", command: serve, underWay: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.before {
				cancel()
			}
			var mu sync.Mutex
			var cmds []*exec.Cmd
			command := func(ctx context.Context, id byzantine.ID) *exec.Cmd {
				cmd := tc.command(ctx, id)
				mu.Lock()
				cmds = append(cmds, cmd)
				mu.Unlock()
				return cmd
			}
			stopped := make(chan struct{})
			if tc.underWay {
				go func() {
					defer close(stopped)
					// Polling /proc, bounded by the test's timeout
					// (the run waits a minute a round for the signal).
					for ctx.Err() == nil {
						kids := markedChildren(mark)
						linked := 0
						for _, k := range kids {
							if socketsOf(k) >= 2 { // listening and a link
								linked++
							}
						}
						if linked == cfg.Generals {
							for _, k := range kids {
								_ = syscall.Kill(k, syscall.SIGINT)
							}
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
				}()
			} else {
				close(stopped)
			}
			res, err := launchProcesses(ctx, cfg, command)
			<-stopped
			if !errors.Is(err, byzantine.ErrStopped) || res != nil {
				t.Errorf("launch = %v, %v; want no result and an error wrapping ErrStopped", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, cmd := range cmds {
				switch {
				case tc.before && cmd.Process != nil:
					t.Errorf("general %d's process started after the stop", i)
				case cmd.Process != nil && cmd.ProcessState == nil:
					t.Errorf("general %d's process was not waited for", i)
				}
			}
		})
	}
}

// markedChildren returns this process's children whose environment holds
// mark (the generals' processes of one test).
func markedChildren(mark string) []int {
	var out []int
	for _, k := range childrenOf(os.Getpid()) {
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(k), "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), mark) {
			out = append(out, k)
		}
	}
	return out
}

// socketsOf counts the sockets process pid holds open.
func socketsOf(pid int) int {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

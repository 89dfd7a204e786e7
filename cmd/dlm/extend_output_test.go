package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// TestExtendHandleUndeliverable: dlm extend whose standard output's
// reader is gone before the new handle is written exits 73 and says so,
// without the handle or its value; the extension stays (the lock's keys
// live past the old ttl) and the old handle, which names the same lock,
// still releases it.
// Failed before: "dlm extend: signal: broken pipe, want exit 73" (killed
// by SIGPIPE, nothing said).
func TestExtendHandleUndeliverable(t *testing.T) {
	t.Parallel()
	c := redlocktest.Start(t, 3)
	nodes := strings.Join(c.URLs(), ",")
	acq := runDLM(t, 30*time.Second, nil, "acquire", "--nodes", nodes, "--ttl", "20s", "job")
	if acq.code != 0 {
		t.Fatalf("dlm acquire: exit %d; stderr %s", acq.code, acq.stderr)
	}
	handle := strings.TrimSpace(acq.stdout)
	var h redlock.Handle
	if err := h.UnmarshalText([]byte(handle)); err != nil {
		t.Fatal(err)
	}

	cmd, _, stderr := dlmCmd(t, nil, "extend", "--nodes", nodes, "--ttl", "10m", handle)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the handle is written
	defer w.Close()
	cmd.Stdout = w
	runErr := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(runErr, &ee) || ee.ExitCode() != exitCantCreate {
		t.Errorf("dlm extend: %v, want exit %d; stderr %q", runErr, exitCantCreate, stderr.String())
	}
	if !strings.Contains(stderr.String(), "the old handle still names the lock") {
		t.Errorf("stderr %q does not say the old handle still names the lock", stderr.String())
	}
	if strings.Contains(stderr.String(), h.Value) || strings.Contains(stderr.String(), handle) {
		t.Errorf("stderr %q shows the lock's value", stderr.String())
	}
	// The extension holds on a quorum of the nodes, as every extension
	// does: dlm extend answers once a quorum extended, and the third node's
	// extension may not have landed when it exits (a quiet fresh-clone run:
	// "127.0.0.1:14364: the key lives 18.829s more, want the extension to
	// 10m to stay", the other two extended).
	extended, ttls := 0, []string{}
	for _, s := range c.Servers {
		ttl, _, err := s.Inspector().TTL(t.Context(), redlock.DefaultKeyPrefix+"job")
		if err != nil {
			t.Fatal(err)
		}
		if ttl >= time.Minute {
			extended++
		}
		ttls = append(ttls, s.Addr()+": "+ttl.String())
	}
	if extended < len(c.Servers)/2+1 {
		t.Errorf("the extension to 10m stays on %d of %d nodes, want a quorum (%s)", extended, len(c.Servers), strings.Join(ttls, ", "))
	}
	if rel := runDLM(t, 30*time.Second, nil, "release", "--nodes", nodes, handle); rel.code != 0 {
		t.Errorf("dlm release with the old handle: exit %d; stderr %s", rel.code, rel.stderr)
	}
	if st := runDLM(t, 30*time.Second, nil, "status", "--nodes", nodes, "job"); !strings.Contains(st.stdout, "job: free") {
		t.Errorf("the old handle did not release the lock: %s", st.stdout)
	}
}

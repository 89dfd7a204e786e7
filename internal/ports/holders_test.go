package ports

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Holders names the process that listens on a port, with its state, and
// nothing for a port no socket is bound to.
func TestHoldersNamesTheListener(t *testing.T) {
	p := reserveWithProc(t)
	if hs := Holders(p.Number()); len(hs) != 0 {
		t.Errorf("Holders(%d) of a port nothing is bound to = %q, want none", p.Number(), hs)
	}
	l, err := net.Listen("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	hs := Holders(p.Number())
	want := "pid " + strconv.Itoa(os.Getpid()) + " ("
	if len(hs) != 1 || !strings.HasPrefix(hs[0], want) || !strings.HasSuffix(hs[0], ", LISTEN") {
		t.Errorf("Holders(%d) with this process listening = %q, want one %q..., LISTEN", p.Number(), hs, want)
	}
}

// A port that an earlier user closed its connections on first keeps them
// in TIME_WAIT for up to a minute; they hold no bind, so Holders leaves
// them out. Failed before, in a fresh-clone run of the suite, where
// another test had used the reserved port moments before:
// "Holders(17020) of a port nothing is bound to = ["no process,
// TIME_WAIT" ...], want none".
func TestHoldersLeavesOutTimeWait(t *testing.T) {
	p := reserveWithProc(t)
	l, err := net.Listen("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	// The listener's side closes first, so its socket, bound to the port,
	// goes to TIME_WAIT once the client's side closes too.
	_ = s.Close()
	_ = l.Close()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read a byte from a closed connection")
	}
	_ = c.Close()
	waitFor(t, "a socket in TIME_WAIT on the port", func() bool { return timeWaitOn(p.Number()) })
	if hs := Holders(p.Number()); len(hs) != 0 {
		t.Errorf("Holders(%d) with only TIME_WAIT sockets on it = %q, want none", p.Number(), hs)
	}
}

// timeWaitOn reports whether a socket bound to port is in TIME_WAIT
// (state 06 of /proc/net/tcp).
func timeWaitOn(port int) bool {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		fs := strings.Fields(line)
		if len(fs) < 4 {
			continue
		}
		_, hex, _ := strings.Cut(fs[1], ":")
		if p, err := strconv.ParseUint(hex, 16, 16); err == nil && int(p) == port && fs[3] == "06" {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing the test after ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling, bounded by the deadline
	}
}

// reserveWithProc reserves a port for the test, released when it ends, and
// skips the test where /proc/net/tcp, which Holders reads, is missing.
func reserveWithProc(t *testing.T) *Port {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: Holders reads nothing here")
	}
	p, err := Reserve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Release)
	return p
}

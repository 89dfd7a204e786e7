package ports

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Holders names the process that listens on a port, with its state, and
// nothing for a port no socket is bound to.
func TestHoldersNamesTheListener(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: Holders reads nothing here")
	}
	p, err := Reserve()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
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

package redisproc

import (
	"os"
	"testing"
)

// TestAKilledServersPortIsNotDrawn: a server's port stays reserved while
// it is killed, until its restart: another caller that draws that port
// draws again, and the restart finds its port free. Checked free by a bind
// alone, the port was drawn by another package's test, whose redis-server
// took it before the restart (checker/torture's rolling restart, in a
// fresh-clone run: "redisproc: the port is served by another process:
// port 14106 answers as redis-server pid 19370, not the one started").
// Once the server is closed, the port can be drawn again.
func TestAKilledServersPortIsNotDrawn(t *testing.T) {
	if !Available() {
		if os.Getenv("CI") != "" || os.Getenv("DLM_REQUIRE_REDIS") != "" {
			t.Fatal("redis-server not found on PATH (CI or DLM_REQUIRE_REDIS is set)")
		}
		t.Skip("SKIPPED: redis-server not found on PATH (Debian: apt-get install redis-server)")
	}
	p, err := Start(t.Context(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	port := p.Port()
	p.Kill()
	first := func(port int) func() int { // draws port, then at random
		drawn := false
		return func() int {
			if drawn {
				return randomPort()
			}
			drawn = true
			return port
		}
	}
	r, err := reserve(first(port))
	if err != nil {
		t.Fatal(err)
	}
	if r.port == port {
		t.Errorf("the port %d of a killed server, to be restarted, was drawn by another caller", port)
	}
	r.release()
	if err := p.Restart(t.Context(), 0); err != nil {
		t.Fatalf("restart on the port kept: %v", err)
	}

	p.Close()
	again, err := reserve(first(port))
	if err != nil {
		t.Fatal(err)
	}
	defer again.release()
	if again.port != port {
		t.Errorf("the port %d of a closed server is still reserved (drawn %d instead)", port, again.port)
	}
}

package ports

import (
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// first draws port, then at random.
func first(port int) func() int {
	drawn := false
	return func() int {
		if drawn {
			return Low + int(uint(port*7919+1)%Span) // another port, deterministic
		}
		drawn = true
		return port
	}
}

// reservedElsewhere reports whether port's lock file is locked by another
// reservation.
func reservedElsewhere(t *testing.T, port int) bool {
	t.Helper()
	fd, err := syscall.Open(filepath.Join(Dir(), strconv.Itoa(port)), syscall.O_RDONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(fd, syscall.LOCK_UN)
		return false
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return true
}

// A reserved port, and its bus port, are not drawn by another caller
// (another process alike: the lock is the kernel's, per open file); once
// released, they can be.
func TestAReservedPortIsNotDrawn(t *testing.T) {
	p, err := Reserve()
	if err != nil {
		t.Fatal(err)
	}
	port := p.Number()
	if port < Low || port >= Low+Span {
		t.Fatalf("Reserve = %d, want a port in %d-%d", port, Low, Low+Span-1)
	}
	if !reservedElsewhere(t, port) || !reservedElsewhere(t, port+BusOffset) {
		t.Errorf("port %d or its bus port %d is not locked while reserved", port, port+BusOffset)
	}
	run, err := reserveRun(1, first(port))
	if err != nil {
		t.Fatal(err)
	}
	if run[0].Number() == port {
		t.Errorf("the reserved port %d was drawn by another caller", port)
	}
	run[0].Release()
	p.Release()
	p.Release() // twice is harmless
	again, err := reserveRun(1, first(port))
	if err != nil {
		t.Fatal(err)
	}
	defer again[0].Release()
	if again[0].Number() != port {
		t.Errorf("the released port %d is still reserved (drawn %d instead)", port, again[0].Number())
	}
}

// A Port never released stays reserved after garbage collections: it
// holds raw descriptors, which no finalizer closes. Failed with an
// *os.File dropped by FreePort: "port 11530 from FreePort is no longer
// reserved after a GC".
func TestAnUnreleasedPortOutlivesAGC(t *testing.T) {
	p, err := Reserve()
	if err != nil {
		t.Fatal(err)
	}
	port := p.Number()
	p = nil
	runtime.GC()
	runtime.GC()
	if !reservedElsewhere(t, port) {
		t.Errorf("port %d, reserved and never released, is no longer reserved after a GC", port)
	}
}

// The reservations' directory is the machine's, whatever TMPDIR says: a
// test that sets TMPDIR (redlock's fencing test does) must meet the
// others' reservations. Failed with os.TempDir: "port 10097, reserved,
// was drawn again once TMPDIR changed".
func TestTheDirectoryIgnoresTMPDIR(t *testing.T) {
	before := Dir()
	t.Setenv("TMPDIR", t.TempDir())
	if after := Dir(); after != before {
		t.Errorf("Dir() = %s once TMPDIR changed, was %s", after, before)
	}
}

// A run is consecutive, each port with its bus port reserved.
func TestReserveRun(t *testing.T) {
	run, err := ReserveRun(3)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range run {
		defer p.Release()
		if p.Number() != run[0].Number()+i {
			t.Errorf("run[%d] = %d, want %d", i, p.Number(), run[0].Number()+i)
		}
		if !reservedElsewhere(t, p.Number()+BusOffset) {
			t.Errorf("the bus port of %d is not reserved", p.Number())
		}
	}
	if _, err := ReserveRun(0); err == nil {
		t.Error("ReserveRun(0) = nil error")
	}
}

package redisproc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// The ports of this package's servers are drawn below Linux's ephemeral
// range (32768-60999): a process restarts on its port (Restart), and a
// port of the ephemeral range, free in between, can be taken by any
// outgoing connection of the machine as its source port; below it, only by
// a process that binds it on purpose. Data ports are 10000-19999, so that
// a cluster bus port (the data port plus 10000) is 20000-29999 and never
// another server's data port.
//
// A drawn port is also reserved, for as long as the server may need it
// again (a killed process is restarted on its port): the other callers of
// this package, in this test process or any other on the machine, never
// draw a port reserved. Checked free by a bind alone, a killed server's
// port was drawn by another package's test, whose redis-server took it
// before the restart ("rolling restart of node2: redisproc: the port is
// served by another process", checker/torture in a fresh-clone run).
const (
	portBase = 10000
	portSpan = 10000
)

// portsDir is the directory of the reservations' lock files, one per
// port, shared by every process of the machine.
func portsDir() string { return filepath.Join(os.TempDir(), "dlm-redisproc-ports") }

// reservation holds a port: an exclusive flock(2) on the port's file in
// portsDir, which the kernel drops when the file is closed or its process
// ends, however it ends. The file is never removed (a removal would let a
// second holder lock a new file of the same name); there is at most one
// per port.
type reservation struct {
	port int
	f    *os.File
}

// release gives the port back to the other callers.
func (r *reservation) release() {
	if r != nil && r.f != nil {
		_ = r.f.Close()
		r.f = nil
	}
}

// randomPort draws a data port at random.
func randomPort() int { return portBase + rand.IntN(portSpan) }

// reserve draws ports with draw until it finds one that no other caller
// reserved and that is free to bind now, and reserves it.
func reserve(draw func() int) (*reservation, error) {
	dir := portsDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("redisproc: the port reservations' directory: %w", err)
	}
	_ = os.Chmod(dir, 0o777|os.ModeSticky) // every user's servers reserve there
	var err error
	for range 100 {
		port := draw()
		// Read-only: a file another user created can still be locked.
		f, ferr := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDONLY|os.O_CREATE, 0o644)
		if ferr != nil {
			err = fmt.Errorf("redisproc: reserving port %d: %w", port, ferr)
			continue
		}
		if ferr := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); ferr != nil {
			_ = f.Close()
			err = fmt.Errorf("redisproc: port %d is reserved by another server: %w", port, ferr)
			continue
		}
		l, lerr := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if lerr != nil {
			_ = f.Close()
			err = lerr
			continue
		}
		_ = l.Close()
		return &reservation{port: port, f: f}, nil
	}
	if err == nil {
		err = errors.New("redisproc: no port drawn")
	}
	return nil, err
}

// FreePort returns a loopback port that is free now and reserved for the
// rest of the calling process's life: no server of this package, in any
// process of the machine, is started on it meanwhile, so that the caller
// can start a server there, and start it again after a kill. It is drawn
// at random from 10000-19999, below Linux's ephemeral range, as is the
// cluster bus port of a server on it (the port plus 10000).
func FreePort() (int, error) {
	r, err := reserve(randomPort)
	if err != nil {
		return 0, err
	}
	return r.port, nil // held until the process ends
}

// Package ports hands out loopback TCP ports to the servers that dlm's
// tests, checker and demo start (redis-server processes, proxies,
// generals), reserved against each other across every process of the
// machine, for as long as a server may listen there again.
//
// A port only checked free (bound and closed again) can be drawn by
// another test process before its server binds it, or while a killed
// server waits for its restart on the same port; it was, more than once
// ("redisproc: the port is served by another process: port 14106 answers
// as redis-server pid 19370, not the one started"). A reservation is an
// exclusive flock(2) on a file named after the port in one directory of
// the machine, Dir; the kernel drops it when the reservation is released
// or its process ends, however it ends. Every caller of this package
// draws only ports it could lock, so reservations never meet.
//
// Ports are drawn from 10000-19999, below Linux's ephemeral range
// (32768-60999), whose ports any outgoing connection of the machine can
// take as its source port; each reservation holds the port plus 10000 as
// well (20000-29999), a Redis Cluster server's bus port, so that no other
// server is given it.
package ports

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

const (
	// Low is the lowest port drawn, Span how many are drawn from.
	Low, Span = 10000, 10000
	// BusOffset is what a Redis Cluster server adds to its port for its
	// bus port (cluster-port 0); a reservation holds that port too.
	BusOffset = 10000
)

// Dir is the directory of the reservations' lock files, the same for
// every process of the machine: /tmp, whatever TMPDIR says (a test that
// sets TMPDIR must still meet the others' reservations).
func Dir() string {
	base := "/tmp"
	if st, err := os.Stat(base); err != nil || !st.IsDir() {
		base = os.TempDir()
	}
	return filepath.Join(base, "dlm-ports")
}

// Port is a reserved loopback port. Release gives it back; a Port never
// released is held until its process ends (it holds only file
// descriptors, which no garbage collection closes).
type Port struct {
	n   int
	fds []int
}

// Number returns the port number.
func (p *Port) Number() int { return p.n }

// Addr returns 127.0.0.1:port.
func (p *Port) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.n) }

// Release gives the port back to the other callers. It is safe to call
// more than once.
func (p *Port) Release() {
	if p == nil {
		return
	}
	for _, fd := range p.fds {
		_ = syscall.Close(fd)
	}
	p.fds = nil
}

// Reserve returns a port free now, reserved with its bus port until
// Release.
func Reserve() (*Port, error) {
	ps, err := ReserveRun(1)
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// ReserveRun returns n consecutive ports free now, each reserved with its
// bus port until its Release (a `dlm node --cluster n`'s masters).
func ReserveRun(n int) ([]*Port, error) {
	if n < 1 || n > Span {
		return nil, fmt.Errorf("ports: a run of %d ports: want 1 to %d", n, Span)
	}
	return reserveRun(n, func() int { return Low + rand.IntN(Span-n+1) })
}

// reserveRun is ReserveRun with the first port of each try drawn by draw.
func reserveRun(n int, draw func() int) ([]*Port, error) {
	dir := Dir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("ports: the reservations' directory: %w", err)
	}
	_ = os.Chmod(dir, 0o777|os.ModeSticky) // every user's processes reserve there
	var err error
	for range 200 {
		base := draw()
		run := make([]*Port, 0, n)
		for i := range n {
			var p *Port
			if p, err = reserveOne(dir, base+i); err != nil {
				break
			}
			run = append(run, p)
		}
		if len(run) == n {
			return run, nil
		}
		for _, p := range run {
			p.Release()
		}
	}
	if err == nil {
		err = errors.New("ports: none drawn")
	}
	return nil, fmt.Errorf("ports: no free run of %d ports found: %w", n, err)
}

// reserveOne reserves port and its bus port, free to bind now.
func reserveOne(dir string, port int) (*Port, error) {
	p := &Port{n: port}
	for _, q := range []int{port, port + BusOffset} {
		// Read-only: a file another user made can be locked all the
		// same. Raw descriptors, close-on-exec: a child process (a
		// redis-server) must not hold the reservation.
		fd, err := syscall.Open(filepath.Join(dir, strconv.Itoa(q)), syscall.O_RDONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			p.Release()
			return nil, fmt.Errorf("ports: reserving port %d: %w", q, err)
		}
		p.fds = append(p.fds, fd)
		if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			p.Release()
			return nil, fmt.Errorf("ports: port %d is reserved by another server: %w", q, err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
		if err != nil {
			p.Release()
			return nil, err
		}
		_ = l.Close()
	}
	return p, nil
}

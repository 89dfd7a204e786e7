package redlocktest

import (
	"errors"
	"strconv"
	"syscall"
	"testing"

	"dlm/internal/ports"
)

// RefusingAddr returns a loopback address where nothing listens and
// nothing can start listening until t ends: every connection to it is
// refused. The port is reserved for t (dlm/internal/ports: below the
// ephemeral range, so that no outgoing connection takes it as its source
// port, and given to no other server of dlm's) and held by a socket bound to it that never listens. That socket
// is bound without SO_REUSEADDR, so the kernel refuses the port to every
// other bind, a redis-server's or a Go listener's included; a port only
// checked free and closed again could be handed to another test's server
// meanwhile, which would then answer there.
func RefusingAddr(t testing.TB) string {
	t.Helper()
	var err error
	for range 100 {
		var p *ports.Port
		if p, err = ports.Reserve(); err != nil {
			continue
		}
		var fd int
		if fd, err = holdPort(p.Number()); err != nil {
			p.Release()
			continue // taken by a process that does not reserve: draw again
		}
		t.Cleanup(func() { _ = syscall.Close(fd); p.Release() })
		return p.Addr()
	}
	t.Fatalf("redlocktest: no port below the ephemeral range could be held: %v", err)
	return ""
}

// holdPort binds a TCP socket to 127.0.0.1:port without listening on it
// and without SO_REUSEADDR, and returns its descriptor.
func holdPort(port int) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		_ = syscall.Close(fd)
		return -1, errors.Join(errors.New("redlocktest: bind 127.0.0.1:"+strconv.Itoa(port)), err)
	}
	return fd, nil
}

package tcp

import (
	"errors"
	"syscall"
)

// deferAcceptSeconds is how long the kernel holds a connection that sent
// nothing before it hands it over anyway (TCP_DEFER_ACCEPT).
const deferAcceptSeconds = 5

// listenControl asks the kernel to hand a connection to Accept only once
// its first data (a dialer's hello) has arrived: a stranger's connection
// that sends nothing never reaches the general, and a loyal dialer's
// hello is there to be read when its connection is accepted.
func listenControl(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT, deferAcceptSeconds)
	})
	return errors.Join(err, serr)
}

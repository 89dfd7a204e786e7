//go:build unix

package tcp

import (
	"net"
	"syscall"
)

// readReady reads into buf what conn has already received, without
// waiting, and returns how many bytes it read.
func readReady(conn net.Conn, buf []byte) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Read(func(fd uintptr) bool {
		if k, err := syscall.Read(int(fd), buf); err == nil && k > 0 {
			n = k
		}
		return true // done, whatever was there: never wait
	})
	return n
}

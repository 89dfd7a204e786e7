//go:build !linux

package tcp

import "syscall"

// listenControl sets nothing on systems without TCP_DEFER_ACCEPT: a
// connection may then be accepted before its hello arrives, and is
// spared for helloGrace to send it.
func listenControl(_, _ string, _ syscall.RawConn) error { return nil }

//go:build !unix

package tcp

import "net"

// readReady reads nothing where the socket cannot be read without
// waiting: the hello is then read by the connection's own goroutine.
func readReady(net.Conn, []byte) int { return 0 }

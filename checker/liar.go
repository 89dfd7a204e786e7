package checker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// liar is a lying Redis node for the Byzantine scenario: a RESP proxy in
// front of a real redis-server that answers +OK to every SET without
// performing it, and forwards every other command. A client that trusts it
// counts a lock it does not hold.
type liar struct {
	ln       net.Listener
	upstream string
	lies     atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// startLiar listens on a free loopback port in front of upstream.
func startLiar(upstream string) (*liar, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &liar{ln: ln, upstream: upstream, conns: map[net.Conn]bool{}}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// addr is the liar's host:port.
func (l *liar) addr() string { return l.ln.Addr().String() }

func (l *liar) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = true
	return true
}

func (l *liar) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		if !l.track(c) {
			c.Close()
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.serve(c)
		}()
	}
}

// serve relays one client connection, command by command.
func (l *liar) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", l.upstream)
	if err != nil {
		return
	}
	if !l.track(up) {
		up.Close()
		return
	}
	defer up.Close()
	cr, ur := bufio.NewReader(c), bufio.NewReader(up)
	for {
		raw, args, err := readRESP(cr)
		if err != nil {
			return
		}
		if len(args) > 0 && strings.EqualFold(args[0], "SET") {
			l.lies.Add(1)
			if _, err := io.WriteString(c, "+OK\r\n"); err != nil {
				return
			}
			continue
		}
		if _, err := up.Write(raw); err != nil {
			return
		}
		reply, _, err := readRESP(ur)
		if err != nil {
			return
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

// close stops the liar and drops its connections.
func (l *liar) close() {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.ln.Close()
	l.wg.Wait()
}

// readRESP reads one RESP2 value and returns its raw bytes and, for an
// array of bulk strings (a command), its elements.
func readRESP(r *bufio.Reader) (raw []byte, args []string, err error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, nil, errors.New("resp: line without CRLF")
	}
	raw = line
	body := string(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':':
		return raw, nil, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, nil, fmt.Errorf("resp: bulk length %q", body)
		}
		if n < 0 {
			return raw, nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, nil, err
		}
		return append(raw, buf...), []string{string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, nil, fmt.Errorf("resp: array length %q", body)
		}
		for range max(n, 0) {
			elem, a, err := readRESP(r)
			if err != nil {
				return nil, nil, err
			}
			raw = append(raw, elem...)
			args = append(args, a...)
		}
		return raw, args, nil
	}
	return nil, nil, fmt.Errorf("resp: unexpected type byte %q", line[0])
}

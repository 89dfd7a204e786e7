package redisproc

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

// LieRule decides, for one command given as its arguments (the command name
// first, as sent), whether a Liar lies, and if so the complete RESP reply it
// sends instead of forwarding the command.
type LieRule func(args []string) (reply string, lie bool)

// LieOnSet answers +OK to every SET without performing it: the lie of a
// node that claims to have locked a key it did not lock.
func LieOnSet(args []string) (string, bool) {
	if strings.EqualFold(args[0], "SET") {
		return "+OK\r\n", true
	}
	return "", false
}

// Liar is a lying Redis node, for tests and the checker's scenarios of
// Byzantine mode: a RESP proxy on a free loopback port in front of a real
// redis-server. Each command is checked against the rules in order; the
// first that lies answers it, and a command no rule lies about is forwarded
// to the server and its reply relayed. Commands are handled one at a time
// per connection, in order. Its methods are safe for concurrent use.
type Liar struct {
	ln      net.Listener
	backend string
	rules   []LieRule
	lies    atomic.Int64
	wg      sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// StartLiar starts a Liar in front of the server at backend (host:port) with
// the given rules (LieOnSet when none are given). Close stops it.
func StartLiar(backend string, rules ...LieRule) (*Liar, error) {
	if len(rules) == 0 {
		rules = []LieRule{LieOnSet}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redisproc: liar: %w", err)
	}
	l := &Liar{ln: ln, backend: backend, rules: rules, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// Addr returns the liar's host:port.
func (l *Liar) Addr() string { return l.ln.Addr().String() }

// URL returns the liar's redis:// URL.
func (l *Liar) URL() string { return "redis://" + l.Addr() }

// Lies returns how many commands the liar has lied about.
func (l *Liar) Lies() int64 { return l.lies.Load() }

// Close stops the liar and drops its connections.
func (l *Liar) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	_ = l.ln.Close()
	for c := range l.conns {
		_ = c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// track registers a connection to close with the liar; false once closed.
func (l *Liar) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.conns[c] = struct{}{}
	return true
}

func (l *Liar) untrack(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.mu.Unlock()
	_ = c.Close()
}

func (l *Liar) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		if !l.track(c) {
			_ = c.Close()
			return
		}
		l.wg.Add(1)
		go l.serve(c)
	}
}

// serve handles one client connection, with its own connection to the
// server, opened on the first forwarded command.
func (l *Liar) serve(c net.Conn) {
	defer l.wg.Done()
	defer l.untrack(c)
	in := bufio.NewReader(c)
	var back net.Conn
	var bin *bufio.Reader
	defer func() {
		if back != nil {
			l.untrack(back)
		}
	}()
	for {
		raw, args, err := readCommand(in)
		if err != nil {
			return
		}
		if reply, ok := l.lie(args); ok {
			l.lies.Add(1)
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
			continue
		}
		if back == nil {
			if back, err = net.Dial("tcp", l.backend); err != nil {
				back = nil
				_, _ = fmt.Fprintf(c, "-ERR liar: backend: %v\r\n", err)
				return
			}
			if !l.track(back) {
				_ = back.Close()
				back = nil
				return
			}
			bin = bufio.NewReader(back)
		}
		if _, err := back.Write(raw); err != nil {
			return
		}
		reply, err := readValue(bin, nil)
		if err != nil {
			return
		}
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

func (l *Liar) lie(args []string) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	for _, r := range l.rules {
		if reply, ok := r(args); ok {
			return reply, true
		}
	}
	return "", false
}

// errProtocol is a malformed RESP stream.
var errProtocol = errors.New("redlocktest: liar: malformed RESP")

// readCommand reads one command, an array of bulk strings, returning its
// raw bytes and its arguments.
func readCommand(r *bufio.Reader) ([]byte, []string, error) {
	raw, err := readValue(r, nil)
	if err != nil {
		return nil, nil, err
	}
	if raw[0] != '*' {
		return nil, nil, errProtocol
	}
	// Parse the arguments back out of the raw array.
	br := bufio.NewReader(strings.NewReader(string(raw)))
	head, _ := br.ReadString('\n')
	n, err := strconv.Atoi(strings.TrimRight(head[1:], "\r\n"))
	if err != nil || n < 0 {
		return nil, nil, errProtocol
	}
	args := make([]string, 0, n)
	for range n {
		line, err := br.ReadString('\n')
		if err != nil || line[0] != '$' {
			return nil, nil, errProtocol
		}
		size, err := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
		if err != nil || size < 0 {
			return nil, nil, errProtocol
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, nil, errProtocol
		}
		args = append(args, string(b[:size]))
	}
	return raw, args, nil
}

// readValue appends one complete RESP2 or RESP3 value, read from r, to buf.
func readValue(r *bufio.Reader, buf []byte) ([]byte, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errProtocol
	}
	buf = append(buf, line...)
	count := func() (int, error) {
		n, err := strconv.Atoi(string(line[1 : len(line)-2]))
		if err != nil {
			return 0, errProtocol
		}
		return n, nil
	}
	switch line[0] {
	case '+', '-', ':', '_', '#', ',', '(':
		return buf, nil
	case '$', '=', '!': // bulk, verbatim, bulk error
		n, err := count()
		if err != nil || n < 0 {
			return buf, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		return append(buf, b...), nil
	case '*', '~', '>', '%', '|': // array, set, push, map, attribute
		n, err := count()
		if err != nil || n < 0 {
			return buf, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if buf, err = readValue(r, buf); err != nil {
				return nil, err
			}
		}
		return buf, nil
	}
	return nil, errProtocol
}

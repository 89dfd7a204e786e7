package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// The live view of dlm demo is drawn with a handful of ANSI sequences on a
// terminal in raw mode. No terminal library is linked: the one used before
// queried the terminal from its package initialisation, in every dlm
// process (dlm lock, its guard, dlm status), and waited up to 5 s for an
// answer on a terminal that gives none. Only runTUI, which dlm demo calls
// on a terminal, touches the terminal, and it asks it nothing.

// runTUI shows the live view until the demo finishes (or q, Ctrl-C or
// Esc, which cancel it), leaving the last frame on the terminal.
func (d *demo) runTUI(stdin io.Reader, stdout io.Writer, cancel context.CancelFunc, finished <-chan struct{}) error {
	m := demoModel{d: d, st: newDemoStyles()}
	out := rawWriter(stdout)
	in, _ := stdin.(*os.File)
	if in != nil && term.IsTerminal(int(in.Fd())) {
		old, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return fmt.Errorf("put the terminal in raw mode: %w", err)
		}
		defer func() { _ = term.Restore(int(in.Fd()), old) }()
		keysDone := make(chan struct{})
		stop := make(chan struct{})
		go func() { defer close(keysDone); readQuitKeys(int(in.Fd()), stop, cancel) }()
		defer func() { close(stop); <-keysDone }()
	}
	const hide, show = "\x1b[?25l", "\x1b[?25h"
	draw := func() error {
		// Home, the frame, then clear what the previous frame left below.
		_, err := io.WriteString(out, "\x1b[H"+strings.ReplaceAll(m.View(), "\n", "\x1b[K\r\n")+"\x1b[J")
		return err
	}
	if _, err := io.WriteString(out, hide+"\x1b[2J"); err != nil {
		return err
	}
	defer func() { _, _ = io.WriteString(out, show) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if err := draw(); err != nil {
				return err
			}
		case <-finished:
			m.final = true
			return draw()
		}
	}
}

// readQuitKeys reads the terminal fd (in raw mode) until stop closes, and
// calls cancel on q, Ctrl-C or Esc. It polls, so that it never stays
// blocked in a read once stop is closed.
func readQuitKeys(fd int, stop <-chan struct{}, cancel context.CancelFunc) {
	buf := make([]byte, 64)
	for {
		select {
		case <-stop:
			return
		default:
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		if err != nil && err != unix.EINTR {
			return
		}
		if n <= 0 || fds[0].Revents&unix.POLLIN == 0 {
			if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				return
			}
			continue
		}
		k, err := unix.Read(fd, buf)
		if err != nil || k == 0 {
			return
		}
		for _, b := range buf[:k] {
			if b == 'q' || b == 0x03 || b == 0x1b {
				cancel()
			}
		}
	}
}

// style is an SGR attribute set: Render wraps a text in it.
type style string

// Render returns s in the style, reset after it.
func (st style) Render(s string) string {
	if st == "" {
		return s
	}
	return "\x1b[" + string(st) + "m" + s + "\x1b[0m"
}

// demoStyles are the view's colours.
type demoStyles struct {
	title, up, down, hold, wait, dim, warn style
}

func newDemoStyles() demoStyles {
	return demoStyles{title: "1", up: "32", down: "1;31", hold: "1;32", wait: "33", dim: "2", warn: "31"}
}

// demoModel is the live view: it renders the demo's state, read under
// its lock.
type demoModel struct {
	d     *demo
	st    demoStyles
	final bool
}

// View renders the live view, with credentials redacted as everything dlm
// prints (the view is written to the terminal directly).
func (m demoModel) View() string { return (*redactor)(nil).String(m.view()) }

func (m demoModel) view() string {
	d, st := m.d, m.st
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	elapsed := min(time.Since(d.start), d.cfg.duration)
	fmt.Fprintf(&b, "%s  %s / %s  ·  lock ttl %v\n", st.title.Render("dlm demo"),
		elapsed.Round(100*time.Millisecond), d.cfg.duration, d.ttl)
	if d.backend.Owned {
		fmt.Fprintf(&b, "phase: %s\n", st.title.Render(demoScript()[d.phase].about))
	}
	b.WriteString("\n" + st.title.Render("NODES") + "\n")
	up := 0
	for _, n := range d.nodes {
		state := st.up.Render("up  ")
		if n.Up {
			up++
		} else {
			state = st.down.Render("DOWN")
		}
		keys := fmt.Sprintf("%d lock key(s)", n.Keys)
		if !n.Up {
			keys = "-"
		}
		fmt.Fprintf(&b, "  %-7s %-21s %s  %-14s %s\n", n.Name, n.Addr, state, keys, st.dim.Render(n.Note))
	}
	q := d.quorum
	if up >= q {
		fmt.Fprintf(&b, "  %d of %d up, quorum %d: %s\n", up, len(d.nodes), q, st.up.Render("locks can be granted"))
	} else {
		fmt.Fprintf(&b, "  %d of %d up, quorum %d: %s\n", up, len(d.nodes), q, st.down.Render("NO QUORUM, no lock can be granted"))
	}
	b.WriteString("\n" + st.title.Render("WORKERS") + "\n")
	for i, w := range d.workers {
		var state string
		switch w.State {
		case "holding":
			state = st.hold.Render("HOLDING")
		case "waiting":
			state = st.wait.Render("waiting")
		default:
			state = st.dim.Render(fmt.Sprintf("%-7s", w.State))
		}
		fmt.Fprintf(&b, "  worker-%-2d %s  %3d acquisitions  %s\n", i+1, state, w.Acquired, st.dim.Render(w.Reason))
	}
	b.WriteString("\n" + st.title.Render("LOCK") + "  ")
	if d.holder >= 0 {
		fmt.Fprintf(&b, "held by worker-%d, validity left %v", d.holder+1, max(0, time.Until(d.until)).Round(time.Millisecond))
	} else {
		b.WriteString("free")
	}
	fmt.Fprintf(&b, "  ·  %d acquisitions so far\n", len(d.windows))
	b.WriteString("\n" + st.title.Render("EVENTS") + "\n")
	ev := d.events
	if len(ev) > 6 {
		ev = ev[len(ev)-6:]
	}
	for _, e := range ev {
		b.WriteString("  " + e + "\n")
	}
	if !m.final {
		b.WriteString(st.dim.Render("q: stop early") + "\n")
	}
	return b.String()
}

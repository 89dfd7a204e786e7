package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// runTUI shows the live view until the demo finishes (or q / ctrl+c, which
// cancel it), leaving the last frame on the terminal.
func (d *demo) runTUI(stdin io.Reader, stdout io.Writer, cancel context.CancelFunc, finished <-chan struct{}) error {
	m := demoModel{d: d, cancel: cancel, finished: finished, st: newDemoStyles()}
	_, err := tea.NewProgram(m, tea.WithInput(stdin), tea.WithOutput(rawWriter(stdout)), tea.WithoutSignalHandler()).Run()
	return err
}

// demoStyles are the view's colours.
type demoStyles struct {
	title, up, down, hold, wait, dim, warn lipgloss.Style
}

func newDemoStyles() demoStyles {
	return demoStyles{
		title: lipgloss.NewStyle().Bold(true),
		up:    lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		down:  lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		hold:  lipgloss.NewStyle().Foreground(lipgloss.Color("2")).Bold(true),
		wait:  lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		dim:   lipgloss.NewStyle().Faint(true),
		warn:  lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
	}
}

// demoModel is the Bubble Tea model of the live view: it renders the
// demo's state, read under its lock, ten times a second.
type demoModel struct {
	d        *demo
	cancel   context.CancelFunc
	finished <-chan struct{}
	st       demoStyles
	final    bool
}

type tickMsg struct{}
type finishedMsg struct{}

func (m demoModel) tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

func (m demoModel) wait() tea.Cmd {
	return func() tea.Msg { <-m.finished; return finishedMsg{} }
}

// Init starts the refresh ticks and the wait for the end.
func (m demoModel) Init() tea.Cmd { return tea.Batch(m.tick(), m.wait()) }

// Update handles ticks, the end of the demo and the quit keys.
func (m demoModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tickMsg:
		return m, m.tick()
	case finishedMsg:
		m.final = true
		return m, tea.Quit
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			m.cancel()
		}
	}
	return m, nil
}

// View renders nodes, workers, the lock and the latest events.
// View renders the live view, with credentials redacted as everything dlm
// prints (the program writes to the terminal directly).
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

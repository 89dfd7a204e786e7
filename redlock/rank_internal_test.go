package redlock

import (
	"slices"
	"testing"
)

// The order of the clients' releases, and the rank it gives (handoff.go:
// record, rank): the client that released least recently first, the last
// holder last, clients passed over forgotten, values without a tag
// ignored.
func TestRankFollowsTheReleases(t *testing.T) { // R10, R14
	const me, a, b, c = "MMMMMMMM", "AAAAAAAA", "BBBBBBBB", "CCCCCCCC"
	value := func(tag string) string { return tag + "0123456789012345678901234567"[:valueLen-tagLen] }
	tests := []struct {
		name      string
		releases  []string // tags of the releases heard, in order
		wantOrder []string
		wantRank  int
	}{
		{"nothing heard: first", nil, nil, 0},
		{"another's release, mine not heard: first", []string{a}, []string{a}, 0},
		{"alone, after my own release: one slot", []string{me}, []string{me}, 1},
		{"two clients, after mine: behind the other", []string{a, me}, []string{a, me}, 1},
		{"two clients, after the other's: first", []string{me, a}, []string{me, a}, 0},
		{"four clients in turn", []string{me, a, b, c}, []string{me, a, b, c}, 0},
		{"four clients, I released second", []string{a, me, b, c}, []string{a, me, b, c}, 1},
		{"four clients, I released last", []string{a, b, c, me}, []string{a, b, c, me}, 3},
		{"a client passed over is forgotten", []string{a, b, me, b}, []string{me, b}, 0},
		{"a client comes back", []string{a, b, me, a}, []string{b, me, a}, 1},
		{"a value of the caller's changes nothing", []string{a, me, "caller's own value"}, []string{a, me}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &handoff{c: &Client{values: &valueSource{tag: me}}}
			ts := &turns{}
			for _, tag := range tt.releases {
				v := tag
				if len(tag) == tagLen {
					v = value(tag)
				}
				ts.record(v)
			}
			if !slices.Equal(ts.order, tt.wantOrder) {
				t.Errorf("order %v, want %v", ts.order, tt.wantOrder)
			}
			if got := h.rank(ts); got != tt.wantRank {
				t.Errorf("rank %d, want %d", got, tt.wantRank)
			}
		})
	}
}

// The order never holds more than maxOrder clients.
func TestRankOrderIsBounded(t *testing.T) {
	ts := &turns{}
	for i := range 3 * maxOrder {
		tag := string(rune('A'+i%26)) + string(rune('a'+i/26)) + "xxxxxx"
		ts.record(tag + "0123456789012345678901234567"[:valueLen-tagLen])
	}
	if len(ts.order) != maxOrder {
		t.Fatalf("%d clients in the order, want %d", len(ts.order), maxOrder)
	}
}

// Every watched node announces every release, and a node that lags (it
// was not in the quorum of the acquisition that followed) announces a
// release after a faster node announced the next one. That late echo is
// the same release: it must neither move its client to the end of the
// order again (dropping the clients ahead of it as passed over) nor wake
// the waiter for another attempt. Before, only the last value heard was
// remembered: the echo of the release before it counted again.
func TestRankIgnoresLateEchoes(t *testing.T) { // R10, R14
	const me, a, b, c = "MMMMMMMM", "AAAAAAAA", "BBBBBBBB", "CCCCCCCC"
	value := func(tag string) string { return tag + "0123456789012345678901234567"[:valueLen-tagLen] }
	const key = "k"
	h := &handoff{
		c:        &Client{values: &valueSource{tag: me}},
		queueing: queueing{queues: map[string][]*waiter{}, sets: map[string][]*waiter{}},
		ranking:  ranking{own: map[string]struct{}{}, turns: map[string]*turns{}},
	}
	w := &waiter{ch: make(chan wake, 1), head: make(chan struct{})}
	h.queues[key] = []*waiter{w}
	// Two nodes announce the releases of c, me, a, b; the second lags
	// one release behind the first.
	heard := []string{c, me, c, a, me, b, a, b}
	wakes := 0
	for _, tag := range heard {
		h.notify(0, key, value(tag))
		select {
		case <-w.ch:
			wakes++
		default:
		}
	}
	if want := []string{c, me, a, b}; !slices.Equal(h.turns[key].order, want) {
		t.Errorf("order %v, want %v", h.turns[key].order, want)
	}
	if got := h.rank(h.turns[key]); got != 1 {
		t.Errorf("rank %d, want 1 (one client released before me)", got)
	}
	if wakes != 4 {
		t.Errorf("%d wake-ups for 4 releases heard from 2 nodes, want 4", wakes)
	}
}

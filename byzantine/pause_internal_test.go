package byzantine

import (
	"testing"
	"time"
)

// TestPauseWatchCovers: a recorded gap counts only when it covers the
// whole span asked about, and the gap under way (no tick for more than two
// ticks) counts from the last tick to now.
func TestPauseWatchCovers(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := &pauseWatch{tick: 10 * time.Millisecond, last: time.Now(), gaps: [][2]time.Time{{at(-500), at(-200)}}}
	tests := []struct {
		name     string
		from, to time.Time
		want     bool
	}{
		{"inside", at(-400), at(-300), true},
		{"to at the gap's end", at(-400), at(-200), true},
		{"begins before the gap", at(-600), at(-300), false},
		{"ends after the gap", at(-400), at(-100), false},
		{"after every gap", at(-150), at(-100), false},
	}
	for _, tt := range tests {
		if got := w.Paused(tt.from, tt.to); got != tt.want {
			t.Errorf("%s: Paused = %v, want %v", tt.name, got, tt.want)
		}
	}
	w.last = at(-1000) // the ticker has not run for a second: stopped since then
	if !w.Paused(at(-900), at(0)) {
		t.Errorf("the gap under way is not reported")
	}
	if w.Paused(at(-1100), at(0)) {
		t.Errorf("a span that began before the last tick is reported as paused")
	}
}

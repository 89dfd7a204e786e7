package redlock_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// frozenFacts is a MemNode whose reading of its facts never answers (a
// frozen server): Connect waits for its context to end.
type frozenFacts struct{ *redlocktest.MemNode }

func (frozenFacts) Connect(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

// The readings of the facts again (every 2 s while the client locks) do
// not hold the locks up behind a node that never answers them: a reading
// is published once the others answered, or four node timeouts passed,
// and the frozen node's reading goes on apart. Over 20 s of locks every
// 200 ms (synctest), the locks waited at most one such bound in all.
func TestFrozenNodeDoesNotHoldTheReadingsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, mems := redlocktest.NewMemNodes(3)
		nodes := []redlock.Node{mems[0], mems[1], frozenFacts{mems[2]}}
		for _, m := range mems {
			m.SetFacts(adapter.Facts{RunID: "r" + m.String()})
		}
		c, err := redlock.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var waited time.Duration
		for range 100 {
			start := time.Now()
			l, err := c.TryLock(t.Context(), "r")
			if err != nil {
				t.Fatal(err)
			}
			waited += time.Since(start)
			_ = l.Unlock(t.Context())
			time.Sleep(200 * time.Millisecond)
		}
		if most := 4 * redlock.DefaultNodeTimeout; waited > most {
			t.Errorf("100 locks over 20s waited %v in all for the readings of the facts, want at most %v", waited, most)
		}
	})
}

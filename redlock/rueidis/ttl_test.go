package rueidis_test

import (
	"fmt"
	"testing"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// answers collects the answers of started requests: nil when the node
// acted (ok), else the reason.
type answers chan error

func (a answers) Receive(tag int, ok bool, err error) {
	if err == nil && !ok {
		err = fmt.Errorf("request %d: the node did not act", tag)
	}
	a <- err
}

// Requests with different ttls in one batch each set their own: the
// formatted ttl a batch reuses (sender.ttlArg) follows every change.
func TestBatchTTLs(t *testing.T) {
	s := redlocktest.StartServer(t)
	n := node(t, s)
	ttls := []time.Duration{time.Minute, 5 * time.Second, 5 * time.Second, time.Hour, time.Minute}
	keys := []string{"t:a", "t:b", "t:c", "t:d", "t:e"}
	got := make(answers, 2*len(keys))
	var calls []adapter.Call
	for i, k := range keys {
		calls = append(calls, adapter.Call{Ctx: t.Context(), Req: adapter.Request{Op: adapter.OpAcquire, Key: k, Value: "v", TTL: ttls[i]}, To: got, Tag: i})
	}
	n.StartAll(calls)
	for range keys {
		if err := <-got; err != nil {
			t.Fatalf("acquire: %v", err)
		}
	}
	// Extend in one batch too, with the ttls reversed.
	calls = calls[:0]
	for i, k := range keys {
		calls = append(calls, adapter.Call{Ctx: t.Context(), Req: adapter.Request{Op: adapter.OpExtend, Key: k, Value: "v", TTL: ttls[len(ttls)-1-i]}, To: got, Tag: i})
	}
	for _, phase := range []struct {
		name string
		ttl  func(i int) time.Duration
	}{
		{"acquire", func(i int) time.Duration { return ttls[i] }},
		{"extend", func(i int) time.Duration { return ttls[len(ttls)-1-i] }},
	} {
		if phase.name == "extend" {
			n.StartAll(calls)
			for range keys {
				if err := <-got; err != nil {
					t.Fatalf("extend: %v", err)
				}
			}
		}
		for i, k := range keys {
			d, err := s.Client().PTTL(t.Context(), k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if want := phase.ttl(i); d <= want-10*time.Second || d > want {
				t.Errorf("after %s: PTTL %s = %v, want about %v", phase.name, k, d, want)
			}
		}
	}
}

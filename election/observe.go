package election

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTermDecreased is the error of a Change to a leader whose term is
// below a term that an earlier read found: the terms of the election went
// down, which its guarantees rule out (see the package documentation for
// what they rest on). A store fenced on terms would refuse the new leader.
var ErrTermDecreased = errors.New("election: term went down")

// Change is one change of an election's leader, as Observe reports it.
type Change struct {
	// Leader is the leader read and its term: an empty ID says there is no
	// leader (Term is then the highest term read so far).
	Leader Leader
	// Since is when the leader was elected (Status.Since).
	Since time.Time
	// Err is nil, or wraps ErrTermDecreased when Leader is a leader whose
	// term is below the highest term read before (of a leader, or granted
	// while there was none): the change is reported all the same.
	Err error
}

// Observe reads the election (Status) every poll interval
// (WithPollInterval) until ctx ends, and sends on the channel it returns
// the first state it reads and then every change of (leader, term): a new
// leader, a new term, or no leader. A change to a leader whose term is
// below the highest term read before carries an error wrapping
// ErrTermDecreased; it is not hidden. While there is no leader, the term
// reported is the highest term read so far (a read without a leader finds
// the highest fence value of the nodes that answered, which drops when a
// node is slow to answer or restarted without persistence). Reads that
// fail are skipped. A leader who comes and goes between
// two reads is not seen. The channel is closed when ctx ends; the caller
// must keep receiving until then.
func (e *Election) Observe(ctx context.Context) <-chan Change {
	ch := make(chan Change)
	go func() {
		defer close(ch)
		var last Leader
		var high uint64 // the highest term read
		first := true
		t := time.NewTicker(e.opts.poll)
		defer t.Stop()
		for {
			st, err := e.Status(ctx)
			if err == nil && !st.OK {
				st.Leader.Term = max(st.Leader.Term, high)
			}
			if err == nil && (first || st.Leader != last) {
				c := Change{Leader: st.Leader, Since: st.Since}
				if st.OK && st.Leader.Term < high {
					c.Err = fmt.Errorf("%w in election %q: leader %q with term %d, after a read of term %d",
						ErrTermDecreased, e.name, st.Leader.ID, st.Leader.Term, high)
				}
				select {
				case ch <- c:
					last, first = st.Leader, false
					high = max(high, st.Leader.Term)
				case <-ctx.Done():
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ch
}

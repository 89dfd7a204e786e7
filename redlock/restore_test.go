package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// An extension restores the key on nodes that forgot it (a restart
// without persistence) while they are a minority and the lock is valid, so
// that a rolling restart (one node at a time, each down past the ttl) does
// not end a healthy lock; keys gone from more nodes than a minority still
// end it (ErrNotHeld). Before restore.go, the rolling restart ended the lock
// at the second node ("validity passed without a successful extension").
func TestExtensionRestoresForgottenKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 3 * time.Second
		nodes, mems := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes, redlock.WithTTL(ttl), redlock.WithAutoExtend())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		l, err := c.Lock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mems {
			m.Restart(ttl + ttl/4) // down past the ttl, back empty
			time.Sleep(ttl + ttl/2)
			select {
			case <-l.Done():
				t.Fatalf("the lock ended during a rolling restart: %v", l.Err())
			default:
			}
		}
		time.Sleep(ttl)
		for i, m := range mems {
			if v, ok, _ := m.Value(context.Background(), "dlm:lock:r"); !ok || v != l.Value() {
				t.Errorf("node %d does not hold the lock's value after the rolling restart", i)
			}
		}
		// Keys gone from a majority: the lock is lost, not restored.
		mems[0].Forget()
		mems[1].Forget()
		if err := l.Extend(t.Context()); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Extend with the key gone from 2 of 3 nodes = %v, want ErrNotHeld", err)
		}
	})
}

// orderedNode is a MemNode behind its blocking methods only that forces, on
// this node, the order of the first extension and the first release of a
// lock: releaseFirst applies the release before the extension; otherwise
// the extension is applied, then the release, and only then is the
// extension answered (late after that, when set). Every other request
// goes straight through.
type orderedNode struct {
	m            *redlocktest.MemNode
	releaseFirst bool
	late         time.Duration
	extending    chan struct{} // closed when the extension arrived
	extended     chan struct{} // closed when the extension was applied
	released     chan struct{} // closed when the release was applied
	extOnce      sync.Once
	relOnce      sync.Once
}

func newOrderedNode(m *redlocktest.MemNode, releaseFirst bool) *orderedNode {
	return &orderedNode{m: m, releaseFirst: releaseFirst,
		extending: make(chan struct{}), extended: make(chan struct{}), released: make(chan struct{})}
}

func (n *orderedNode) String() string { return n.m.String() }

func (n *orderedNode) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.Acquire(ctx, key, value, ttl)
}

// extend runs an extension (of a key, a set, a reader's share) in the
// order the node forces.
func (n *orderedNode) extend(do func() (bool, error)) (bool, error) {
	first := false
	n.extOnce.Do(func() { first = true })
	if !first {
		return do()
	}
	close(n.extending)
	if n.releaseFirst {
		<-n.released
		ok, err := do()
		close(n.extended)
		time.Sleep(n.late)
		return ok, err
	}
	ok, err := do()
	close(n.extended)
	<-n.released
	time.Sleep(n.late)
	return ok, err
}

// release runs a release (of a key, a set, a reader's share) in the order
// the node forces.
func (n *orderedNode) release(do func() (bool, error)) (bool, error) {
	first := false
	n.relOnce.Do(func() { first = true })
	if !first {
		return do()
	}
	if !n.releaseFirst {
		<-n.extended
	}
	ok, err := do()
	close(n.released)
	return ok, err
}

func (n *orderedNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.extend(func() (bool, error) { return n.m.Extend(ctx, key, value, ttl) })
}

func (n *orderedNode) Release(ctx context.Context, key, value string) (bool, error) {
	return n.release(func() (bool, error) { return n.m.Release(ctx, key, value) })
}

// The set's steps (adapter.MultiNode), ordered as the key's.

func (n *orderedNode) AcquireAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return n.m.AcquireAll(ctx, keys, value, ttl)
}

func (n *orderedNode) ExtendAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return n.extend(func() (bool, error) { return n.m.ExtendAll(ctx, keys, value, ttl) })
}

func (n *orderedNode) ReleaseAll(ctx context.Context, keys []string, value string, announce bool) (bool, error) {
	return n.release(func() (bool, error) { return n.m.ReleaseAll(ctx, keys, value, announce) })
}

func (n *orderedNode) RestoreAll(ctx context.Context, keys []string, value string, ttl time.Duration) (bool, error) {
	return n.m.RestoreAll(ctx, keys, value, ttl)
}

func (n *orderedNode) AcquireAllFenced(ctx context.Context, keys, fenceKeys []string, value string, ttl time.Duration) (bool, uint64, error) {
	return n.m.AcquireAllFenced(ctx, keys, fenceKeys, value, ttl)
}

func (n *orderedNode) RaiseFences(ctx context.Context, keys, fenceKeys []string, value string, token uint64, retention time.Duration) (bool, error) {
	return n.m.RaiseFences(ctx, keys, fenceKeys, value, token, retention)
}

// The readers' steps (adapter.RWNode), ordered as the key's.

func (n *orderedNode) RAcquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.RAcquire(ctx, key, value, ttl)
}

func (n *orderedNode) RExtend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.extend(func() (bool, error) { return n.m.RExtend(ctx, key, value, ttl) })
}

func (n *orderedNode) RRelease(ctx context.Context, key, value string) (bool, error) {
	return n.release(func() (bool, error) { return n.m.RRelease(ctx, key, value) })
}

func (n *orderedNode) WAcquire(ctx context.Context, key, value, waiter string, ttl time.Duration) (bool, error) {
	return n.m.WAcquire(ctx, key, value, waiter, ttl)
}

func (n *orderedNode) WMark(ctx context.Context, key, waiter string, ttl time.Duration) (bool, error) {
	return n.m.WMark(ctx, key, waiter, ttl)
}

func (n *orderedNode) WUnwait(ctx context.Context, key, waiter string) (bool, error) {
	return n.m.WUnwait(ctx, key, waiter)
}

func (n *orderedNode) WAcquireFenced(ctx context.Context, key, fenceKey, value, waiter string, ttl time.Duration) (bool, uint64, error) {
	return n.m.WAcquireFenced(ctx, key, fenceKey, value, waiter, ttl)
}

// An Extend racing an Unlock must not re-create the released lock. With
// the order on each node forced (release, then extension, on 2 of 5
// nodes; extension, then release, on the other 3), the extension finds the
// key on a quorum and gone from a minority, which is what a restart
// without persistence looks like. Before the fix, the restore that follows
// set the key again on every node, after Unlock had returned nil: the
// released lock was held for a whole ttl ("node m1 holds the lock's value
// after Unlock returned nil"). The test runs every one of the 32 per-node
// orders, the class of that defect; "m1m2 first" is the one above; and
// each for a set's keys and a reader's share, which an extension restores
// too.
//
// The same holds where the nodes that saw the release first answer the
// extension after the others (their "not held" comes after the decision,
// which a restore hears too: restore.go), for every order in which the
// others make a quorum.
func TestExtendRacingUnlockDoesNotRecreate(t *testing.T) {
	for _, kind := range []string{"Lock", "LockAll", "RLock"} {
		for _, o := range racingOrders() {
			t.Run(kind+" release first on "+o.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { extendRacingUnlock(t, kind, o.mask, o.late) })
			})
		}
	}
}

// racingOrder is an order of an extension and a release on 5 nodes: the
// release first on the nodes of mask, whose answers to the extension come
// late after the others' when late is set.
type racingOrder struct {
	name string
	mask int
	late time.Duration
}

// racingOrders returns every order of an extension and a release on 5
// nodes, and those again where the nodes that saw the release first (at
// most 2: the others make a quorum) answer the extension 20 ms after the
// others.
func racingOrders() []racingOrder {
	var out []racingOrder
	for mask := range 1 << 5 {
		name, n := "", 0
		for i := range 5 {
			if mask&(1<<i) != 0 {
				name += fmt.Sprintf("m%d", i+1)
				n++
			}
		}
		if name == "" {
			name = "none"
		}
		out = append(out, racingOrder{name, mask, 0})
		if n > 0 && n <= 2 {
			out = append(out, racingOrder{name + ", which answer late", mask, 20 * time.Millisecond})
		}
	}
	return out
}

// orderedMemNodes returns 5 in-memory nodes, each behind an orderedNode:
// the release first on the nodes of mask, which answer the extension late
// after the others; the extension first on the others.
func orderedMemNodes(mask int, late time.Duration) ([]*redlocktest.MemNode, []*orderedNode) {
	_, mems := redlocktest.NewMemNodes(5)
	ordered := make([]*orderedNode, len(mems))
	for i, m := range mems {
		ordered[i] = newOrderedNode(m, mask&(1<<i) != 0)
		if ordered[i].releaseFirst {
			ordered[i].late = late
		}
	}
	return mems, ordered
}

// lockOfKind takes a lock of kind (Lock, LockAll, RLock) on resource "r"
// (a set: "r" and "s") and waits until every node answered the
// acquisition.
func lockOfKind(t *testing.T, c *redlock.Client, kind string) *redlock.Lock {
	t.Helper()
	var l *redlock.Lock
	var err error
	switch kind {
	case "LockAll":
		l, err = c.LockAll(t.Context(), []string{"r", "s"})
	case "RLock":
		l, err = c.RLock(t.Context(), "r")
	default:
		l, err = c.Lock(t.Context(), "r")
	}
	if err != nil {
		t.Fatal(err)
	}
	synctest.Wait() // every node answered the acquisition
	return l
}

// startRacingExtension extends l in a goroutine, returns once the
// extension is on its way to every node of ordered, and sends its result.
func startRacingExtension(l *redlock.Lock, ordered []*orderedNode) <-chan error {
	extended := make(chan error, 1)
	go func() { extended <- l.Extend(context.Background()) }()
	for _, o := range ordered {
		<-o.extending // the extension is on its way to every node
	}
	return extended
}

// extendRacingUnlock races an Extend and an Unlock of a lock of kind over
// 5 nodes, the release first on the nodes of mask, the extension first on
// the others; the nodes of mask answer the extension late after the
// others.
func extendRacingUnlock(t *testing.T, kind string, mask int, late time.Duration) {
	const ttl = 10 * time.Second
	mems, ordered := orderedMemNodes(mask, late)
	nodes := make([]redlock.Node, len(ordered))
	for i, o := range ordered {
		nodes[i] = o
	}
	c, err := redlock.New(nodes, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := lockOfKind(t, c, kind)
	value := l.Value()
	extended := startRacingExtension(l, ordered)
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock = %v, want nil", err)
	}
	if err := <-extended; !errors.Is(err, redlock.ErrNotHeld) {
		t.Errorf("Extend racing Unlock = %v, want ErrNotHeld", err)
	}
	time.Sleep(time.Second) // every request answered, the late ones too
	synctest.Wait()
	for i, m := range mems {
		for _, key := range []string{"dlm:lock:r", "dlm:lock:s"} {
			if v, ok, _ := m.Value(context.Background(), key); ok && v == value {
				t.Errorf("node m%d holds the lock's value under %s after Unlock returned nil", i+1, key)
			}
		}
		if readers, _ := m.Readers("dlm:lock:r"); len(readers) > 0 {
			t.Errorf("node m%d holds readers %q after Unlock returned nil", i+1, readers)
		}
	}
}

// gatedNode is a MemNode behind its blocking methods only whose
// acquisitions wait for gate while it is armed.
type gatedNode struct {
	m       *redlocktest.MemNode
	mu      sync.Mutex
	gate    chan struct{}
	waiting chan struct{} // closed when an acquisition waits at the gate
}

func (n *gatedNode) String() string { return n.m.String() }

// arm makes the next acquisition wait until open is closed; waiting is
// closed once it waits.
func (n *gatedNode) arm() (open, waiting chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.gate, n.waiting = make(chan struct{}), make(chan struct{})
	return n.gate, n.waiting
}

func (n *gatedNode) Acquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.mu.Lock()
	gate, waiting := n.gate, n.waiting
	n.gate = nil
	n.mu.Unlock()
	if gate != nil {
		close(waiting)
		<-gate
	}
	return n.m.Acquire(ctx, key, value, ttl)
}

func (n *gatedNode) Release(ctx context.Context, key, value string) (bool, error) {
	return n.m.Release(ctx, key, value)
}

func (n *gatedNode) Extend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return n.m.Extend(ctx, key, value, ttl)
}

// lockOnGatedNodes returns 3 in-memory nodes, each behind a gatedNode,
// and a lock (ttl 10 s) on resource "r" over them, which every node
// answered; the client is closed at the test's end.
func lockOnGatedNodes(t *testing.T) ([]*redlocktest.MemNode, []*gatedNode, *redlock.Lock) {
	t.Helper()
	const ttl = 10 * time.Second
	_, mems := redlocktest.NewMemNodes(3)
	gated := make([]*gatedNode, len(mems))
	nodes := make([]redlock.Node, len(mems))
	for i, m := range mems {
		gated[i] = &gatedNode{m: m}
		nodes[i] = gated[i]
	}
	c, err := redlock.New(nodes, redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	l, err := c.Lock(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	synctest.Wait() // every node answered the acquisition
	return mems, gated, l
}

// wantNoNodeHolds fails t if a node of mems holds value under resource
// "r" after the lock's Unlock returned.
func wantNoNodeHolds(t *testing.T, mems []*redlocktest.MemNode, value string) {
	t.Helper()
	for i, m := range mems {
		if v, ok, _ := m.Value(context.Background(), "dlm:lock:r"); ok && v == value {
			t.Errorf("node m%d holds the lock's value after Unlock returned", i+1)
		}
	}
}

// An Unlock that comes while an extension restores the key (a node forgot
// it) waits for the restore's requests before it releases: a restoring SET
// that a node applied after the release would hold the released lock for a
// whole ttl.
func TestUnlockDuringRestoreLeavesNoKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mems, gated, l := lockOnGatedNodes(t)
		value := l.Value()
		mems[0].Forget() // a restart without persistence
		for _, m := range mems[1:] {
			m.SetSlow(time.Millisecond) // node 1's "not held" comes first
		}
		open, waiting := gated[0].arm()
		extended := make(chan error, 1)
		go func() { extended <- l.Extend(context.Background()) }()
		select {
		case err := <-extended:
			t.Fatalf("Extend = %v before its restore", err)
		case <-waiting: // the restore's SET is on its way to node 1
		}
		unlocked := make(chan error, 1)
		go func() { unlocked <- l.Unlock(context.Background()) }()
		synctest.Wait()
		close(open) // node 1 applies the restore's SET
		if err := <-unlocked; err != nil {
			t.Errorf("Unlock = %v, want nil", err)
		}
		<-extended
		synctest.Wait()
		wantNoNodeHolds(t, mems, value)
	})
}

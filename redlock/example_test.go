package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"dlm/redlock"
)

// mapNode is a toy in-memory redlock.Node, enough to run the examples
// without servers. Real deployments use an adapter such as redlock/goredis.
type mapNode struct {
	name string
	mu   sync.Mutex
	keys map[string]mapEntry
}

type mapEntry struct {
	value   string
	expires time.Time
}

func newMapNode(name string) *mapNode { return &mapNode{name: name, keys: map[string]mapEntry{}} }

func (n *mapNode) String() string { return n.name }

func (n *mapNode) live(key string) (mapEntry, bool) {
	e, ok := n.keys[key]
	if ok && time.Now().After(e.expires) {
		delete(n.keys, key)
		return e, false
	}
	return e, ok
}

func (n *mapNode) Acquire(_ context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.live(key); ok {
		return false, nil
	}
	n.keys[key] = mapEntry{value, time.Now().Add(ttl)}
	return true, nil
}

func (n *mapNode) Release(_ context.Context, key, value string) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e, ok := n.live(key); ok && e.value == value {
		delete(n.keys, key)
		return true, nil
	}
	return false, nil
}

func (n *mapNode) Extend(_ context.Context, key, value string, ttl time.Duration) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e, ok := n.live(key); ok && e.value == value {
		n.keys[key] = mapEntry{value, time.Now().Add(ttl)}
		return true, nil
	}
	return false, nil
}

func exampleNodes() []redlock.Node {
	nodes := make([]redlock.Node, 5)
	for i := range nodes {
		nodes[i] = newMapNode(fmt.Sprintf("n%d", i+1))
	}
	return nodes
}

// Acquire a lock, work within its validity, release it.
func ExampleClient_Lock() {
	client, err := redlock.New(exampleNodes(), redlock.WithTTL(10*time.Second))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := context.Background()
	lock, err := client.Lock(ctx, "reports")
	if err != nil {
		panic(err)
	}
	fmt.Println("holding", lock.Resource(), "with a quorum of", client.Quorum())

	// A second attempt fails while the lock is held.
	_, err = client.TryLock(ctx, "reports")
	fmt.Println(errors.Is(err, redlock.ErrNotAcquired))

	if err := lock.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("released")
	// Output:
	// holding reports with a quorum of 3
	// true
	// released
}

// Work in small steps with a short ttl, extending the lock between steps
// (R17). Extend fails with ErrNotHeld once the validity has passed.
func ExampleLock_Extend() {
	client, _ := redlock.New(exampleNodes(), redlock.WithTTL(time.Second))
	defer client.Close()
	ctx := context.Background()

	lock, err := client.Lock(ctx, "batch")
	if err != nil {
		panic(err)
	}
	defer lock.Unlock(ctx)
	for step := 1; step <= 3; step++ {
		// ... one step of work, well within lock.Validity() ...
		if err := lock.Extend(ctx); err != nil {
			fmt.Println("lock lost:", err)
			return
		}
		fmt.Println("step", step, "done; still valid:", lock.Validity() > 900*time.Millisecond)
	}
	// Output:
	// step 1 done; still valid: true
	// step 2 done; still valid: true
	// step 3 done; still valid: true
}

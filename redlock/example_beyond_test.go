package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"dlm/redlock"
)

// fenceMapNode adds the fencing capability to the toy mapNode.
type fenceMapNode struct {
	*mapNode
	fmu    sync.Mutex
	fences map[string]uint64
}

func (n *fenceMapNode) AcquireFenced(ctx context.Context, key, fenceKey, value string, ttl time.Duration) (bool, uint64, error) {
	n.fmu.Lock()
	defer n.fmu.Unlock()
	ok, err := n.Acquire(ctx, key, value, ttl)
	if !ok || err != nil {
		return ok, 0, err
	}
	return true, n.fences[fenceKey], nil
}

func (n *fenceMapNode) RaiseFence(_ context.Context, key, fenceKey, value string, token uint64, _ time.Duration) (bool, error) {
	n.fmu.Lock()
	defer n.fmu.Unlock()
	n.mu.Lock()
	e, ok := n.live(key)
	n.mu.Unlock()
	if !ok || e.value != value || n.fences[fenceKey] >= token {
		return false, nil
	}
	n.fences[fenceKey] = token
	return true, nil
}

func fencingNodes() []redlock.Node {
	nodes := make([]redlock.Node, 5)
	for i := range nodes {
		nodes[i] = &fenceMapNode{mapNode: newMapNode("n" + strconv.Itoa(i+1)), fences: map[string]uint64{}}
	}
	return nodes
}

// Every grant of a resource carries a larger fencing token (R18); the
// protected storage keeps the largest token it has seen and refuses writes
// that carry a smaller one.
func ExampleLock_Token() {
	client, err := redlock.New(fencingNodes(), redlock.WithFencing())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()

	for range 3 {
		lock, err := client.Lock(ctx, "ledger")
		if err != nil {
			panic(err)
		}
		fmt.Println("token", lock.Token())
		// storage.Write(ctx, record, lock.Token()) ...
		_ = lock.Unlock(ctx)
	}
	// Output:
	// token 1
	// token 2
	// token 3
}

// Run a function under a lock that is extended while it runs; its context
// is cancelled if the lock is lost.
func ExampleClient_Do() {
	client, _ := redlock.New(exampleNodes(), redlock.WithTTL(time.Second))
	defer client.Close()

	err := client.Do(context.Background(), "nightly-report", func(ctx context.Context) error {
		// ... work, checking ctx between steps; context.Cause(ctx) says
		// why it ended (redlock.ErrLost, redlock.ErrExpired) ...
		fmt.Println("working under the lock")
		return nil
	})
	fmt.Println("done:", err)
	// Output:
	// working under the lock
	// done: <nil>
}

// Watch a lock with auto-extension: Done closes when it is lost, and Err
// says why.
func ExampleWithAutoExtend() {
	client, _ := redlock.New(exampleNodes(), redlock.WithTTL(time.Second))
	defer client.Close()
	ctx := context.Background()

	lock, err := client.Lock(ctx, "queue", redlock.WithAutoExtend(), redlock.WithMaxExtensions(100))
	if err != nil {
		panic(err)
	}
	_ = lock.Unlock(ctx)
	<-lock.Done()
	fmt.Println(errors.Is(lock.Err(), redlock.ErrUnlocked))
	// Output:
	// true
}

// A client that tolerates one lying node among five: the quorum grows from
// 3 to 4; with three nodes New refuses (B3).
func ExampleWithByzantineNodes() {
	client, err := redlock.New(exampleNodes(), redlock.WithByzantineNodes(1))
	if err != nil {
		panic(err)
	}
	defer client.Close()
	fmt.Println("quorum", client.Quorum())

	_, err = redlock.New(exampleNodes()[:3], redlock.WithByzantineNodes(1))
	fmt.Println(err)
	// Output:
	// quorum 4
	// redlock: invalid argument: byzantine mode with f=1 needs at least 3f+1 = 4 nodes, got 3 (B3): with fewer, f silent nodes leave the honest ones short of a quorum that excludes the liars
}

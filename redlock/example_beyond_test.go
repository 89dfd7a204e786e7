package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dlm/redlock"
)

// fencingNodes returns in-memory nodes for the fencing examples: MemNode
// has the fencing capability too.
func fencingNodes() []redlock.Node { return exampleNodes() }

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

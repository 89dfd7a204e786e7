package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// exampleNodes returns five in-memory nodes (redlocktest.MemNode, with
// every capability), enough to run the examples without servers. Real
// deployments use an adapter such as redlock/rueidis or redlock/goredis.
func exampleNodes() []redlock.Node {
	nodes, _ := redlocktest.NewMemNodes(5)
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
	client, _ := redlock.New(exampleNodes(), redlock.WithTTL(5*time.Second))
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
		fmt.Println("step", step, "done; still valid:", lock.Validity() > 4*time.Second)
	}
	// Output:
	// step 1 done; still valid: true
	// step 2 done; still valid: true
	// step 3 done; still valid: true
}

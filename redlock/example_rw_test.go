package redlock_test

import (
	"context"
	"errors"
	"fmt"

	"dlm/redlock"
)

// Readers share a resource; a writer waits for them and then excludes
// everyone.
func ExampleClient_RLock() {
	client, err := redlock.New(exampleNodes())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()

	r1, err := client.RLock(ctx, "catalog")
	if err != nil {
		panic(err)
	}
	r2, err := client.RLock(ctx, "catalog")
	if err != nil {
		panic(err)
	}
	fmt.Println("two readers:", r1.Shared(), r2.Shared())

	_, err = client.TryWLock(ctx, "catalog")
	fmt.Println("writer while reading:", errors.Is(err, redlock.ErrNotAcquired))

	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	fmt.Println("readers released")
	// Output:
	// two readers: true true
	// writer while reading: true
	// readers released
}

// A writer holds the resource alone: readers and plain locks are refused
// until it unlocks.
func ExampleClient_WLock() {
	client, err := redlock.New(exampleNodes())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()

	w, err := client.WLock(ctx, "catalog")
	if err != nil {
		panic(err)
	}
	_, err = client.TryRLock(ctx, "catalog")
	fmt.Println("reader while writing:", errors.Is(err, redlock.ErrNotAcquired))
	_, err = client.TryLock(ctx, "catalog")
	fmt.Println("plain lock while writing:", errors.Is(err, redlock.ErrNotAcquired))

	if err := w.Unlock(ctx); err != nil {
		panic(err)
	}
	r, err := client.TryRLock(ctx, "catalog")
	if err != nil {
		panic(err)
	}
	fmt.Println("reader after the writer:", r.Shared())
	_ = r.Unlock(ctx)
	// Output:
	// reader while writing: true
	// plain lock while writing: true
	// reader after the writer: true
}

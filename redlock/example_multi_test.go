package redlock_test

import (
	"context"
	"errors"
	"fmt"

	"dlm/redlock"
)

// Lock two accounts as one for a transfer: all or nothing, so that two
// transfers over overlapping accounts never both proceed and never
// deadlock, whatever order they name the accounts in.
func ExampleClient_LockAll() {
	client, err := redlock.New(exampleNodes())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()

	lock, err := client.LockAll(ctx, []string{"account:bob", "account:alice"})
	if err != nil {
		panic(err)
	}
	fmt.Println("holding", lock.Resources())

	// A set that shares one account with it is refused as a whole, and
	// leaves no key behind; so is a lock on that one account.
	_, err = client.TryLockAll(ctx, []string{"account:carol", "account:alice"})
	fmt.Println("alice and carol:", errors.Is(err, redlock.ErrNotAcquired))
	_, err = client.TryLock(ctx, "account:bob")
	fmt.Println("bob alone:", errors.Is(err, redlock.ErrNotAcquired))
	carol, err := client.TryLock(ctx, "account:carol")
	fmt.Println("carol alone:", err == nil)
	_ = carol.Unlock(ctx)

	// Extend and Unlock act on the whole set.
	if err := lock.Extend(ctx); err != nil {
		panic(err)
	}
	if err := lock.Unlock(ctx); err != nil {
		panic(err)
	}
	fmt.Println("released", lock.Resource())
	// Output:
	// holding [account:alice account:bob]
	// alice and carol: true
	// bob alone: true
	// carol alone: true
	// released account:alice,account:bob
}

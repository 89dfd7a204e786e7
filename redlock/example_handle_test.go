package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Lock in one process, write the lock down as a handle, and release it in
// another: here two clients over the same nodes stand for the two
// processes.
func ExampleClient_Resume() {
	nodes, _ := redlocktest.NewMemNodes(5)
	ctx := context.Background()

	// Process one: acquire, and print the handle (a secret: whoever has it
	// can release the lock).
	first, _ := redlock.New(nodes, redlock.WithTTL(time.Minute))
	lock, err := first.Lock(ctx, "deploy")
	if err != nil {
		panic(err)
	}
	text, _ := lock.Handle().MarshalText()
	first.Close() // the lock lives on: its keys expire with the ttl

	// Process two: read the handle, resume the lock, extend it, release it.
	second, _ := redlock.New(nodes, redlock.WithTTL(time.Minute))
	defer second.Close()
	h, err := redlock.ParseHandle(string(text))
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Resource)
	resumed, err := second.Resume(ctx, h)
	if err != nil {
		panic(err)
	}
	fmt.Println("extended:", resumed.Extend(ctx) == nil)
	fmt.Println("released:", resumed.Unlock(ctx) == nil)

	// The handle is spent: the nodes no longer hold its value.
	_, err = second.Resume(ctx, h)
	fmt.Println(errors.Is(err, redlock.ErrNotHeld))
	// Output:
	// deploy
	// extended: true
	// released: true
	// true
}

// Release a lock by its handle in one round, without resuming it. A handle
// with the wrong value releases nothing.
func ExampleClient_Release() {
	nodes, _ := redlocktest.NewMemNodes(5)
	ctx := context.Background()
	client, _ := redlock.New(nodes)
	defer client.Close()

	lock, err := client.Lock(ctx, "deploy")
	if err != nil {
		panic(err)
	}
	h := lock.Handle()

	forged := h
	forged.Value = "guessed-0123456789abcdef"
	fmt.Println("forged:", errors.Is(client.Release(ctx, forged), redlock.ErrNotHeld))
	fmt.Println("true handle:", client.Release(ctx, h))
	// Output:
	// forged: true
	// true handle: <nil>
}

// Printing a handle shows where the lock is, never its value.
func ExampleHandle_String() {
	h := redlock.Handle{
		Resource: "deploy",
		Value:    "a-secret-value-0123456789",
		Until:    time.Date(2026, 12, 1, 18, 30, 0, 0, time.UTC),
		TTL:      time.Minute,
		Token:    7,
	}
	fmt.Println(h)
	// Output:
	// lock handle for "deploy" until 2026-12-01T18:30:00Z, token 7, value redacted
}

// Give the lock a value of your own, a secret shared ahead of time with
// whoever may release it. It must be unique to this acquisition, like a
// random one (R4).
func ExampleWithValue() {
	nodes, _ := redlocktest.NewMemNodes(5)
	ctx := context.Background()
	client, _ := redlock.New(nodes)
	defer client.Close()

	lock, err := client.Lock(ctx, "deploy", redlock.WithValue("pipeline-4711-Zq8rT2vXk9LmW3"))
	if err != nil {
		panic(err)
	}
	fmt.Println(lock.Value())
	_ = lock.Unlock(ctx)

	_, err = client.Lock(ctx, "deploy", redlock.WithValue("4711"))
	fmt.Println(err)
	// Output:
	// pipeline-4711-Zq8rT2vXk9LmW3
	// redlock: invalid argument: lock value is 4 bytes; it must be at least 16 (a secret, unique to one acquisition, R4: use 20 or more bytes from a secure random source)
}

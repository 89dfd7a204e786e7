package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dlm/redlock"
	"dlm/redlock/adapter"
	"dlm/redlock/redlocktest"
)

// The client checks every lock against what its nodes' servers told about
// themselves when it connected to them, without a request: here, nodes
// that advertise a max ttl of 40s (as `dlm node --max-ttl 40s` does).
// CheckNodes lists what they told and what the client warns of.
func ExampleClient_CheckNodes() {
	ctx := context.Background()
	nodes, mems := redlocktest.NewMemNodes(3)
	for _, m := range mems {
		m.SetFacts(adapter.Facts{RunID: "run-" + m.String(), MaxTTL: 40 * time.Second})
	}
	client, err := redlock.New(nodes)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	_, err = client.TryLock(ctx, "invoices", redlock.WithTTL(time.Minute))
	fmt.Println("1m ttl refused:", errors.Is(err, redlock.ErrInvalid))

	lock, err := client.TryLock(ctx, "invoices", redlock.WithTTL(30*time.Second))
	if err != nil {
		panic(err)
	}
	fmt.Println("30s ttl granted")
	_ = lock.Unlock(ctx)

	rep, err := client.CheckNodes(ctx)
	fmt.Println(len(rep.Facts[0]), rep.Facts[0][0].MaxTTL, len(rep.Warnings), err)
	// Output:
	// 1m ttl refused: true
	// 30s ttl granted
	// 1 40s 0 <nil>
}

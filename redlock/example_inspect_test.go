package redlock_test

import (
	"context"
	"fmt"

	"dlm/redlock"
)

// Any client can see how a resource is held and by whom, without its
// value.
func ExampleClient_Inspect() {
	nodes := exampleNodes()
	worker, err := redlock.New(nodes, redlock.WithOwner("report worker 3"))
	if err != nil {
		panic(err)
	}
	defer worker.Close()
	viewer, err := redlock.New(nodes)
	if err != nil {
		panic(err)
	}
	defer viewer.Close()
	ctx := context.Background()

	if _, err := worker.Lock(ctx, "reports"); err != nil {
		panic(err)
	}
	// The owner note is written in the background after the client's
	// first grant; Close waits for it (here only to make the output
	// certain: the lock itself lives on until its ttl).
	worker.Close()
	info, err := viewer.Inspect(ctx, "reports")
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Resource, info.Mode, "by", info.Owner)
	// Output: reports write by report worker 3
}

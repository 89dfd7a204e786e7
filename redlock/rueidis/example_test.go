package rueidis_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"dlm/redlock"
	"dlm/redlock/rueidis"
)

// Dial a client over five independent masters and run a critical section.
func ExampleDial() {
	client, err := rueidis.Dial([]string{
		"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379",
		"redis://10.0.0.4:6379", "redis://10.0.0.5:6379",
	}, redlock.WithTTL(30*time.Second))
	if err != nil {
		log.Fatal(err) // a bad URL, a duplicate node, an invalid option
	}
	defer client.Close()

	ctx := context.Background()
	lock, err := client.Lock(ctx, "invoices")
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Unlock(ctx)
	fmt.Println("held for", lock.Validity().Round(time.Second))
}

// Workers of one process share one client: when one unlocks while another
// waits for the same resource, Unlock acquires on the waiter's behalf,
// each node turning the key from the holder's value into the waiter's in
// one script, so that the key is never free; the waiter's Lock returns
// once a quorum holds its own value. (With redlock.WithHandoffKeep the
// waiter may instead keep the holder's lock as it is, value included,
// and Unlock asks no node.) After 8 hand-overs in a row the release is
// announced to every client's waiters, so that other processes get their
// turn.
func ExampleDial_workersShareALock() {
	client, err := rueidis.Dial([]string{
		"redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379",
		"redis://10.0.0.4:6379", "redis://10.0.0.5:6379",
	}, redlock.WithHandoffLimit(8))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				lock, err := client.Lock(ctx, "ledger")
				if err != nil {
					log.Print(err)
					return
				}
				fmt.Println("worker", w, "holds", lock.Resource(), "until", lock.Until().Format(time.StampMilli))
				_ = lock.Unlock(ctx) // hands over to the next worker waiting, if any
			}
		}()
	}
	wg.Wait()
}

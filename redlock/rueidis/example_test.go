package rueidis_test

import (
	"context"
	"fmt"
	"log"
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

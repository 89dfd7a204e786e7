package election_test

import (
	"context"
	"fmt"
	"time"

	"dlm/election"
	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// exampleClient returns a fenced lock client over five in-memory nodes
// (redlocktest.MemNode), enough to run the examples without servers. Real
// deployments dial Redis masters with redlock/rueidis or redlock/goredis,
// with redlock.WithFencing.
func exampleClient() *redlock.Client {
	nodes, _ := redlocktest.NewMemNodes(5)
	c, err := redlock.New(nodes, redlock.WithFencing(), redlock.WithTTL(2*time.Second))
	if err != nil {
		panic(err)
	}
	return c
}

// Campaign until elected, lead while Done is open, resign.
func ExampleElection_Campaign() {
	client := exampleClient()
	defer client.Close()
	e, err := election.New(client, "scheduler")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	lead, err := e.Campaign(ctx, "host-a")
	if err != nil {
		panic(err)
	}
	fmt.Println("leader", lead.ID(), "term", lead.Term())
	select {
	case <-lead.Done():
		fmt.Println("leadership lost:", lead.Err())
	default:
		// ... lead: pass lead.Term() with every write as a fencing token ...
	}
	if err := lead.Resign(ctx); err != nil {
		panic(err)
	}

	// The next leader's term is higher: a store that saw it refuses the
	// first leader's writes.
	next, err := e.Campaign(ctx, "host-b")
	if err != nil {
		panic(err)
	}
	defer next.Resign(ctx)
	fmt.Println("leader", next.ID(), "term", next.Term())
	// Output:
	// leader host-a term 1
	// leader host-b term 2
}

// Read who leads, from any process.
func ExampleElection_Leader() {
	client := exampleClient()
	defer client.Close()
	e, _ := election.New(client, "scheduler")
	ctx := context.Background()

	_, ok, err := e.Leader(ctx)
	fmt.Println("leader before any campaign:", ok, err)

	lead, _ := e.Campaign(ctx, "host-a")
	ld, ok, _ := e.Leader(ctx)
	fmt.Println("leader:", ok, ld.ID, ld.Term)

	_ = lead.Resign(ctx)
	ld, ok, _ = e.Leader(ctx)
	fmt.Println("after resign:", ok, ld.ID == "", "last term", ld.Term)
	// Output:
	// leader before any campaign: false <nil>
	// leader: true host-a 1
	// after resign: false true last term 1
}

// Follow the changes of leader.
func ExampleElection_Observe() {
	client := exampleClient()
	defer client.Close()
	e, _ := election.New(client, "scheduler", election.WithPollInterval(10*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	changes := e.Observe(ctx)
	fmt.Println("first:", (<-changes).Leader)
	lead, _ := e.Campaign(ctx, "host-a")
	for c := range changes {
		if c.Leader.ID == "host-a" {
			fmt.Println("elected:", c.Leader, "since the campaign returned:", !c.Since.After(time.Now()))
			break
		}
	}
	_ = lead.Resign(ctx)
	for c := range changes {
		if c.Leader.ID == "" {
			fmt.Println("no leader since term", c.Leader.Term)
			break
		}
	}
	// Output:
	// first: { 0}
	// elected: {host-a 1} since the campaign returned: true
	// no leader since term 1
}

// Show an election beside the locks, from a client without fencing, as
// dlm status does.
func ExampleReadStatus() {
	nodes, _ := redlocktest.NewMemNodes(3)
	client, _ := redlock.New(nodes, redlock.WithFencing())
	defer client.Close()
	e, _ := election.New(client, "scheduler")
	lead, _ := e.Campaign(context.Background(), "host-a")
	defer lead.Resign(context.Background())

	reader, _ := redlock.New(nodes) // no fencing: it only reads
	defer reader.Close()
	for _, resource := range []string{"election:scheduler", "backup"} {
		name, ok := election.NameOf(resource)
		if !ok {
			continue
		}
		st, err := election.ReadStatus(context.Background(), reader, name)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("election %s: leader %s, term %d, elected before now: %v\n", name, st.Leader.ID, st.Leader.Term, st.Since.Before(time.Now().Add(time.Millisecond)))
	}
	// Output:
	// election scheduler: leader host-a, term 1, elected before now: true
}

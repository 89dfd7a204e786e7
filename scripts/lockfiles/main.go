// Command lockfiles lists the files of the lock core and its rueidis adapter
// that one default Lock and its Unlock run: it starts five redis-server
// processes on free loopback ports, dials a default client with
// rueidis.Dial, locks and unlocks one key once to warm the connections,
// clears the coverage counters, then locks and unlocks another key and
// writes the counters. Built with -cover by scripts/lockfiles.sh, which
// turns the counters into the list; run that script, not this command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/coverage"
	"time"

	"dlm/redlock"
	"dlm/redlock/redisproc"
	"dlm/redlock/rueidis"
)

func main() {
	dir := flag.String("out", "", "directory for the coverage counters (required)")
	cold := flag.Bool("cold", false, "count the first Lock of the client too (its connections and node checks)")
	flag.Parse()
	if err := run(context.Background(), *dir, *cold); err != nil {
		fmt.Fprintln(os.Stderr, "lockfiles:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string, cold bool) error {
	if dir == "" {
		return errors.New("-out DIR is required")
	}
	var urls []string
	var procs []*redisproc.Process
	for range 5 {
		p, err := redisproc.Start(ctx, redisproc.Config{})
		if err != nil {
			return fmt.Errorf("starting redis-server: %w", err)
		}
		defer p.Close()
		urls = append(urls, p.URL())
		procs = append(procs, p)
	}
	client, err := rueidis.Dial(urls)
	if err != nil {
		return err
	}
	defer client.Close()
	if !cold {
		if err := lockUnlock(ctx, client, "lockfiles:warm"); err != nil {
			return err
		}
		// The first lock of a client leaves its owner note on every node
		// in the background; clearing the counters before those writes
		// land would count them as the measured lock's.
		if err := ownerNoted(ctx, procs); err != nil {
			return err
		}
	}
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	if err := lockUnlock(ctx, client, "lockfiles:measured"); err != nil {
		return err
	}
	if err := coverage.WriteMetaDir(dir); err != nil {
		return err
	}
	return coverage.WriteCountersDir(dir)
}

func lockUnlock(ctx context.Context, c *redlock.Client, key string) error {
	l, err := c.Lock(ctx, key)
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

// ownerNoted waits, for at most ten seconds, until a quorum of the
// processes hold the client's owner note (it goes to the nodes heard from
// at the grant, in the background) and their number has not changed for
// 50 ms.
func ownerNoted(ctx context.Context, procs []*redisproc.Process) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	last, same := -1, 0
	for {
		n := 0
		for _, p := range procs {
			if keys, err := p.Keys(ctx, redlock.DefaultInfoPrefix+"owner:"); err == nil && len(keys) > 0 {
				n++
			}
		}
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		if n > len(procs)/2 && same >= 5 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the warm-up lock's owner note on %d of %d nodes: %w", n, len(procs), ctx.Err())
		case <-tick.C:
		}
	}
}

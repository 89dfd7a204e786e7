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
	for range 5 {
		p, err := redisproc.Start(ctx, redisproc.Config{})
		if err != nil {
			return fmt.Errorf("starting redis-server: %w", err)
		}
		defer p.Close()
		urls = append(urls, p.URL())
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

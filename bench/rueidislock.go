package main

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislockLocker is rueidis' own lock on the first node only (KeyMajority
// 1: one key on one Redis), as its README sets it up for a single Redis
// >= 7.0.5: client-side caching tells a waiting WithContext at once when the
// key it waits for is deleted. The single-node reference for contention.
type rueidislockLocker struct {
	l rueidislock.Locker
}

func openRueidislock(urls []string) (locker, error) {
	o, err := rueidis.ParseURL(urls[0])
	if err != nil {
		return nil, fmt.Errorf("rueidislock: node URL: %w", err)
	}
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   o,
		KeyMajority:    1,
		NoLoopTracking: true,
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock: %w", err)
	}
	return &rueidislockLocker{l: l}, nil
}

// release turns the lock's cancel, which deletes the key and returns once
// it is deleted, into a release.
func release(cancel context.CancelFunc) func(context.Context) error {
	return func(context.Context) error {
		cancel()
		return nil
	}
}

func (r *rueidislockLocker) TryLock(ctx context.Context, key string) (func(context.Context) error, error) {
	_, cancel, err := r.l.TryWithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return release(cancel), nil
}

func (r *rueidislockLocker) Lock(ctx context.Context, key string) (func(context.Context) error, error) {
	_, cancel, err := r.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return release(cancel), nil
}

func (r *rueidislockLocker) close() { r.l.Close() }

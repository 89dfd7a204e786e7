package scripts

import (
	"context"
	"strconv"
	"time"
)

// RWSteps are the read-write locks of a Redis node (adapter.RWNode), each
// method one run of RW with the arguments rw.lua takes. An adapter embeds
// it in its Node, built by NewRWSteps with the two ways the adapter runs
// RW, so that what each step asks of the script is written once for every
// adapter.
type RWSteps struct {
	run       func(ctx context.Context, keys []string, args ...string) (int64, error)
	runFenced func(ctx context.Context, keys []string, args ...string) (bool, uint64, error)
}

// NewRWSteps returns the steps that run RW through run, which returns the
// script's integer reply, and runFenced, which reads the {set, fence}
// reply of wacquirefenced (KEYS[1] the lock key, KEYS[2] the fence key).
func NewRWSteps(
	run func(ctx context.Context, keys []string, args ...string) (int64, error),
	runFenced func(ctx context.Context, keys []string, args ...string) (bool, uint64, error),
) RWSteps {
	return RWSteps{run: run, runFenced: runFenced}
}

// RAcquire adds a reader of key with value and an expiry of ttl when key is
// absent or held by readers and no writer waits.
func (s RWSteps) RAcquire(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return s.step(ctx, key, "racquire", value, ms(ttl))
}

// RRelease removes the reader of key with value.
func (s RWSteps) RRelease(ctx context.Context, key, value string) (bool, error) {
	return s.step(ctx, key, "rrelease", value)
}

// RExtend resets the expiry of the reader of key with value to ttl when it
// still holds key (R17).
func (s RWSteps) RExtend(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	return s.step(ctx, key, "rextend", value, ms(ttl))
}

// WAcquire sets key to value with an expiry of ttl when no live reader or
// writer holds it; otherwise, when readers hold it and waiter is not empty,
// it leaves or refreshes waiter's mark.
func (s RWSteps) WAcquire(ctx context.Context, key, value, waiter string, ttl time.Duration) (bool, error) {
	return s.step(ctx, key, "wacquire", value, ms(ttl), waiter)
}

// WUnwait removes waiter's mark from key.
func (s RWSteps) WUnwait(ctx context.Context, key, waiter string) (bool, error) {
	return s.step(ctx, key, "wunwait", waiter)
}

// WMark leaves or refreshes waiter's mark where live readers hold key,
// without acquiring (a plain lock's waiting mark).
func (s RWSteps) WMark(ctx context.Context, key, waiter string, ttl time.Duration) (bool, error) {
	return s.step(ctx, key, "wmark", waiter, ms(ttl))
}

// WAcquireFenced is WAcquire that, when it set key, also reads the fence
// value under fenceKey, in the same script (R18 phase 1).
func (s RWSteps) WAcquireFenced(ctx context.Context, key, fenceKey, value, waiter string, ttl time.Duration) (bool, uint64, error) {
	return s.runFenced(ctx, []string{key, fenceKey}, "wacquirefenced", value, ms(ttl), waiter)
}

// step runs the operation op of RW on key with args and reports whether it
// acted.
func (s RWSteps) step(ctx context.Context, key, op string, args ...string) (bool, error) {
	v, err := s.run(ctx, []string{key}, append([]string{op}, args...)...)
	return v == 1 && err == nil, err
}

// ms is d in whole milliseconds, as the scripts take it.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

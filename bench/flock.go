package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// libFlock is the kernel's own lock, flock(2), on one host: the ceiling
// of the contention workloads (no network, no quorum, no ttl).
const libFlock = "flock(2) (1 host)"

// flockLib is flock(2) as a library of the contention workloads. It needs
// no node: every process of a run locks a file named after the key in one
// directory of the host's temporary directory.
func flockLib() lib {
	return lib{name: libFlock, single: true, open: func([]string) (locker, error) {
		dir := filepath.Join(os.TempDir(), "dlm-bench-flock")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("flock: %w", err)
		}
		return flockLocker{dir: dir}, nil
	}}
}

// flockLocker locks a key by flock(2) on a file of its own per key. Each
// acquisition opens the file, so that each holds its own open file
// description: flock excludes those from each other within one process
// as across processes. Lock blocks in the kernel and does not see its
// context end (a waiter gets the lock once its holders release it).
type flockLocker struct{ dir string }

// errFlockHeld is TryLock's answer when another holder has the file.
var errFlockHeld = errors.New("flock: held by another")

func (f flockLocker) TryLock(_ context.Context, key string) (func(context.Context) error, error) {
	return f.lock(key, syscall.LOCK_EX|syscall.LOCK_NB)
}

func (f flockLocker) Lock(_ context.Context, key string) (func(context.Context) error, error) {
	return f.lock(key, syscall.LOCK_EX)
}

func (f flockLocker) lock(key string, how int) (func(context.Context) error, error) {
	fd, err := os.OpenFile(filepath.Join(f.dir, strings.ReplaceAll(key, "/", "_")), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("flock: %w", err)
	}
	for {
		err = syscall.Flock(int(fd.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		fd.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errFlockHeld
		}
		return nil, fmt.Errorf("flock: %w", err)
	}
	return func(context.Context) error {
		defer fd.Close()
		return syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
	}, nil
}

func (flockLocker) close() {}

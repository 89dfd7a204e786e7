package redlock_test

import (
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// BenchmarkLockAll measures a set of 1, 2, 5 and 10 resources locked as one
// (TryLockAll+Unlock) over 5 local redis-server nodes through goredis,
// against one resource (size 1): go test -run '^$' -bench LockAll -benchmem ./redlock/
func BenchmarkLockAll(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	c, err := goredis.Dial(cl.URLs(), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	redlocktest.BenchLockAll(b, c, 1, 2, 5, 10)
}

package redlock_test

import (
	"testing"

	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// BenchmarkLockUnlock measures acquire+release pairs against 5 local
// redis-server nodes: go test -run '^$' -bench LockUnlock -benchmem ./redlock/
func BenchmarkLockUnlock(b *testing.B) {
	cl := redlocktest.Start(b, 5)
	c, err := goredis.Dial(cl.URLs())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	redlocktest.BenchLockUnlock(b, c)
}

package main

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/goredis"
	"dlm/redlock/redlocktest"
)

// dlm status counts the lock keys of a cluster node on every master, and
// dlm doctor judges the fence keys of every master: the keys of a cluster
// node are spread over its masters by hash slot, so the seed master holds
// only its share.
func TestClusterEveryMasterCountedAndFenceChecked(t *testing.T) {
	t.Parallel()
	c := redlocktest.StartRedisCluster(t, 3, 0)
	cl, err := goredis.Dial([]string{c.URL()}, redlock.WithNodeTimeout(time.Second), redlock.WithFencing(), redlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const locks = 30
	onSeed := 0
	for i := range locks {
		r := fmt.Sprintf("r%d", i)
		l, err := cl.TryLock(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Unlock(t.Context()) }()
		if n, _ := c.Masters()[0].Client().Exists(t.Context(), redlock.HashTaggedKey(redlock.DefaultKeyPrefix, r)).Result(); n == 1 {
			onSeed++
		}
	}
	if onSeed == 0 || onSeed == locks {
		t.Fatalf("%d of %d lock keys on the seed master: want them spread over the masters", onSeed, locks)
	}
	r := runDLM(t, 30*time.Second, nil, "status", "--nodes", c.URL())
	row := regexp.MustCompile(`(?m)^cluster:\S+\s+up\s.*\s(\d+)\s*$`).FindStringSubmatch(r.stdout)
	if row == nil || row[1] != fmt.Sprint(locks) {
		t.Errorf("status counts %v lock keys on the cluster node, want %d (the seed holds %d):\n%s", row, locks, onSeed, r.stdout)
	}
	// Every master holds fence keys of its slots' resources, and none
	// persists them: doctor judges each.
	r = runDLM(t, 30*time.Second, nil, "doctor", "--nodes", c.URL())
	for _, m := range c.Addrs() {
		re := regexp.MustCompile(`(?m)^\S+\s+` + regexp.QuoteMeta(m) + `\s+\[fencing tokens\]`)
		if !re.MatchString(r.stdout) {
			t.Errorf("doctor has no fencing finding for master %s, which holds fence keys:\n%s", m, r.stdout)
		}
	}
	if regexp.MustCompile(`(?m)^\S+\s+cluster:\S+\s+\[fencing tokens\]`).MatchString(r.stdout) {
		t.Errorf("doctor judges the cluster node's fencing by its seed alone:\n%s", r.stdout)
	}
}

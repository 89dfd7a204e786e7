package rueidis_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"dlm/redlock/internal/slots"
	"dlm/redlock/redlocktest"
	"dlm/redlock/rueidis"
)

// A cluster node's release subscription outlives the migration of its
// key's slot: the master that gave the slot away ends the subscriptions
// to its shard channels (sunsubscribe), and the node subscribes again on
// the slot's new master (rueidis does; the go-redis adapter did not).
func TestClusterWatchFollowsASlotMigration(t *testing.T) {
	cl := redlocktest.StartRedisCluster(t, 2, 0)
	n, err := rueidis.DialNode(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	heard := make(chan string, 100)
	w, err := n.WatchReleases(func(_, value string) {
		select {
		case heard <- value:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	ctx := t.Context()
	const key = "{moving}"
	if err := w.Watch(ctx, key); err != nil {
		t.Fatal(err)
	}
	// hears reports whether a release of key announced now reaches the
	// watch within a second.
	round := 0
	hears := func() bool {
		round++
		value := "v" + strconv.Itoa(round)
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if ok, err := n.Acquire(actx, key, value, time.Minute); !ok || err != nil {
			return false
		}
		if ok, err := n.ReleaseAnnounce(actx, key, value); !ok || err != nil {
			return false
		}
		for {
			select {
			case v := <-heard:
				if v == value {
					return true
				}
			case <-actx.Done():
				return false
			}
		}
	}
	if !hears() {
		t.Fatal("a release announced before the migration was not heard")
	}
	slot := slots.Of(rueidis.ChannelPrefix + key)
	if err := cl.MoveSlot(ctx, slot, 1-cl.MasterOf(slot)); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(15 * time.Second); !hears(); {
		if time.Now().After(end) {
			t.Fatalf("no release of %s heard in 15 s after its slot %d moved to another master", key, slot)
		}
	}
}

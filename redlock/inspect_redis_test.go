package redlock_test

import (
	"context"
	"testing"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// Inspect, Locks and ForceRelease over real redis-server nodes, for every
// adapter: the owner note, the readers' hash and the scan as the scripts
// and commands of each adapter give them.
func TestInspectOverRedis(t *testing.T) {
	eachAdapterParallel(t, func(t *testing.T, a nodeAdapter) {
		ctx := t.Context()
		cl, holder := cluster(t, a, 3, redlock.WithOwner("holder"))
		viewer := dial(t, a, cl)
		l, err := holder.Lock(ctx, "w", redlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		r, err := holder.RLock(ctx, "r", redlock.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		// The owner note is written in the background after the grant.
		redlocktest.Eventually(t, 10*time.Second, func() bool {
			info, err := viewer.Inspect(ctx, "w")
			return err == nil && info.Owner == "holder"
		}, "the owner of w never showed")
		info, err := viewer.Inspect(ctx, "w")
		if err != nil || info.Mode != redlock.ModeWrite || info.Validity <= 20*time.Second || info.Validity > 30*time.Second {
			t.Errorf("Inspect(w) = %v, validity %v, %v; want write, about 30s", info.Mode, info.Validity, err)
		}
		info, err = viewer.Inspect(ctx, "r")
		if err != nil || info.Mode != redlock.ModeRead || len(info.Readers) != 1 || info.Readers[0].Owner != "holder" {
			t.Errorf("Inspect(r) = %v %+v, %v; want read by holder", info.Mode, info.Readers, err)
		}
		infos, complete, err := viewer.Locks(ctx, 0)
		if err != nil || !complete || len(infos) != 2 || infos[0].Resource != "r" || infos[1].Resource != "w" {
			t.Errorf("Locks = %d infos, complete %v, %v; want r and w", len(infos), complete, err)
		}
		if _, err := viewer.ForceRelease(ctx, "w"); err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(ctx); err == nil {
			t.Error("the holder's Extend after ForceRelease succeeded")
		}
		if _, err := viewer.ForceRelease(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if info, _ := viewer.Inspect(ctx, "r"); info.Mode != redlock.ModeFree {
			t.Errorf("r after ForceRelease: %v; want free", info.Mode)
		}
		_ = r.Unlock(context.Background())
	})
}

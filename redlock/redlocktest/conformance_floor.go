package redlocktest

import (
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// runFloorConformance runs the cases of adapter.FenceFloorNode: the floor
// that every fenced acquisition reads (of one resource, of a writer, of a
// set) and that its raise repairs, so that a node that lost its fence
// values (a floor key missing, or set before a restart) is told apart
// from one that kept them. The floor keys are only read and written
// through the node: their content is the adapter's.
func runFloorConformance(t *testing.T, n adapter.FenceFloorNode) {
	ctx := t.Context()
	const ttl = 5 * time.Second
	check := func(name string, ok bool, fence uint64, kept bool, err error, wantOK bool, wantFence uint64, wantKept bool) {
		t.Helper()
		if err != nil || ok != wantOK || fence != wantFence || kept != wantKept {
			t.Fatalf("%s = %v, %d, kept %v, %v; want %v, %d, kept %v, nil", name, ok, fence, kept, err, wantOK, wantFence, wantKept)
		}
	}
	mustOK := func(name string, ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("%s = %v, %v; want true, nil", name, ok, err)
		}
	}

	ok, f, kept, err := n.AcquireFencedFloor(ctx, "{fl}:a", "{fl}:a-fence", "{fl}:floor", "v", ttl)
	check("AcquireFencedFloor without a floor key", ok, f, kept, err, true, 0, false)
	ok, err = n.RaiseFenceRepair(ctx, "{fl}:a", "{fl}:a-fence", "{fl}:floor", "v", 100, 0)
	mustOK("RaiseFenceRepair by the holder", ok, err)
	ok, f, kept, err = n.AcquireFencedFloor(ctx, "{fl}:a", "{fl}:a-fence", "{fl}:floor", "w", ttl)
	check("AcquireFencedFloor of a held key", ok, f, kept, err, false, 0, true)
	if _, err := n.Release(ctx, "{fl}:a", "v"); err != nil {
		t.Fatal(err)
	}
	ok, f, kept, err = n.AcquireFencedFloor(ctx, "{fl}:a", "{fl}:a-fence", "{fl}:floor", "w", ttl)
	check("AcquireFencedFloor after the repair", ok, f, kept, err, true, 100, true)
	// The floor counts as every resource's fence on the node.
	ok, f, kept, err = n.AcquireFencedFloor(ctx, "{fl}:b", "{fl}:b-fence", "{fl}:floor", "w", ttl)
	check("AcquireFencedFloor of another resource", ok, f, kept, err, true, 100, true)

	// A raise with a retention raises a kept floor to its token and gives
	// it the retention's expiry, as it gives the fence: once the fence
	// expired, the resource reads as the floor, which must not then be
	// below the token (a client without retention would count up from
	// it). A raise without retention leaves a kept floor alone.
	ok, f, kept, err = n.AcquireFencedFloor(ctx, "{fl}:m", "{fl}:m-fence", "{fl}:floor-r", "v", ttl)
	check("AcquireFencedFloor without a floor key", ok, f, kept, err, true, 0, false)
	ok, err = n.RaiseFenceRepair(ctx, "{fl}:m", "{fl}:m-fence", "{fl}:floor-r", "v", 100, 0)
	mustOK("RaiseFenceRepair without retention over a missing floor", ok, err)
	ok, f, kept, err = n.AcquireFencedFloor(ctx, "{fl}:n", "{fl}:n-fence", "{fl}:floor-r", "v", ttl)
	check("AcquireFencedFloor of a new resource", ok, f, kept, err, true, 100, true)
	ok, err = n.RaiseFenceRepair(ctx, "{fl}:n", "{fl}:n-fence", "{fl}:floor-r", "v", 300, time.Hour)
	mustOK("RaiseFenceRepair with retention over a kept floor", ok, err)
	ok, f, kept, err = n.AcquireFencedFloor(ctx, "{fl}:o", "{fl}:o-fence", "{fl}:floor-r", "v", ttl)
	check("AcquireFencedFloor after a raise with retention", ok, f, kept, err, true, 300, true)
	if in, isInspect := n.(adapter.InspectNode); isInspect {
		st, err := in.Inspect(ctx, "{fl}:floor-r")
		if err != nil || st.TTL <= 0 || st.TTL > time.Hour {
			t.Fatalf("Inspect of the floor after a raise with retention 1h: ttl %v, %v; want within (0, 1h], nil", st.TTL, err)
		}
	}
	ok, err = n.RaiseFenceRepair(ctx, "{fl}:o", "{fl}:o-fence", "{fl}:floor-r", "v", 400, 0)
	mustOK("RaiseFenceRepair without retention over a kept floor", ok, err)
	ok, f, kept, err = n.AcquireFencedFloor(ctx, "{fl}:p", "{fl}:p-fence", "{fl}:floor-r", "v", ttl)
	check("AcquireFencedFloor after a raise without retention", ok, f, kept, err, true, 300, true)

	if rn, isRW := n.(adapter.RWNode); isRW {
		ok, f, kept, err = n.WAcquireFencedFloor(ctx, "{fl}:w", "{fl}:w-fence", "{fl}:floor", "w", "", ttl)
		check("WAcquireFencedFloor of a free key", ok, f, kept, err, true, 100, true)
		ok, f, kept, err = n.WAcquireFencedFloor(ctx, "{fl}:w", "{fl}:w-fence", "{fl}:floor", "x", "", ttl)
		check("WAcquireFencedFloor of a held key", ok, f, kept, err, false, 0, true)
		ok, f, kept, err = n.WAcquireFencedFloor(ctx, "{fl}:w2", "{fl}:w2-fence", "{fl}:no-floor", "w", "", ttl)
		check("WAcquireFencedFloor without a floor key", ok, f, kept, err, true, 0, false)
		ok, err = n.RaiseFenceRepair(ctx, "{fl}:w2", "{fl}:w2-fence", "{fl}:no-floor", "w", 150, 0)
		mustOK("RaiseFenceRepair of a writer", ok, err)
		if ok, err := rn.RAcquire(ctx, "{fl}:r", "reader", ttl); !ok || err != nil {
			t.Fatalf("RAcquire = %v, %v", ok, err)
		}
		ok, f, kept, err = n.WAcquireFencedFloor(ctx, "{fl}:r", "{fl}:r-fence", "{fl}:floor", "w", "W", ttl)
		check("WAcquireFencedFloor while a reader holds", ok, f, kept, err, false, 0, true)
	}

	if _, isMulti := n.(adapter.MultiNode); isMulti {
		keys, fences := []string{"fs{a}", "fs{b}"}, []string{"fsf{a}", "fsf{b}"}
		floors := []string{"fsl{a}", "fsl{b}"}
		ok, f, kept, err = n.AcquireAllFencedFloor(ctx, keys, fences, floors, "v", ttl)
		check("AcquireAllFencedFloor without floor keys", ok, f, kept, err, true, 0, false)
		ok, err = n.RaiseFencesRepair(ctx, keys, fences, floors, "v", 200, 0)
		mustOK("RaiseFencesRepair by the holder", ok, err)
		ok, f, kept, err = n.AcquireAllFencedFloor(ctx, keys, fences, floors, "w", ttl)
		check("AcquireAllFencedFloor of a held set", ok, f, kept, err, false, 0, true)
		mn := n.(adapter.MultiNode)
		if _, err := mn.ReleaseAll(ctx, keys, "v", false); err != nil {
			t.Fatal(err)
		}
		ok, f, kept, err = n.AcquireAllFencedFloor(ctx, keys, fences, floors, "w", ttl)
		check("AcquireAllFencedFloor after the repair", ok, f, kept, err, true, 200, true)
		if _, err := mn.ReleaseAll(ctx, keys, "w", false); err != nil {
			t.Fatal(err)
		}
		// One floor key of the set missing: not kept, the others'
		// floors still count.
		ok, f, kept, err = n.AcquireAllFencedFloor(ctx, []string{"fs{a}", "fs{c}"}, []string{"fsf{a}", "fsf{c}"}, []string{"fsl{a}", "fsl{c}"}, "x", ttl)
		check("AcquireAllFencedFloor with one floor key missing", ok, f, kept, err, true, 200, false)
		if spansSlots(n) {
			return // a cluster keeps a floor per resource, in its slot
		}
		// The floors of a set may be one key (a node's floor).
		ok, f, kept, err = n.AcquireAllFencedFloor(ctx, []string{"fs{d}", "fs{e}"}, []string{"fsf{d}", "fsf{e}"}, []string{"fsl{a}", "fsl{a}"}, "x", ttl)
		check("AcquireAllFencedFloor with one floor key for the set", ok, f, kept, err, true, 200, true)
	}
}

package facts

import (
	"testing"

	"dlm/redlock/adapter"
)

// Known: nothing and version 0 before the first Set; each Set replaces
// the server's facts by address, keeps the others, sorts by address and
// moves the version on.
func TestKnown(t *testing.T) {
	var k Known
	if got, v := k.Get(); got != nil || v != 0 {
		t.Fatalf("Get before Set = %v, %d; want nothing, 0", got, v)
	}
	k.Set(adapter.Facts{Addr: "b:1", RunID: "b"})
	k.Set(adapter.Facts{Addr: "a:1", RunID: "a"})
	first, v1 := k.Get()
	k.Set(adapter.Facts{Addr: "b:1", RunID: "b-restarted"})
	got, v2 := k.Get()
	if len(got) != 2 || got[0].RunID != "a" || got[1].RunID != "b-restarted" || v2 != v1+1 || v1 != 2 {
		t.Errorf("after three Sets = %+v, version %d (was %d); want a, b-restarted sorted, versions 2 then 3", got, v2, v1)
	}
	if first[1].RunID != "b" {
		t.Errorf("a published slice changed under its reader: %+v", first)
	}
}

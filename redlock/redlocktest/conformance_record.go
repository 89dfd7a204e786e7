package redlocktest

import (
	"testing"
	"time"

	"dlm/redlock/adapter"
)

// runRecordConformance checks the RecordNode capability: only the holder
// of the lock key stores a record; a record is read only while the key
// holds the value it was stored for (never a previous holder's, never
// after expiry or release); the fence is read with it; the retention is
// set on the record key.
func runRecordConformance(t *testing.T, in Inspector, n adapter.RecordNode) {
	ctx := t.Context()
	const ttl = 5 * time.Second
	put := func(name, key, value, record string, retention time.Duration, want bool) {
		t.Helper()
		ok, err := n.PutRecord(ctx, key, "{r}:rec", value, record, retention)
		if err != nil || ok != want {
			t.Fatalf("%s: PutRecord = %v, %v; want %v, nil", name, ok, err, want)
		}
	}
	read := func(name, wantRecord string, wantOK bool, wantFence uint64) {
		t.Helper()
		rec, ok, fence, err := n.ReadRecord(ctx, "{r}:l", "{r}:rec", "{r}:fence")
		if err != nil || ok != wantOK || rec != wantRecord || fence != wantFence {
			t.Fatalf("%s: ReadRecord = %q, %v, %d, %v; want %q, %v, %d, nil", name, rec, ok, fence, err, wantRecord, wantOK, wantFence)
		}
	}
	read("nothing stored", "", false, 0)
	put("a key that does not exist", "{r}:l", "a", "1 alice", 0, false)
	if ok, err := n.Acquire(ctx, "{r}:l", "a", ttl); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	read("held, no record", "", false, 0)
	put("a non-holder", "{r}:l", "b", "1 bob", 0, false)
	read("after a non-holder's put", "", false, 0)
	put("the holder", "{r}:l", "a", "1 alice", 0, true)
	read("the holder's record", "1 alice", true, 0)
	if err := in.Put(ctx, "{r}:fence", "7"); err != nil {
		t.Fatal(err)
	}
	read("with a fence", "1 alice", true, 7)
	if d, ok, err := in.TTL(ctx, "{r}:rec"); err != nil || !ok || d != NoExpiry {
		t.Fatalf("record TTL without retention = %v, %v, %v; want no expiry", d, ok, err)
	}
	// A new holder, before it stores its own record, is not reported with
	// the previous holder's record.
	if ok, err := n.Release(ctx, "{r}:l", "a"); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	read("released", "", false, 7)
	if ok, err := n.Acquire(ctx, "{r}:l", "b", ttl); err != nil || !ok {
		t.Fatalf("Acquire by b = %v, %v", ok, err)
	}
	read("new holder, old record", "", false, 7)
	put("the new holder", "{r}:l", "b", "8 bob:with:colons", time.Hour, true)
	read("the new holder's record", "8 bob:with:colons", true, 7)
	if d, ok, err := in.TTL(ctx, "{r}:rec"); err != nil || !ok || d <= time.Hour-time.Minute || d > time.Hour {
		t.Fatalf("record TTL with retention 1h = %v, %v, %v", d, ok, err)
	}
	// A record is bound to the value, not to whoever writes the key: a
	// key set to another value by hand hides it.
	if err := in.Put(ctx, "{r}:l", "c"); err != nil {
		t.Fatal(err)
	}
	read("a foreign value", "", false, 7)
	if err := in.Put(ctx, "{r}:fence", "not-a-number"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := n.ReadRecord(ctx, "{r}:l", "{r}:rec", "{r}:fence"); err == nil {
		t.Fatal("ReadRecord of a corrupt fence: no error")
	}
}

package redlock

import (
	"testing"

	"dlm/redlock/internal/slots"
	"dlm/redlock/scripts"
)

// With hash tags, the lock, fence and record keys of a resource share one
// hash slot whatever braces or backslashes the name holds, two resources
// never share a key, and resourceOf reads the name back.
func TestHashTagLayout(t *testing.T) {
	o := defaultClientOptions()
	o.hashTags = true
	names := []string{"r", "orders:42", "a}b", "}x", "x}", "{x}", "{", "}", `\`, `a\]b`, `a]b`, `a\}b`, `\\`, "a{b}c", "é{}"}
	seen := map[string]string{}
	for _, r := range names {
		lock, fence, record := o.keyOf(o.prefix, r), o.keyOf(o.fencePrefix, r), o.keyOf(o.recordPrefix, r)
		if s := slots.Of(lock); slots.Of(fence) != s || slots.Of(record) != s || slots.Of(scripts.ChannelPrefix+lock) != s {
			t.Errorf("%q: lock key %q, fence key %q, record key %q and release channel are in slots %d, %d, %d, %d; want one slot",
				r, lock, fence, record, s, slots.Of(fence), slots.Of(record), slots.Of(scripts.ChannelPrefix+lock))
		}
		if prev, dup := seen[lock]; dup {
			t.Errorf("resources %q and %q share the key %q", prev, r, lock)
		}
		seen[lock] = r
		if got := o.resourceOf(o.prefix, lock); got != r {
			t.Errorf("resourceOf(keyOf(%q)) = %q", r, got)
		}
	}
	if got := o.keyOf(o.prefix, "orders:42"); got != "dlm:lock:{orders:42}" {
		t.Errorf("key of orders:42 = %q, want dlm:lock:{orders:42}", got)
	}
	o.hashTags = false
	if got := o.keyOf(o.prefix, "a}b"); got != "dlm:lock:a}b" {
		t.Errorf("key without hash tags = %q, want the prefix and the name", got)
	}
}

// A prefix with a brace would move the tag: refused when hash tags are on.
func TestHashTagsRefuseBracedPrefix(t *testing.T) {
	o := defaultClientOptions()
	o.hashTags, o.fencePrefix = true, "f{x}:"
	if err := o.checkLayout(nil); err == nil {
		t.Fatal("a fence prefix with braces was accepted with hash tags")
	}
	o.hashTags = false
	if err := o.checkLayout(nil); err != nil {
		t.Fatalf("a braced prefix refused without hash tags: %v", err)
	}
}

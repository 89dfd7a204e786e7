package redlock

import "testing"

// The tagged form of a key and back, for the names that the escape
// changes and for those it does not; a key that is not in the tagged form
// comes back as it is.
func TestTaggedKeysRoundTrip(t *testing.T) {
	const p = DefaultKeyPrefix
	for _, r := range []string{"r", "a}b", `a\b`, `\]`, "{x}", "x{y", "{", "}"} {
		key := p + r
		tk := tagged(p, key)
		if want := HashTaggedKey(p, r); tk != want {
			t.Errorf("tagged(%q) = %q, want %q", key, tk, want)
		}
		if got := untagged(p, tk); got != key {
			t.Errorf("untagged(%q) = %q, want %q", tk, got, key)
		}
	}
	for _, key := range []string{p + "r", p + "{a}b", p + "{", p + "}", "other:{r}", p} {
		if got := untagged(p, key); got != key {
			t.Errorf("untagged(%q) = %q, want it as it is", key, got)
		}
	}
	if got := tagged(p, "other:r"); got != "other:r" {
		t.Errorf("tagged of a key under another prefix = %q, want it as it is", got)
	}
}

// A note is tagged when it is a fence key (Inspect reads the fence as a
// note), and left as it is when it is one of the client's own notes, also
// when the info prefix starts with the fence prefix.
func TestTagNodeNoteKeys(t *testing.T) {
	for _, tt := range []struct {
		fence, info, key, want string
	}{
		{DefaultFencePrefix, DefaultInfoPrefix, DefaultFencePrefix + "r", DefaultFencePrefix + "{r}"},
		{DefaultFencePrefix, DefaultInfoPrefix, DefaultInfoPrefix + "owner:x", DefaultInfoPrefix + "owner:x"},
		{"f:", "f:info:", "f:info:owner:x", "f:info:owner:x"},
		{"f:", "f:info:", "f:r", "f:{r}"},
		{"x:f:", "x:", "x:f:r", "x:f:{r}"},
	} {
		n := &tagNode{fence: tt.fence, info: tt.info}
		if got := n.noteKey(tt.key); got != tt.want {
			t.Errorf("fence %q, info %q: noteKey(%q) = %q, want %q", tt.fence, tt.info, tt.key, got, tt.want)
		}
	}
}

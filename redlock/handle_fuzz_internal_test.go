package redlock

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// stubNode is a Node that holds nothing: handleTarget needs a client, not
// its nodes.
type stubNode struct{ name string }

func (n stubNode) String() string { return n.name }
func (stubNode) Acquire(context.Context, string, string, time.Duration) (bool, error) {
	return false, nil
}
func (stubNode) Release(context.Context, string, string) (bool, error) { return false, nil }
func (stubNode) Extend(context.Context, string, string, time.Duration) (bool, error) {
	return false, nil
}

// handleText encodes fields as a handle's text form, as MarshalText would
// but without its checks, so that any field can be edited.
func handleText(t testing.TB, fields map[string]any) string {
	js, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return handlePrefix + base64.RawURLEncoding.EncodeToString(js)
}

// FuzzParseHandle decodes handles with every field edited (the seeds edit
// each field of a valid handle in turn; the fuzzer goes on from there) and
// checks what a handle may carry: a text is refused
// with ErrInvalid and an error that never quotes the value, or it is a
// handle that MarshalText writes back to the same handle, whose keys a
// client finds under its own key prefix only, and whose ttl a client
// refuses past its bound.
func FuzzParseHandle(f *testing.F) {
	const value = "s3cret-value-of-the-handle-01234"
	valid := func() map[string]any {
		return map[string]any{
			"resource": "r", "resources": []string{"r"}, "value": value,
			"until": "2030-01-02T03:04:05.678Z", "ttl": "10s", "token": 0,
			"extensions": 0, "key_prefix": DefaultKeyPrefix,
		}
	}
	edits := map[string][]any{
		"resource":   {"", "a,b", "other", strings.Repeat("x", 300), nil, 7},
		"resources":  {[]string{}, []string{"b", "a"}, []string{"a", "a"}, []string{"a", "b"}, nil, "r"},
		"value":      {"", "short", strings.Repeat("v", 300), "has space in the value 0123", "ctl\x01value-0123456789abc", nil},
		"until":      {"", "yesterday", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", nil},
		"ttl":        {"", "0s", "-1s", "2000000h", "24h0m0.001s", "1ns", "25h", "abc", nil},
		"token":      {-1, 1.5, uint64(1) << 63, "7", nil},
		"extensions": {-1, 1 << 40, 1000000, "0", nil},
		"shared":     {true, "yes", nil},
		"key_prefix": {"", "app:", "dlm:lock", "dlm:lock:x", nil, 3},
		"unknown":    {"field"},
	}
	f.Add(handleText(f, valid()))
	for field, vs := range edits {
		for _, v := range vs {
			m := valid()
			if v == nil {
				delete(m, field)
			} else {
				m[field] = v
			}
			f.Add(handleText(f, m))
		}
	}
	f.Add("dlm1.")
	f.Add("dlm2.e30")
	f.Add("not a handle")
	c, err := New([]Node{stubNode{"a"}, stubNode{"b"}, stubNode{"c"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = c.Close() })
	f.Fuzz(func(t *testing.T, text string) {
		h, err := ParseHandle(text)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("refused without ErrInvalid: %v", err)
			}
			if strings.Contains(err.Error(), value) {
				t.Fatalf("the error quotes the value: %v", err)
			}
			return
		}
		out, err := h.MarshalText()
		if err != nil {
			t.Fatalf("parsed, but MarshalText refuses it: %v", err)
		}
		back, err := ParseHandle(string(out))
		if err != nil || back.String() != h.String() || back.Value != h.Value || back.TTL != h.TTL ||
			back.Extensions != h.Extensions || back.KeyPrefix != h.KeyPrefix || back.Shared != h.Shared {
			t.Fatalf("round trip: %v, %v; want %v", back, err, h)
		}
		tg, err := c.handleTarget(h)
		if err != nil {
			if h.KeyPrefix == c.opts.prefix && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNotHeld) {
				t.Fatalf("handleTarget: %v", err)
			}
			return
		}
		if h.KeyPrefix != c.opts.prefix {
			t.Fatalf("a handle with key prefix %q is used by a client with %q", h.KeyPrefix, c.opts.prefix)
		}
		for _, k := range tg.lockKeys() {
			if !strings.HasPrefix(k, c.opts.prefix) {
				t.Fatalf("key %q is outside the client's prefix %q", k, c.opts.prefix)
			}
		}
		if h.TTL > c.opts.maxTTL && c.opts.checkTTL(h.TTL) == nil {
			t.Fatalf("ttl %v past the bound %v is accepted", h.TTL, c.opts.maxTTL)
		}
	})
}

package redlock_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
	"dlm/redlock/redlocktest"
)

// secretValue is a valid caller's value for the tests (WithValue).
const secretValue = "s3cr3t-Value-0123456789abcdef"

// sampleHandle is a valid handle.
func sampleHandle() redlock.Handle {
	return redlock.Handle{
		Resource:   "deploy",
		Resources:  []string{"deploy"},
		Value:      secretValue,
		Until:      time.Date(2026, 12, 1, 18, 0, 0, 123000000, time.UTC),
		TTL:        10 * time.Second,
		Token:      42,
		Extensions: 3,
		Shared:     true,
		KeyPrefix:  redlock.DefaultKeyPrefix,
	}
}

// handleText encodes a JSON object as a handle's text form, to forge
// damaged handles.
func handleText(obj map[string]any) string {
	js, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return "dlm1." + base64.RawURLEncoding.EncodeToString(js)
}

// sampleWire is sampleHandle's JSON object, with changes.
func sampleWire(change func(m map[string]any)) string {
	m := map[string]any{
		"resource": "deploy", "resources": []string{"deploy"}, "value": secretValue,
		"until": "2026-12-01T18:00:00.123Z", "ttl": "10s", "token": 42, "extensions": 3, "key_prefix": "dlm:lock:",
	}
	if change != nil {
		change(m)
	}
	return handleText(m)
}

func TestHandleTextRoundTrip(t *testing.T) {
	h := sampleHandle()
	text, err := h.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(text), "dlm1.") || strings.ContainsAny(string(text), " \n\t+/=") {
		t.Errorf("text %q: want one word starting dlm1., base64url without padding", text)
	}
	for _, in := range []string{string(text), "  " + string(text) + "\n"} {
		got, err := redlock.ParseHandle(in)
		if err != nil {
			t.Fatalf("ParseHandle: %v", err)
		}
		if fmt.Sprint(got.Resources) != fmt.Sprint(h.Resources) || got.Resource != h.Resource || got.Value != h.Value ||
			!got.Until.Equal(h.Until) || got.TTL != h.TTL || got.Token != h.Token || got.Extensions != h.Extensions || got.KeyPrefix != h.KeyPrefix || got.Shared != h.Shared {
			t.Errorf("round trip: got %+v (value %q), want %+v", got, got.Value, h)
		}
	}
	var viaJSON struct{ H redlock.Handle }
	js, err := json.Marshal(struct{ H redlock.Handle }{h})
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &viaJSON); err != nil || viaJSON.H.Value != h.Value {
		t.Errorf("through encoding/json: %v, value kept %v", err, viaJSON.H.Value == h.Value)
	}
	// An empty key prefix is a prefix too.
	h.KeyPrefix = ""
	text, _ = h.MarshalText()
	if got, err := redlock.ParseHandle(string(text)); err != nil || got.KeyPrefix != "" {
		t.Errorf("empty key prefix: %v, %q", err, got.KeyPrefix)
	}
}

func TestParseHandleRefuses(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "not a lock handle"},
		{"a word", "hello", "not a lock handle"},
		{"a value alone", secretValue, "not a lock handle"},
		{"another version", "dlm2.eyJ9", `format "dlm2" is not known`},
		{"not base64", "dlm1.@@@@", "not base64url"},
		{"cut", sampleWire(nil)[:40], "damaged"},
		{"not JSON", "dlm1." + base64.RawURLEncoding.EncodeToString([]byte("[1,2]")), "damaged"},
		{"two objects", "dlm1." + base64.RawURLEncoding.EncodeToString([]byte(`{"ttl":"1s"}{}`)), "damaged"},
		{"unknown field", sampleWire(func(m map[string]any) { m["owner"] = "x" }), `unknown field "owner"`},
		{"wrong type", sampleWire(func(m map[string]any) { m["token"] = "x" }), "field token must be"},
		{"no resource", sampleWire(func(m map[string]any) { delete(m, "resource"); delete(m, "resources") }), "empty resource"},
		{"set not named by its resources", sampleWire(func(m map[string]any) { m["resources"] = []string{"a", "b"} }), `resource "deploy" is not its resources ["a" "b"] joined by ","`},
		{"set not sorted", sampleWire(func(m map[string]any) { m["resources"] = []string{"b", "a"}; m["resource"] = "b,a" }), "are not sorted"},
		{"set with a duplicate", sampleWire(func(m map[string]any) { m["resources"] = []string{"a", "a"}; m["resource"] = "a,a" }), `"a" is listed twice`},
		{"shared set", sampleWire(func(m map[string]any) { m["resources"] = []string{"a", "b"}; m["resource"] = "a,b"; m["shared"] = true }), "a read lock (shared) is on one resource"},
		{"set with an empty name", sampleWire(func(m map[string]any) { m["resources"] = []string{"", "a"}; m["resource"] = ",a" }), "empty name"},
		{"resources mismatch", sampleWire(func(m map[string]any) { m["resources"] = []string{"other"} }), "do not match"},
		{"no value", sampleWire(func(m map[string]any) { delete(m, "value") }), "lock value is 0 bytes"},
		{"short value", sampleWire(func(m map[string]any) { m["value"] = "short" }), "at least 16"},
		{"value with a space", sampleWire(func(m map[string]any) { m["value"] = "0123456789 abcdef" }), "byte 0x20 at position 10"},
		{"no until", sampleWire(func(m map[string]any) { delete(m, "until") }), "no until"},
		{"bad until", sampleWire(func(m map[string]any) { m["until"] = "tomorrow" }), "RFC 3339"},
		{"no ttl", sampleWire(func(m map[string]any) { delete(m, "ttl") }), "no ttl"},
		{"bad ttl", sampleWire(func(m map[string]any) { m["ttl"] = "10" }), "ttl is not a duration"},
		{"negative ttl", sampleWire(func(m map[string]any) { m["ttl"] = "-1s" }), "ttl must be positive"},
		{"negative extensions", sampleWire(func(m map[string]any) { m["extensions"] = -1 }), "extensions must be 0 or more"},
		{"no key prefix", sampleWire(func(m map[string]any) { delete(m, "key_prefix") }), "no key_prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := redlock.ParseHandle(tt.in)
			if !errors.Is(err, redlock.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), secretValue) || (len(tt.in) > 12 && strings.Contains(err.Error(), tt.in[5:])) {
				t.Errorf("err = %q quotes the secret", err)
			}
		})
	}
}

// Printing or logging a handle never shows its value; MarshalText does.
func TestHandleRedacted(t *testing.T) {
	h := sampleHandle()
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("m", "h", h)
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("m", "h", h)
	outs := map[string]string{
		"%v": fmt.Sprintf("%v", h), "%+v": fmt.Sprintf("%+v", h), "%#v": fmt.Sprintf("%#v", h), "Sprint": fmt.Sprint(h),
		"*%v": fmt.Sprintf("%v", &h), "slog": logs.String(),
	}
	for verb, out := range outs {
		if strings.Contains(out, secretValue) {
			t.Errorf("%s prints the value: %s", verb, out)
		}
		if !strings.Contains(out, "deploy") {
			t.Errorf("%s does not name the resource: %s", verb, out)
		}
	}
	if got := h.String(); got != `lock handle for "deploy" until 2026-12-01T18:00:00.123Z, token 42, value redacted` {
		t.Errorf("String = %q", got)
	}
	text, _ := h.MarshalText()
	if got, _ := redlock.ParseHandle(string(text)); got.Value != secretValue {
		t.Error("MarshalText does not carry the value")
	}
}

func TestWithValue(t *testing.T) {
	tests := []struct {
		name, value, want string // want: "" accepted, else the reason
	}{
		{"random-like", secretValue, ""},
		{"floor", strings.Repeat("a", redlock.MinValueLen), ""},
		{"ceiling", strings.Repeat("~", redlock.MaxValueLen), ""},
		{"empty", "", "lock value is 0 bytes; it must be at least 16"},
		{"too short", strings.Repeat("a", redlock.MinValueLen-1), "at least 16"},
		{"too long", strings.Repeat("a", redlock.MaxValueLen+1), "at most 256"},
		{"space", "0123456789abcdef ", "byte 0x20 at position 16"},
		{"newline", "0123456789abcdef\n", "byte 0x0a"},
		{"not ASCII", "0123456789abcdefé", "byte 0xc3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, mems := redlocktest.NewMemNodes(3)
			c, err := redlock.New(nodes)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			l, err := c.TryLock(t.Context(), "r", redlock.WithValue(tt.value))
			if tt.want != "" {
				if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("err = %v, want ErrInvalid saying %q", err, tt.want)
				}
				if err != nil && len(tt.value) > 3 && strings.Contains(err.Error(), tt.value) {
					t.Errorf("err = %q quotes the value", err)
				}
				for _, m := range mems {
					if ks, _ := m.Keys(context.Background(), ""); len(ks) != 0 {
						t.Errorf("%s holds keys %v after a refused value", m, ks)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Value() != tt.value {
				t.Errorf("Value = %q, want %q", l.Value(), tt.value)
			}
			redlocktest.Eventually(t, time.Second, func() bool {
				for _, m := range mems {
					if v, ok, _ := m.Value(context.Background(), redlock.DefaultKeyPrefix+"r"); !ok || v != tt.value {
						return false
					}
				}
				return true
			}, "every node holds the caller's value")
			if err := l.Unlock(t.Context()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A Lock call with a value of the caller's retries with the same value: a
// failed attempt's release, sent when a slow node answers after the
// decision (R8.5), must not delete the key that the next attempt set with
// that value. Before the fix the next attempt went out after the retry
// delay, its key on the slow node was deleted by the late release, and the
// lock was held on 2 nodes of 3 where the client counted 3.
func TestWithValueRetryKeepsItsKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, mems := redlocktest.NewMemNodes(3)
		holder, err := redlock.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		c, err := redlock.New(nodes, redlock.WithRetryDelay(time.Millisecond, time.Millisecond), redlock.WithNodeTimeout(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held, err := holder.TryLock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mems[0].SetSlow(30 * time.Millisecond) // answers late, within the node timeout
		got := make(chan *redlock.Lock, 1)
		go func() {
			l, err := c.Lock(context.Background(), "r", redlock.WithValue(secretValue))
			if err != nil {
				t.Errorf("Lock: %v", err)
			}
			got <- l
		}()
		time.Sleep(500 * time.Microsecond) // the first attempt was refused by m2 and m3
		if err := held.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		l := <-got
		time.Sleep(time.Second) // every answer and release has landed
		synctest.Wait()
		for _, m := range mems {
			if v, ok, _ := m.Value(context.Background(), redlock.DefaultKeyPrefix+"r"); !ok || v != secretValue {
				t.Errorf("%s: key holds %q (present %v) after the grant, want the caller's value: a late release of a failed attempt deleted it", m, v, ok)
			}
		}
		if l != nil {
			_ = l.Unlock(context.Background())
		}
	})
}

// resumeCluster is five MemNodes with a client that acquires and another
// that resumes (another process), with a ttl of 1s.
type resumeCluster struct {
	nodes []redlock.Node
	mems  []*redlocktest.MemNode
	a, b  *redlock.Client
}

func newResumeCluster(t *testing.T, opts ...redlock.Option) *resumeCluster {
	t.Helper()
	rc := &resumeCluster{}
	rc.nodes, rc.mems = redlocktest.NewMemNodes(5)
	var err error
	opts = append([]redlock.Option{redlock.WithTTL(time.Second)}, opts...)
	if rc.a, err = redlock.New(rc.nodes, opts...); err != nil {
		t.Fatal(err)
	}
	if rc.b, err = redlock.New(rc.nodes, opts...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.a.Close(); _ = rc.b.Close() })
	return rc
}

// holding counts the nodes whose key of resource holds value.
func (rc *resumeCluster) holding(resource, value string) int {
	n := 0
	for _, m := range rc.mems {
		if v, ok, _ := m.Value(context.Background(), redlock.DefaultKeyPrefix+resource); ok && v == value {
			n++
		}
	}
	return n
}

// lockHandle locks "r" through the first client, lets every request land,
// and returns the lock and its handle after act (if any) ran.
func (rc *resumeCluster) lockHandle(t *testing.T, act func(rc *resumeCluster, l *redlock.Lock, h *redlock.Handle)) (*redlock.Lock, redlock.Handle) {
	t.Helper()
	l, err := rc.a.TryLock(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	h := l.Handle()
	if act != nil {
		act(rc, l, &h)
	}
	return l, h
}

// checkErr checks err against every error of want (nil: no error), its
// text against say, and that it never quotes the secret value.
func checkErr(t *testing.T, err error, want []error, say, value string) {
	t.Helper()
	if want == nil && err != nil {
		t.Errorf("err = %v, want nil", err)
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("err = %v, want %v", err, w)
		}
	}
	if err != nil && (!strings.Contains(err.Error(), say) || strings.Contains(err.Error(), value)) {
		t.Errorf("err = %q: want it to say %q, and never quote the value", err, say)
	}
}

// Resume and Release over in-memory nodes on a fake clock: exact timing.
func TestResume(t *testing.T) {
	const ttl = time.Second
	tests := []struct {
		name string
		// act runs between the grant (fake time 0) and the resume; it may
		// change the handle.
		act     func(rc *resumeCluster, l *redlock.Lock, h *redlock.Handle)
		opts    []redlock.LockOption
		wantErr []error // nil: resumed
		notErr  []error // must not match
		say     string  // the error says
		after   func(t *testing.T, rc *resumeCluster, l, r *redlock.Lock, h redlock.Handle)
	}{
		{
			name: "held: resumed with a fresh validity, then unlocked",
			act:  func(*resumeCluster, *redlock.Lock, *redlock.Handle) { time.Sleep(300 * time.Millisecond) },
			after: func(t *testing.T, rc *resumeCluster, l, r *redlock.Lock, h redlock.Handle) {
				if got, want := r.Validity(), ttl-drift(ttl); got != want {
					t.Errorf("Validity = %v, want %v (from the confirmation)", got, want)
				}
				if r.Value() != l.Value() || r.Resource() != "r" || r.TTL() != ttl {
					t.Errorf("resumed lock %q %v differs from the original", r.Resource(), r.TTL())
				}
				if got := r.Handle().Extensions; got != 1 {
					t.Errorf("Extensions = %d, want 1 (the confirmation)", got)
				}
				if err := r.Unlock(context.Background()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if n := rc.holding("r", l.Value()); n != 0 {
					t.Errorf("%d nodes hold the key after Unlock of the resumed lock", n)
				}
				if err := l.Extend(context.Background()); !errors.Is(err, redlock.ErrNotHeld) {
					t.Errorf("original Extend after the resumed Unlock = %v, want ErrNotHeld", err)
				}
			},
		},
		{
			name:    "after expiry",
			act:     func(*resumeCluster, *redlock.Lock, *redlock.Handle) { time.Sleep(2 * ttl) },
			wantErr: []error{redlock.ErrNotHeld, redlock.ErrExpired},
			say:     "its validity ended at",
		},
		{
			name: "lost on a majority before the handle's end",
			act: func(rc *resumeCluster, l *redlock.Lock, _ *redlock.Handle) {
				for _, n := range rc.nodes[:3] {
					_, _ = n.Release(context.Background(), redlock.DefaultKeyPrefix+"r", l.Value())
				}
			},
			wantErr: []error{redlock.ErrNotHeld},
			notErr:  []error{redlock.ErrExpired},
			say:     "a quorum of nodes no longer holds its value",
		},
		{
			name: "lost on a minority: resumed",
			act: func(rc *resumeCluster, l *redlock.Lock, _ *redlock.Handle) {
				for _, n := range rc.nodes[:2] {
					_, _ = n.Release(context.Background(), redlock.DefaultKeyPrefix+"r", l.Value())
				}
			},
		},
		{
			name: "a handle's clock far behind: the nodes decide",
			act: func(_ *resumeCluster, _ *redlock.Lock, h *redlock.Handle) {
				h.Until = h.Until.Add(-time.Hour)
			},
		},
		{
			name: "forged value: nothing extended",
			act: func(_ *resumeCluster, _ *redlock.Lock, h *redlock.Handle) {
				h.Value = secretValue
			},
			wantErr: []error{redlock.ErrNotHeld},
			after: func(t *testing.T, rc *resumeCluster, l, _ *redlock.Lock, _ redlock.Handle) {
				if n := rc.holding("r", l.Value()); n != 5 {
					t.Errorf("%d nodes of 5 hold the true holder's key after a forged resume", n)
				}
			},
		},
		{
			name: "resumed with auto-extension: held past the ttl",
			opts: []redlock.LockOption{redlock.WithAutoExtend()},
			after: func(t *testing.T, rc *resumeCluster, l, r *redlock.Lock, _ redlock.Handle) {
				time.Sleep(5 * ttl)
				if err := r.Err(); err != nil {
					t.Errorf("Err = %v after 5 ttls, want held", err)
				}
				if n := rc.holding("r", l.Value()); n != 5 {
					t.Errorf("%d nodes of 5 hold the key", n)
				}
				for _, n := range rc.nodes[:3] {
					_, _ = n.Release(context.Background(), redlock.DefaultKeyPrefix+"r", l.Value())
				}
				<-r.Done()
				if err := r.Err(); !errors.Is(err, redlock.ErrLost) {
					t.Errorf("Err = %v after losing a majority, want ErrLost", err)
				}
				_ = r.Unlock(context.Background())
			},
		},
		{
			name: "extension bound counted across processes",
			act: func(_ *resumeCluster, _ *redlock.Lock, h *redlock.Handle) {
				h.Extensions = 4
			},
			opts:    []redlock.LockOption{redlock.WithMaxExtensions(4)},
			wantErr: []error{redlock.ErrMaxExtensions},
		},
		{
			name:    "WithValue refused",
			opts:    []redlock.LockOption{redlock.WithValue(secretValue)},
			wantErr: []error{redlock.ErrInvalid},
			say:     "the value comes from the handle",
		},
		{
			name:    "another key prefix",
			act:     func(_ *resumeCluster, _ *redlock.Lock, h *redlock.Handle) { h.KeyPrefix = "other:" },
			wantErr: []error{redlock.ErrInvalid},
			say:     `key prefix "other:"`,
		},
		{
			name: "a longer ttl for the resumed lock",
			opts: []redlock.LockOption{redlock.WithTTL(3 * ttl)},
			after: func(t *testing.T, _ *resumeCluster, _, r *redlock.Lock, _ redlock.Handle) {
				if got, want := r.Validity(), 3*ttl-drift(3*ttl); got != want {
					t.Errorf("Validity = %v, want %v", got, want)
				}
				_ = r.Unlock(context.Background())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rc := newResumeCluster(t)
				l, h := rc.lockHandle(t, tt.act)
				r, err := rc.b.Resume(t.Context(), h, tt.opts...)
				checkErr(t, err, tt.wantErr, tt.say, h.Value)
				if err == nil && tt.wantErr != nil || err != nil && r != nil {
					t.Fatalf("Resume = %v, %v", r, err)
				}
				for _, not := range tt.notErr {
					if errors.Is(err, not) {
						t.Errorf("err = %v, must not be %v", err, not)
					}
				}
				if tt.after != nil {
					tt.after(t, rc, l, r, h)
				} else if r != nil {
					_ = r.Unlock(context.Background())
				}
				_ = l.Unlock(context.Background())
			})
		})
	}
}

// A resumed lock keeps the fencing token of its handle.
func TestResumeKeepsToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := newResumeCluster(t, redlock.WithFencing())
		for i := 0; i < 2; i++ { // token 2
			l, err := rc.a.TryLock(t.Context(), "r")
			if err != nil {
				t.Fatal(err)
			}
			if i == 1 {
				r, err := rc.b.Resume(t.Context(), l.Handle())
				if err != nil {
					t.Fatal(err)
				}
				if r.Token() != l.Token() || r.Token() != 2 {
					t.Errorf("resumed token %d, want the handle's %d (2)", r.Token(), l.Token())
				}
			}
			_ = l.Unlock(t.Context())
		}
	})
}

func TestRelease(t *testing.T) {
	tests := []struct {
		name    string
		act     func(rc *resumeCluster, l *redlock.Lock, h *redlock.Handle)
		wantErr []error
		say     string
		left    int // nodes still holding the holder's key
	}{
		{name: "held", left: 0},
		{
			name:    "forged value releases nothing",
			act:     func(_ *resumeCluster, _ *redlock.Lock, h *redlock.Handle) { h.Value = secretValue },
			wantErr: []error{redlock.ErrNotHeld},
			say:     "no longer holds its value",
			left:    5,
		},
		{
			name:    "expired",
			act:     func(*resumeCluster, *redlock.Lock, *redlock.Handle) { time.Sleep(2 * time.Second) },
			wantErr: []error{redlock.ErrNotHeld, redlock.ErrExpired},
			say:     "its validity ended at",
		},
		{
			name: "nodes down",
			act: func(rc *resumeCluster, _ *redlock.Lock, _ *redlock.Handle) {
				for _, m := range rc.mems[:3] {
					m.SetDown(true)
				}
			},
			wantErr: []error{redlock.ErrUnlockFailed},
			say:     "node down",
			left:    3, // the down nodes keep theirs until the ttl
		},
		{
			name:    "bad handle",
			act:     func(_ *resumeCluster, _ *redlock.Lock, h *redlock.Handle) { h.TTL = 0 },
			wantErr: []error{redlock.ErrInvalid},
			say:     "ttl must be positive",
			left:    5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rc := newResumeCluster(t)
				l, h := rc.lockHandle(t, tt.act)
				checkErr(t, rc.b.Release(t.Context(), h), tt.wantErr, tt.say, h.Value)
				synctest.Wait()
				for _, m := range rc.mems {
					m.SetDown(false)
				}
				if n := rc.holding("r", l.Value()); n != tt.left {
					t.Errorf("%d nodes hold the key after Release, want %d", n, tt.left)
				}
				_ = l.Unlock(context.Background())
			})
		})
	}
}

// obsRecorder records the attempts an observer hears of.
type obsRecorder struct {
	attempts chan redlock.AttemptEvent
}

func (o obsRecorder) Attempt(e redlock.AttemptEvent)   { o.attempts <- e }
func (o obsRecorder) Extension(redlock.ExtensionEvent) {}
func (o obsRecorder) End(redlock.EndEvent)             {}

// A resumed lock is reported to the observers as Resumed, so that a gauge
// of held locks that its End decrements was incremented first.
func TestResumeObserved(t *testing.T) {
	nodes, _ := redlocktest.NewMemNodes(3)
	a, err := redlock.New(nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rec := obsRecorder{attempts: make(chan redlock.AttemptEvent, 4)}
	b, err := redlock.New(nodes, redlock.WithObserver(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	l, err := a.TryLock(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Resume(t.Context(), l.Handle())
	if err != nil {
		t.Fatal(err)
	}
	e := <-rec.attempts
	if !e.Resumed || e.Outcome != redlock.AttemptAcquired || e.Resource != "r" {
		t.Errorf("event %+v, want a resumed grant of r", e)
	}
	_ = r.Unlock(t.Context())
}

// An Unlock never hands its lock to a waiter of the same client that gave
// its own value: the hand-over would acquire with another value. The
// waiter is woken and acquires with its value itself.
func TestWithValueNotHandedOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes, _ := redlocktest.NewMemNodes(3)
		c, err := redlock.New(nodes)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held, err := c.TryLock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *redlock.Lock, 1)
		go func() {
			l, err := c.Lock(context.Background(), "r", redlock.WithValue(secretValue))
			if err != nil {
				t.Errorf("Lock: %v", err)
			}
			got <- l
		}()
		time.Sleep(time.Second) // the waiter queued for a hand-over
		if err := held.Unlock(context.Background()); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l.Value() != secretValue {
			t.Errorf("the waiter's lock has value %q, want its own", l.Value())
		}
		_ = l.Unlock(context.Background())
	})
}

// A lock on a set of resources (LockAll) crosses processes as one: its
// handle names the set, and Resume and Release act on every key of it.
func TestResumeSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := newResumeCluster(t)
		l, err := rc.a.TryLockAll(t.Context(), []string{"b", "a"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		text, err := l.Handle().MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		h, err := redlock.ParseHandle(string(text))
		if err != nil {
			t.Fatal(err)
		}
		if h.Resource != "a,b" || fmt.Sprint(h.Resources) != "[a b]" {
			t.Errorf("handle of a set: resource %q, resources %q; want \"a,b\" and [a b]", h.Resource, h.Resources)
		}
		r, err := rc.b.Resume(t.Context(), h)
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		if fmt.Sprint(r.Resources()) != "[a b]" {
			t.Errorf("resumed Resources = %q", r.Resources())
		}
		// A set excludes a single lock on any of its resources.
		if _, err := rc.a.TryLock(t.Context(), "b"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryLock(b) while the resumed set holds it = %v, want ErrNotAcquired", err)
		}
		time.Sleep(900 * time.Millisecond) // past the first validity: the resume extended it
		if err := r.Extend(t.Context()); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if err := r.Unlock(t.Context()); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		synctest.Wait()
		if n := rc.holding("a", l.Value()) + rc.holding("b", l.Value()); n != 0 {
			t.Errorf("%d keys of the set left after Unlock", n)
		}

		l2, err := rc.a.TryLockAll(t.Context(), []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		forged := l2.Handle()
		forged.Value = secretValue
		checkErr(t, rc.b.Release(t.Context(), forged), []error{redlock.ErrNotHeld}, "no longer holds its value", secretValue)
		if n := rc.holding("a", l2.Value()) + rc.holding("b", l2.Value()); n != 10 {
			t.Errorf("%d keys of 10 left after a forged release", n)
		}
		checkErr(t, rc.b.Release(t.Context(), l2.Handle()), nil, "", l2.Value())
		synctest.Wait()
		if n := rc.holding("a", l2.Value()) + rc.holding("b", l2.Value()); n != 0 {
			t.Errorf("%d keys of the set left after Release", n)
		}
	})
}

// A read lock crosses processes as a read lock: its handle says Shared,
// the resumed lock extends and releases as a reader, and other readers
// keep theirs.
func TestResumeShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := newResumeCluster(t)
		l, err := rc.a.TryRLock(t.Context(), "r", redlock.WithValue(secretValue))
		if err != nil {
			t.Fatal(err)
		}
		if l.Value() != secretValue {
			t.Errorf("RLock with WithValue: value %q, want the caller's", l.Value())
		}
		other, err := rc.a.TryRLock(t.Context(), "r")
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		text, _ := l.Handle().MarshalText()
		h, err := redlock.ParseHandle(string(text))
		if err != nil {
			t.Fatal(err)
		}
		if !h.Shared {
			t.Fatal("the handle of a read lock is not Shared")
		}
		r, err := rc.b.Resume(t.Context(), h)
		if err != nil {
			t.Fatalf("Resume: %v", err)
		}
		if !r.Shared() {
			t.Error("the resumed read lock is not Shared")
		}
		if _, err := rc.b.TryWLock(t.Context(), "r"); !errors.Is(err, redlock.ErrNotAcquired) {
			t.Errorf("TryWLock under two readers = %v, want ErrNotAcquired", err)
		}
		if err := r.Extend(t.Context()); err != nil {
			t.Fatalf("Extend as a reader: %v", err)
		}
		checkErr(t, rc.b.Release(t.Context(), h), nil, "", h.Value)
		synctest.Wait()
		if err := other.Extend(t.Context()); err != nil {
			t.Errorf("the other reader lost its lock to the release of a handle: %v", err)
		}
		if err := r.Extend(t.Context()); !errors.Is(err, redlock.ErrNotHeld) {
			t.Errorf("Extend of the released reader = %v, want ErrNotHeld", err)
		}
		_ = other.Unlock(t.Context())
		synctest.Wait()
		w, err := rc.b.TryWLock(t.Context(), "r")
		if err != nil {
			t.Fatalf("TryWLock after both readers left: %v", err)
		}
		_ = w.Unlock(t.Context())
	})
}

package batch

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

// Plan sends an acquisition before the script only when no scripted
// request of its key precedes it in the batch, runs every other request in
// the script, in order, and refuses a batch with a set's request or too
// few scripted requests.
func TestCombinedPlan(t *testing.T) {
	a := func(k string) adapter.Request { return adapter.Request{Op: adapter.OpAcquire, Key: k} }
	r := func(k string) adapter.Request { return adapter.Request{Op: adapter.OpReleaseAnnounce, Key: k} }
	tests := []struct {
		name string
		reqs []adapter.Request
		ok   bool
		acq  []int
		ops  string
	}{
		{"acquisitions and releases of other keys", []adapter.Request{a("x"), r("y"), a("z"), r("w")}, true, []int{0, 2}, "pp"},
		{"a release, then an acquisition of its key", []adapter.Request{r("k"), a("k"), r("j"), a("j2")}, true, []int{3}, "pap"},
		{"an acquisition, then a release of its key", []adapter.Request{a("k"), r("k"), r("j")}, true, []int{0}, "pp"},
		{"one scripted request", []adapter.Request{a("x"), r("y"), a("z")}, false, nil, ""},
		{"acquisitions only", []adapter.Request{a("x"), a("y")}, false, nil, ""},
		{"a set's request", []adapter.Request{r("x"), r("y"), {Op: adapter.OpReleaseAll, Keys: []string{"a", "b"}}}, false, nil, ""},
		{"every single-resource op", []adapter.Request{
			{Op: adapter.OpRelease, Key: "a"}, {Op: adapter.OpExtend, Key: "b"}, {Op: adapter.OpTransfer, Key: "c"}, a("c"),
		}, true, nil, "reta"},
	}
	var c Combined
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := make([]Item, len(tt.reqs))
			for i, req := range tt.reqs {
				req.Value, req.TTL = "v"+strconv.Itoa(i), time.Second
				items[i].Req = req
			}
			if got := c.Plan(items); got != tt.ok {
				t.Fatalf("Plan = %v, want %v", got, tt.ok)
			}
			if !tt.ok {
				return
			}
			if got := c.Acquisitions(); !slices.Equal(got, tt.acq) {
				t.Errorf("Acquisitions = %v, want %v", got, tt.acq)
			}
			_, args := c.Build(items, "p:", func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) })
			if args[0] != tt.ops || args[1] != "p:" || args[2] != scripts.ListenKey {
				t.Errorf("ops %q prefix %q marker %q, want %q, p: and %q", args[0], args[1], args[2], tt.ops, scripts.ListenKey)
			}
		})
	}
}

// Answer hands each scripted request its result, the node's error line to
// each that failed, and the call's error, or a reply of the wrong length,
// to all of them.
func TestCombinedAnswer(t *testing.T) {
	rel := adapter.Request{Op: adapter.OpRelease, Key: "k"}
	items := []Item{{Req: rel, Tag: 0}, {Req: adapter.Request{Op: adapter.OpAcquire, Key: "x"}, Tag: 1}, {Req: rel, Tag: 2}, {Req: rel, Tag: 3}}
	var c Combined
	if !c.Plan(items) {
		t.Fatal("Plan refused the batch")
	}
	nodeErr := func(msg string) error { return errors.New(msg) }
	type answer struct {
		ok  bool
		err string
	}
	tests := []struct {
		name  string
		reply string
		err   error
		want  map[int]answer
	}{
		{"results", "10E\nOOM no", nil, map[int]answer{0: {true, ""}, 2: {false, ""}, 3: {false, "OOM no"}}},
		{"the call failed", "", errors.New("down"), map[int]answer{0: {false, "down"}, 2: {false, "down"}, 3: {false, "down"}}},
		{"too short", "10", nil, map[int]answer{0: {false, errReplyLength.Error()}, 2: {false, errReplyLength.Error()}, 3: {false, errReplyLength.Error()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[int]answer{}
			for i := range items {
				items[i].To = receiver(func(tag int, ok bool, err error) {
					a := answer{ok: ok}
					if err != nil {
						a.err = err.Error()
					}
					got[tag] = a
				})
			}
			c.Answer(items, tt.reply, tt.err, nodeErr)
			if len(got) != len(tt.want) {
				t.Fatalf("answered %v, want %v", got, tt.want)
			}
			for tag, w := range tt.want {
				if got[tag] != w {
					t.Errorf("request %d: %+v, want %+v", tag, got[tag], w)
				}
			}
		})
	}
}

type receiver func(tag int, ok bool, err error)

func (f receiver) Receive(tag int, ok bool, err error) { f(tag, ok, err) }

package redlock

import (
	"testing"
	"time"

	"dlm/redlock/adapter"
)

func TestTimeoutLimit(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		nt, ttl, want time.Duration
	}{
		{50 * ms, 10 * time.Second, time.Second}, // twenty node timeouts, a tenth of the ttl
		{50 * ms, 0, time.Second},                // no ttl (phase 2 of fencing)
		{50 * ms, 5 * time.Second, 500 * ms},     // a tenth of the ttl
		{400 * ms, 2 * time.Second, 400 * ms},    // ttl/10 below the node timeout
		{50 * ms, 100 * ms, 50 * ms},             // never below the node timeout
		{50 * ms, time.Minute, time.Second},      // the ttl does not raise it
		{time.Second, time.Hour, 20 * time.Second},
	}
	for _, tt := range tests {
		if got := timeoutLimit(tt.nt, tt.ttl); got != tt.want {
			t.Errorf("timeoutLimit(%v, %v) = %v, want %v", tt.nt, tt.ttl, got, tt.want)
		}
	}
}

// The patience of a fan that waits for a slow node past its limit: a
// grant keeps half the ttl of validity, an extension any (timeout.go).
func TestPatience(t *testing.T) {
	const ms = time.Millisecond
	c := &Client{opts: defaultClientOptions()} // drift factor 0.01
	tests := []struct {
		req  adapter.Request
		want time.Duration
	}{
		{adapter.Request{Op: adapter.OpAcquire, TTL: 10 * time.Second}, 4898 * ms}, // ttl/2 - drift (102ms)
		{adapter.Request{Op: opAcquireFenced, TTL: 10 * time.Second}, 4898 * ms},
		{adapter.Request{Op: adapter.OpTransfer, TTL: 2 * time.Second}, 978 * ms},
		{adapter.Request{Op: adapter.OpExtend, TTL: 10 * time.Second}, 9898 * ms}, // ttl - drift
		{adapter.Request{Op: adapter.OpExtendAll, TTL: 10 * time.Second}, 9898 * ms},
		{adapter.Request{Op: adapter.OpRExtend, TTL: 10 * time.Second}, 9898 * ms},
		{adapter.Request{Op: opRaiseFence}, 0}, // no ttl: newFanAfter gives it its grant's
	}
	for _, tt := range tests {
		if got := c.patience(tt.req); got != tt.want {
			t.Errorf("patience(%v, ttl %v) = %v, want %v", tt.req.Op, tt.req.TTL, got, tt.want)
		}
	}
}

func TestRTO(t *testing.T) {
	const ms = time.Millisecond
	floor, limit := 50*ms, 500*ms
	type step struct {
		sample  time.Duration // > 0: a sample
		expired bool
		want    time.Duration // the timeout after the step
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"no sample: the limit", []step{{want: limit}}},
		{"fast nodes: the floor", []step{{sample: ms, want: floor}, {sample: 2 * ms, want: floor}}},
		// first sample d: srtt d, rttvar d/2, timeout 3d.
		{"slow nodes: three round trips", []step{{sample: 40 * ms, want: 120 * ms}}},
		{"capped", []step{{sample: 400 * ms, want: limit}}},
		{"expiry doubles until a sample", []step{
			{sample: ms, want: floor},
			{expired: true, want: 2 * floor},
			{expired: true, want: 4 * floor},
			{expired: true, want: 8 * floor},
			{expired: true, want: limit},
			{expired: true, want: limit},
			// 1ms then 1ms: srtt 1ms, rttvar 0.375ms.
			{sample: ms, want: floor},
		}},
		{"expiry before any sample: the limit", []step{{expired: true, want: limit}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r rto
			for i, s := range tt.steps {
				switch {
				case s.sample > 0:
					r.sample(s.sample)
				case s.expired:
					r.expired()
				}
				if got := r.timeout(floor, limit); got != s.want {
					t.Fatalf("step %d: timeout %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

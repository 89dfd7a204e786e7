package redlock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"dlm/redlock"
)

// The timing of auto-extension on a fake clock (testing/synctest) over the
// in-memory example nodes: exact, and independent of the machine's load.
func TestAutoExtendTiming(t *testing.T) { // R17
	const ttl = 3 * time.Second // extension every second
	tests := []struct {
		name string
		opts []redlock.LockOption
		// act runs once the lock is granted, at fake time 0.
		act       func(nodes []redlock.Node, l *redlock.Lock)
		wantAfter time.Duration // when Done closes, from the grant
		wantErr   []error
	}{
		{
			name:      "extension bound: Done at the validity after the last extension",
			opts:      []redlock.LockOption{redlock.WithMaxExtensions(5)},
			wantAfter: 5*time.Second + ttl - drift(ttl),
			wantErr:   []error{redlock.ErrExpired, redlock.ErrMaxExtensions},
		},
		{
			name: "keys gone on a majority: noticed at the next extension",
			act: func(nodes []redlock.Node, l *redlock.Lock) {
				time.Sleep(2500 * time.Millisecond) // fake time: between the second and third extension
				for _, n := range nodes[:3] {
					_, _ = n.Release(context.Background(), redlock.DefaultKeyPrefix+"r", l.Value())
				}
			},
			wantAfter: 3 * time.Second,
			wantErr:   []error{redlock.ErrLost, redlock.ErrNotHeld},
		},
		{
			name: "keys gone on a minority: still held at the bound",
			opts: []redlock.LockOption{redlock.WithMaxExtensions(100)},
			act: func(nodes []redlock.Node, l *redlock.Lock) {
				for _, n := range nodes[:2] {
					_, _ = n.Release(context.Background(), redlock.DefaultKeyPrefix+"r", l.Value())
				}
			},
			wantAfter: 100*time.Second + ttl - drift(ttl),
			wantErr:   []error{redlock.ErrExpired, redlock.ErrMaxExtensions},
		},
		{
			name: "Unlock",
			act: func(_ []redlock.Node, l *redlock.Lock) {
				time.Sleep(10 * time.Second)
				_ = l.Unlock(context.Background())
			},
			wantAfter: 10 * time.Second,
			wantErr:   []error{redlock.ErrUnlocked},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes := exampleNodes()
				c, err := redlock.New(nodes, redlock.WithTTL(ttl))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				l, err := c.TryLock(t.Context(), "r", append(tt.opts, redlock.WithAutoExtend())...)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				if tt.act != nil {
					go tt.act(nodes, l)
				}
				<-l.Done()
				if got := time.Since(start); got != tt.wantAfter {
					t.Errorf("Done closed after %v, want %v", got, tt.wantAfter)
				}
				for _, want := range tt.wantErr {
					if err := l.Err(); !errors.Is(err, want) {
						t.Errorf("Err = %v, want %v", err, want)
					}
				}
				_ = l.Unlock(context.Background())
			})
		})
	}
}

// drift is R9's drift for the default factor: ttl x 0.01 + 2ms.
func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

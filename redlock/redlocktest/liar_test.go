package redlocktest_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/redlocktest"
)

func TestLiar(t *testing.T) {
	s := redlocktest.StartServer(t)
	liar := redlocktest.StartLiar(t, s)
	c := redis.NewClient(&redis.Options{Addr: liar.Addr(), Protocol: 2, DisableIdentity: true})
	defer c.Close()
	ctx := t.Context()
	// SET is answered OK and not performed.
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the liar: %v", err)
	}
	if n, _ := s.Client().Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("the liar performed a SET")
	}
	// Everything else is forwarded, replies of every shape relayed.
	if err := s.Client().RPush(ctx, "l", "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	got, err := c.LRange(ctx, "l", 0, -1).Result()
	if err != nil || len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("LRANGE through the liar = %v, %v; want [a b]", got, err)
	}
	if _, err := c.Get(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET of a missing key through the liar: err = %v, want redis.Nil", err)
	}
	if err := c.Do(ctx, "NOSUCHCOMMAND").Err(); err == nil {
		t.Fatal("an error reply was not relayed")
	}
	if liar.Lies() != 1 {
		t.Fatalf("Lies() = %d, want 1", liar.Lies())
	}
}

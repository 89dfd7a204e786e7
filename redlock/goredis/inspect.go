package goredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"dlm/redlock/adapter"
	"dlm/redlock/scripts"
)

var _ adapter.InspectNode = (*Node)(nil)

// Inspect reads key in one script (adapter.InspectNode).
func (n *Node) Inspect(ctx context.Context, key string) (adapter.KeyState, error) {
	res, err := redis.NewScript(scripts.Inspect).Run(ctx, n.scripter(), []string{key}).Slice()
	if err != nil {
		return adapter.KeyState{}, err
	}
	reply := make([]string, len(res))
	for i, v := range res {
		switch v := v.(type) {
		case string:
			reply[i] = v
		case int64:
			reply[i] = strconv.FormatInt(v, 10)
		default:
			return adapter.KeyState{}, fmt.Errorf("goredis: inspect: element %d is a %T", i, v)
		}
	}
	return scripts.ParseInspect(reply)
}

// Scan runs one SCAN MATCH prefix* COUNT count from cursor
// (adapter.InspectNode).
func (n *Node) Scan(ctx context.Context, prefix, cursor string, count int) ([]string, string, error) {
	if n.cluster != nil {
		return n.scanCluster(ctx, prefix, cursor, count) // cluster.go
	}
	cur, err := scripts.ParseCursor(cursor)
	if err != nil {
		return nil, "", fmt.Errorf("goredis: %w", err)
	}
	keys, next, err := n.client.Scan(ctx, cur, scripts.MatchPrefix(prefix), int64(max(count, 1))).Result()
	if err != nil {
		return nil, "", err
	}
	return keys, scripts.NextCursor(next), nil
}

// The notes' commands as scripts, so that they go through the node's queue
// and connection (scripter) as every lock request does: a note written to a
// node that is down then fails there quietly, instead of making go-redis'
// pool dial it and log the failure.
const (
	putNoteScript = `return redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])`
	noteScript    = `return redis.call("GET", KEYS[1])`
)

// PutNote sets key to note with an expiry of ttl (adapter.InspectNode).
func (n *Node) PutNote(ctx context.Context, key, note string, ttl time.Duration) error {
	return redis.NewScript(putNoteScript).Run(ctx, n.scripter(), []string{key}, note, ttl.Milliseconds()).Err()
}

// Note returns the string under key (adapter.InspectNode).
func (n *Node) Note(ctx context.Context, key string) (string, bool, error) {
	v, err := redis.NewScript(noteScript).Run(ctx, n.scripter(), []string{key}).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return v, true, nil
}

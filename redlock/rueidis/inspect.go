package rueidis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"dlm/redlock/adapter"
	"dlm/redlock/internal/batch"
	"dlm/redlock/scripts"
)

var _ adapter.InspectNode = (*Node)(nil)

// Inspect reads key in one script (adapter.InspectNode).
func (n *Node) Inspect(ctx context.Context, key string) (adapter.KeyState, error) {
	res, err := n.evalKeys(ctx, batch.NewScript(scripts.Inspect), []string{key}).ToArray()
	if err != nil {
		return adapter.KeyState{}, err
	}
	reply := make([]string, len(res))
	for i, m := range res {
		if s, err := m.ToString(); err == nil {
			reply[i] = s
			continue
		}
		v, err := m.AsInt64()
		if err != nil {
			return adapter.KeyState{}, fmt.Errorf("rueidis: inspect: element %d: %w", i, err)
		}
		reply[i] = strconv.FormatInt(v, 10)
	}
	return scripts.ParseInspect(reply)
}

// Scan runs one SCAN MATCH prefix* COUNT count from cursor
// (adapter.InspectNode).
func (n *Node) Scan(ctx context.Context, prefix, cursor string, count int) ([]string, string, error) {
	if n.cluster {
		return n.scanCluster(ctx, prefix, cursor, count) // cluster.go
	}
	cur, err := scripts.ParseCursor(cursor)
	if err != nil {
		return nil, "", fmt.Errorf("rueidis: %w", err)
	}
	c := n.conn(ctx)
	e, err := c.Do(ctx, c.B().Scan().Cursor(cur).Match(scripts.MatchPrefix(prefix)).Count(int64(max(count, 1))).Build()).AsScanEntry()
	if err != nil {
		return nil, "", err
	}
	return e.Elements, scripts.NextCursor(e.Cursor), nil
}

// PutNote sets key to note with an expiry of ttl (adapter.InspectNode).
func (n *Node) PutNote(ctx context.Context, key, note string, ttl time.Duration) error {
	c := n.conn(ctx)
	if ttl <= 0 {
		return c.Do(ctx, c.B().Set().Key(key).Value(note).Build()).Error()
	}
	return c.Do(ctx, c.B().Set().Key(key).Value(note).PxMilliseconds(ttl.Milliseconds()).Build()).Error()
}

// Note returns the string under key (adapter.InspectNode).
func (n *Node) Note(ctx context.Context, key string) (string, bool, error) {
	c := n.conn(ctx)
	v, err := c.Do(ctx, c.B().Get().Key(key).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return v, true, nil
}

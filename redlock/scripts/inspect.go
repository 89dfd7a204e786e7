package scripts

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"dlm/redlock/adapter"
)

// ParseInspect reads the reply of Inspect, each element as its string (an
// integer in decimal), into a KeyState.
func ParseInspect(reply []string) (adapter.KeyState, error) {
	var st adapter.KeyState
	if len(reply) < 4 || len(reply)%2 != 0 {
		return st, fmt.Errorf("inspect: unexpected reply of %d elements", len(reply))
	}
	num := func(i int) (int64, error) {
		v, err := strconv.ParseInt(reply[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("inspect: element %d is not an integer", i)
		}
		return v, nil
	}
	kind, err := num(0)
	if err != nil {
		return st, err
	}
	ttl, err := num(1)
	if err != nil {
		return st, err
	}
	waiters, err := num(3)
	if err != nil {
		return st, err
	}
	switch kind {
	case 0:
		return st, nil
	case 1:
		st.Kind, st.Value = adapter.KeyLock, reply[2]
	case 2:
		st.Kind, st.Waiters = adapter.KeyReaders, int(waiters)
	default:
		st.Kind = adapter.KeyOther
	}
	st.TTL = time.Duration(ttl) * time.Millisecond
	if ttl < 0 {
		st.TTL = -1
	}
	for i := 4; i < len(reply); i += 2 {
		ms, err := num(i + 1)
		if err != nil {
			return st, err
		}
		st.Readers = append(st.Readers, adapter.Reader{Value: reply[i], TTL: time.Duration(ms) * time.Millisecond})
	}
	return st, nil
}

// MatchPrefix is the SCAN MATCH pattern of the keys that start with
// prefix: the glob characters of prefix escaped, then "*".
func MatchPrefix(prefix string) string {
	var b strings.Builder
	for _, r := range prefix {
		switch r {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('*')
	return b.String()
}

// ParseCursor reads a Scan cursor ("" starts the scan) as SCAN's number.
func ParseCursor(cursor string) (uint64, error) {
	if cursor == "" {
		return 0, nil
	}
	c, err := strconv.ParseUint(cursor, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("scan cursor %q is not a number", cursor)
	}
	return c, nil
}

// NextCursor is the Scan cursor after SCAN answered next ("" when done).
func NextCursor(next uint64) string {
	if next == 0 {
		return ""
	}
	return strconv.FormatUint(next, 10)
}

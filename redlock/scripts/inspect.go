package scripts

import (
	"fmt"
	"sort"
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

// ParseClusterCursor reads the Scan cursor of a node that is a Redis
// Cluster ("" to start): the index of the master it is at, in the order of
// ClusterMasters, and that master's own SCAN cursor.
func ParseClusterCursor(cursor string) (master int, cur uint64, err error) {
	if cursor == "" {
		return 0, 0, nil
	}
	i, c, ok := strings.Cut(cursor, ":")
	m, err1 := strconv.Atoi(i)
	cur, err2 := strconv.ParseUint(c, 10, 64)
	if !ok || err1 != nil || err2 != nil || m < 0 {
		return 0, 0, fmt.Errorf("scan cursor %q of a cluster node is not MASTER:CURSOR", cursor)
	}
	return m, cur, nil
}

// NextClusterCursor is the cursor after master answered next of masters:
// the same master while its SCAN goes on, then the next master from its
// start, and "" after the last.
func NextClusterCursor(master int, next uint64, masters int) string {
	switch {
	case next != 0:
		return strconv.Itoa(master) + ":" + strconv.FormatUint(next, 10)
	case master+1 < masters:
		return strconv.Itoa(master+1) + ":0"
	}
	return ""
}

// ClusterMasters returns the addresses (host:port) of the masters listed in
// the reply of CLUSTER NODES that serve slots or move them (a slot range,
// or a bracketed slot being imported or migrated), sorted, so that every
// call orders them alike. A master with no slot (one just added, before a
// reshard; one emptied before its removal) holds no key of the node, and
// a cluster client, whose map comes from the slots, does not know it.
func ClusterMasters(nodes string) []string {
	var out []string
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !hasFlag(f[2], "master") || hasFlag(f[2], "fail") || hasFlag(f[2], "fail?") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		out = append(out, addr)
	}
	sort.Strings(out)
	return out
}

// hasFlag reports whether the comma-separated flags of CLUSTER NODES hold
// flag ("fail" is not "nofailover").
func hasFlag(flags, flag string) bool {
	for _, f := range strings.Split(flags, ",") {
		if f == flag {
			return true
		}
	}
	return false
}

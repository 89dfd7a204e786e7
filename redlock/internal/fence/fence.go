// Package fence keeps a client's requests to a node in order across its
// connections (redlock/goredis, redlock/rueidis). A request left behind on
// a connection the client gave up (its bytes still on the way, or unread
// in the node's buffers) could otherwise run on the node after the
// requests of the connection that replaced it: a late release would delete
// a key that a later acquisition of the same value counted. So each
// connection learns its CLIENT ID when it is dialled, the ids of the
// connections given up are kept in a List, and the handshake of the next
// connection closes them on the node (CLIENT KILL ID) before it carries a
// request. The node runs the kill before anything the new connection
// sends; after it, nothing of the old connections runs.
package fence

import (
	"strconv"
	"sync"
)

// maxIDs bounds a List: the ids of connections given up while no dial
// could complete (the node down) beyond it are forgotten.
const maxIDs = 16

// List is the CLIENT IDs of the connections a client gave up and that no
// handshake closed on the node yet. The zero value is ready; it is safe
// for concurrent use.
type List struct {
	mu  sync.Mutex
	ids []int64
}

// Retire adds the id of a connection given up (0, an unknown id, is
// ignored).
func (l *List) Retire(id int64) {
	if id == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = append(l.ids, id)
	if len(l.ids) > maxIDs {
		l.ids = append(l.ids[:0], l.ids[len(l.ids)-maxIDs:]...)
	}
}

// Kills returns the commands that close the listed connections, for the
// handshake of a connection whose own id is own, and how many ids they
// stand for (for Done). Ids only grow while a node runs: an id not below
// own belongs to an earlier run of the node (a restart, which closed that
// connection) and is skipped; with own unknown (0: CLIENT ID refused) no
// connection is closed.
func (l *List) Kills(own int64) (cmds [][]string, taken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if own == 0 {
		return nil, len(l.ids)
	}
	for _, id := range l.ids {
		if id < own {
			cmds = append(cmds, []string{"CLIENT", "KILL", "ID", strconv.FormatInt(id, 10)})
		}
	}
	return cmds, len(l.ids)
}

// Done drops the first taken ids, which a handshake closed (Kills).
func (l *List) Done(taken int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ids = l.ids[min(taken, len(l.ids)):]
}

// AppendCommand appends args as one RESP2 command.
func AppendCommand(buf []byte, args ...string) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(a)), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, a...)
		buf = append(buf, '\r', '\n')
	}
	return buf
}

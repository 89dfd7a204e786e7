// Package fence keeps a client's requests to a node in order across its
// connections (redlock/goredis, redlock/rueidis). A request left behind on
// a connection the client gave up (its bytes still on the way, or unread
// in the node's buffers) could otherwise run on the node after the
// requests of the connection that replaced it: a late release would delete
// a key that a later acquisition of the same value counted. So each
// connection learns who it is on the node when it is dialled (Commands:
// its CLIENT ID and the node's run id), the connections given up are kept
// in a List, and the handshake of the next connection closes them on the
// node (CLIENT KILL ID) before it carries a request. The node runs the
// kill before anything the new connection sends; after it, nothing of the
// old connections runs. A client id is unique within one run of a node
// only: after a restart the node hands the same ids out again, to other
// clients, so a connection is closed only when the node's run id is still
// the one it was dialled under.
package fence

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// maxIDs bounds a List: the connections given up while no dial could
// complete (the node down) beyond it are forgotten.
const maxIDs = 16

// Conn is who a connection is on its node: its CLIENT ID and the run id
// of the node when it was dialled. The zero value is unknown (the node
// refused CLIENT ID or INFO): such a connection is never closed by id.
type Conn struct {
	Run string
	ID  int64
}

// Commands are the handshake commands that tell who a connection is:
// their replies, in order, go to Identify.
func Commands() [][]string {
	return [][]string{{"CLIENT", "ID"}, {"INFO", "server"}}
}

// Identify reads the replies to Commands: the CLIENT ID (an integer) and
// INFO server (its text), each with ok false when the node answered with
// an error.
func Identify(id int64, idOK bool, info string, infoOK bool) Conn {
	if !idOK || !infoOK {
		return Conn{}
	}
	for line := range strings.Lines(info) {
		if run, found := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); found && run != "" {
			return Conn{Run: run, ID: id}
		}
	}
	return Conn{}
}

// List is the connections a client gave up and that no handshake closed
// on the node yet. The zero value is ready; it is safe for concurrent use.
type List struct {
	mu    sync.Mutex
	conns []Conn
}

// Retire adds a connection given up (an unknown one is ignored).
func (l *List) Retire(c Conn) {
	if c.ID == 0 || c.Run == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conns = append(l.conns, c)
	if len(l.conns) > maxIDs {
		l.conns = append(l.conns[:0], l.conns[len(l.conns)-maxIDs:]...)
	}
}

// Empty reports whether no connection is listed: a handshake then has
// nothing to close.
func (l *List) Empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns) == 0
}

// Kills returns the commands that close the listed connections, for the
// handshake of the connection own, and the listed connections they stand
// for (for Done, once the node answered them). Every listed connection of
// own's run of the node is closed, whatever its id (a connection made
// after own and given up meanwhile too); the others went with a restart,
// and their ids may now name other clients' connections: they are taken
// without a kill. With own unknown nothing is taken: the run of the node
// is not known, and a later connection that knows it closes them.
func (l *List) Kills(own Conn) (cmds [][]string, taken []Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if own.ID == 0 || own.Run == "" {
		return nil, nil
	}
	for _, c := range l.conns {
		if c.Run == own.Run && c.ID != own.ID {
			cmds = append(cmds, []string{"CLIENT", "KILL", "ID", strconv.FormatInt(c.ID, 10)})
		}
	}
	return cmds, append([]Conn(nil), l.conns...)
}

// Done drops the connections taken by a handshake whose kills the node
// answered (Kills), and only those: another handshake's kills, taken from
// the same list, or connections given up since, stay until a handshake
// closes them.
func (l *List) Done(taken []Conn) {
	if len(taken) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := slices.Clone(taken) // each taken connection drops one entry
	kept := l.conns[:0]
	for _, c := range l.conns {
		if i := slices.Index(rest, c); i >= 0 {
			rest = slices.Delete(rest, i, i+1)
			continue
		}
		kept = append(kept, c)
	}
	clear(l.conns[len(kept):])
	l.conns = kept
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

package ports

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Holders describes the TCP sockets of the machine bound to port (on any
// address, IPv4 or IPv6, in any state) and the processes that hold them,
// as "pid N (command line), LISTEN", for an error that says who took a
// port: a process that ignores reservations, or one that outlived its
// reservation. It reads /proc (Linux); where /proc cannot be read it
// returns nil. A socket whose process cannot be seen (another user's) is
// named by its state alone. Sockets in TIME_WAIT are left out: they hold
// no process's port, and they do not refuse the bind of a listener that
// sets SO_REUSEADDR, as Go's and redis-server's do.
func Holders(port int) []string {
	sockets := map[string]string{} // inode → state
	var unowned []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			_, hex, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(hex, 16, 16); !ok || err != nil || int(p) != port {
				continue
			}
			state := tcpState(fs[3])
			if state == "TIME_WAIT" {
				continue
			}
			if fs[9] == "0" {
				unowned = append(unowned, "no process, "+state)
				continue
			}
			sockets[fs[9]] = state
		}
		_ = f.Close()
	}
	if len(sockets) == 0 {
		return unowned
	}
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", d.Name(), "fd"))
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", d.Name(), "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
			state, ok := sockets[inode]
			if !ok {
				continue
			}
			delete(sockets, inode)
			out = append(out, fmt.Sprintf("pid %d (%s), %s", pid, command(pid), state))
		}
	}
	for _, state := range sockets {
		out = append(out, "an unseen process, "+state)
	}
	return append(out, unowned...)
}

// command returns pid's command line, its arguments joined by spaces and
// cut at 120 bytes ("?" when it cannot be read).
func command(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return "?"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// tcpState names a state of /proc/net/tcp's st column.
func tcpState(hex string) string {
	switch strings.ToUpper(hex) {
	case "01":
		return "ESTABLISHED"
	case "02":
		return "SYN_SENT"
	case "03":
		return "SYN_RECV"
	case "04":
		return "FIN_WAIT1"
	case "05":
		return "FIN_WAIT2"
	case "06":
		return "TIME_WAIT"
	case "07":
		return "CLOSE"
	case "08":
		return "CLOSE_WAIT"
	case "09":
		return "LAST_ACK"
	case "0A":
		return "LISTEN"
	case "0B":
		return "CLOSING"
	}
	return "state " + hex
}

package fence

import (
	"reflect"
	"slices"
	"strconv"
	"testing"
)

func TestListKills(t *testing.T) {
	a := func(id int64) Conn { return Conn{Run: "run-a", ID: id} }
	b := func(id int64) Conn { return Conn{Run: "run-b", ID: id} }
	kill := func(id string) []string { return []string{"CLIENT", "KILL", "ID", id} }
	tests := []struct {
		name      string
		retired   []Conn
		own       Conn
		want      [][]string
		wantTaken []Conn
	}{
		{"nothing given up", nil, a(10), nil, nil},
		{"same run, below own", []Conn{a(3), a(7)}, a(10), [][]string{kill("3"), kill("7")}, []Conn{a(3), a(7)}},
		// Dialled after own and given up before own's handshake read
		// the list: given up all the same. Failed before (c.ID <
		// own.ID): neither killed nor kept.
		{"same run, above own", []Conn{a(11)}, a(10), [][]string{kill("11")}, []Conn{a(11)}},
		{"another run of the node is taken without a kill", []Conn{b(3), a(7)}, a(10), [][]string{kill("7")}, []Conn{b(3), a(7)}},
		// Failed before: forgotten, so that a later connection that
		// knows who it is closed nothing.
		{"own unknown: nothing taken", []Conn{a(3)}, Conn{}, nil, nil},
		{"unknown connections are not kept", []Conn{{}, {Run: "run-a"}}, a(10), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l List
			for _, c := range tt.retired {
				l.Retire(c)
			}
			got, taken := l.Kills(tt.own)
			if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(taken, tt.wantTaken) {
				t.Errorf("Kills(%v) = %v, %v; want %v, %v", tt.own, got, taken, tt.want, tt.wantTaken)
			}
			l.Retire(a(99)) // given up while the handshake ran
			l.Done(taken)
			want := [][]string{kill("99")}
			for _, c := range tt.retired {
				if c.ID != 0 && c.Run != "" && !slices.Contains(taken, c) {
					want = append([][]string{kill(strconv.FormatInt(c.ID, 10))}, want...)
				}
			}
			if got, _ := l.Kills(a(100)); !reflect.DeepEqual(got, want) {
				t.Errorf("after Done, Kills = %v; want %v: what was not taken, and the connection retired meanwhile", got, want)
			}
		})
	}
}

// Done drops the connections its handshake took, and only those, however
// the list changed meanwhile. Each row failed before (Done dropped the
// first len(taken) entries): a connection given up after the kills were
// taken was dropped, never killed, and the next connection closed nothing.
func TestListDoneDropsOnlyWhatItTook(t *testing.T) {
	r := func(id int64) Conn { return Conn{Run: "r", ID: id} }
	t.Run("two handshakes overlap", func(t *testing.T) {
		var l List
		l.Retire(r(5))
		_, takenA := l.Kills(r(10)) // connection 10's handshake
		_, takenB := l.Kills(r(11)) // connection 11's, at the same time
		l.Done(takenA)
		l.Retire(r(10)) // connection 10 given up
		l.Done(takenB)
		if got, _ := l.Kills(r(12)); !reflect.DeepEqual(got, [][]string{{"CLIENT", "KILL", "ID", "10"}}) {
			t.Errorf("Kills after both Done = %v; want connection 10's kill", got)
		}
	})
	t.Run("the list overflows while the kills are out", func(t *testing.T) {
		var l List
		for id := range int64(maxIDs) {
			l.Retire(r(id + 1))
		}
		_, taken := l.Kills(r(100))
		l.Retire(r(50)) // given up while the kills are out: the oldest goes
		l.Done(taken)
		if got, _ := l.Kills(r(101)); !reflect.DeepEqual(got, [][]string{{"CLIENT", "KILL", "ID", "50"}}) {
			t.Errorf("Kills after Done = %v; want connection 50's kill", got)
		}
	})
}

func TestListIsBounded(t *testing.T) {
	var l List
	for id := int64(1); id <= 3*maxIDs; id++ {
		l.Retire(Conn{Run: "r", ID: id})
	}
	got, taken := l.Kills(Conn{Run: "r", ID: 1000})
	if len(got) != maxIDs || len(taken) != maxIDs || got[0][3] != "33" {
		t.Errorf("Kills = %d commands (first %v), %d taken; want the last %d ids", len(got), got[0], len(taken), maxIDs)
	}
}

func TestIdentify(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\ntcp_port:6379\r\n"
	tests := []struct {
		name         string
		idOK, infoOK bool
		info         string
		want         Conn
	}{
		{"both", true, true, info, Conn{Run: "abc123", ID: 42}},
		{"CLIENT ID refused", false, true, info, Conn{}},
		{"INFO refused", true, false, "", Conn{}},
		{"no run id", true, true, "# Server\r\n", Conn{}},
	}
	for _, tt := range tests {
		if got := Identify(42, tt.idOK, tt.info, tt.infoOK); got != tt.want {
			t.Errorf("%s: Identify = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAppendCommand(t *testing.T) {
	got := string(AppendCommand([]byte("x"), "SET", "k", ""))
	if want := "x*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"; got != want {
		t.Errorf("AppendCommand = %q, want %q", got, want)
	}
}

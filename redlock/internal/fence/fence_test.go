package fence

import (
	"reflect"
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
		wantTaken int
	}{
		{"nothing given up", nil, a(10), nil, 0},
		{"same run, below own", []Conn{a(3), a(7)}, a(10), [][]string{kill("3"), kill("7")}, 2},
		{"another run of the node is skipped", []Conn{b(3), a(7)}, a(10), [][]string{kill("7")}, 2},
		{"own unknown: no kill, forgotten", []Conn{a(3)}, Conn{}, nil, 1},
		{"unknown connections are not kept", []Conn{{}, {Run: "run-a"}}, a(10), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l List
			for _, c := range tt.retired {
				l.Retire(c)
			}
			got, taken := l.Kills(tt.own)
			if !reflect.DeepEqual(got, tt.want) || taken != tt.wantTaken {
				t.Errorf("Kills(%v) = %v, %d; want %v, %d", tt.own, got, taken, tt.want, tt.wantTaken)
			}
			l.Retire(a(99)) // given up while the handshake ran
			l.Done(taken)
			if got, _ := l.Kills(a(100)); !reflect.DeepEqual(got, [][]string{kill("99")}) {
				t.Errorf("after Done, Kills = %v; want only the connection retired meanwhile", got)
			}
		})
	}
}

func TestListIsBounded(t *testing.T) {
	var l List
	for id := int64(1); id <= 3*maxIDs; id++ {
		l.Retire(Conn{Run: "r", ID: id})
	}
	got, taken := l.Kills(Conn{Run: "r", ID: 1000})
	if len(got) != maxIDs || taken != maxIDs || got[0][3] != "33" {
		t.Errorf("Kills = %d commands (first %v), taken %d; want the last %d ids", len(got), got[0], taken, maxIDs)
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

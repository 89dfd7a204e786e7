package fence

import (
	"reflect"
	"testing"
)

func TestListKills(t *testing.T) {
	tests := []struct {
		name      string
		retired   []int64
		own       int64
		want      [][]string
		wantTaken int
	}{
		{"nothing given up", nil, 10, nil, 0},
		{"below own", []int64{3, 7}, 10, [][]string{{"CLIENT", "KILL", "ID", "3"}, {"CLIENT", "KILL", "ID", "7"}}, 2},
		{"an earlier run's id is skipped", []int64{3, 12}, 10, [][]string{{"CLIENT", "KILL", "ID", "3"}}, 2},
		{"own unknown: no kill, forgotten", []int64{3}, 0, nil, 1},
		{"unknown ids are not kept", []int64{0, 0}, 10, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l List
			for _, id := range tt.retired {
				l.Retire(id)
			}
			got, taken := l.Kills(tt.own)
			if !reflect.DeepEqual(got, tt.want) || taken != tt.wantTaken {
				t.Errorf("Kills(%d) = %v, %d; want %v, %d", tt.own, got, taken, tt.want, tt.wantTaken)
			}
			l.Retire(99) // given up while the handshake ran
			l.Done(taken)
			if got, _ := l.Kills(100); len(got) != 1 || got[0][3] != "99" {
				t.Errorf("after Done, Kills = %v; want only the id retired meanwhile", got)
			}
		})
	}
}

func TestListIsBounded(t *testing.T) {
	var l List
	for id := int64(1); id <= 3*maxIDs; id++ {
		l.Retire(id)
	}
	got, taken := l.Kills(1000)
	if len(got) != maxIDs || taken != maxIDs || got[0][3] != "33" {
		t.Errorf("Kills = %d commands (first %v), taken %d; want the last %d ids", len(got), got[0], taken, maxIDs)
	}
}

func TestAppendCommand(t *testing.T) {
	got := string(AppendCommand([]byte("x"), "SET", "k", ""))
	if want := "x*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"; got != want {
		t.Errorf("AppendCommand = %q, want %q", got, want)
	}
}

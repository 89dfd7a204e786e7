package slots

import (
	"slices"
	"testing"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		key  string
		want int
	}{
		{"123456789", 0x31C3 % Count}, // the CRC-16/XMODEM check value
		{"foo", 12182},
		{"{foo}bar", 12182},
		{"x{foo}y{z}", 12182},
		{"{}foo", Of("{}foo")}, // an empty tag: the whole key
		{"a{b", int(crc16("a{b")) % Count},
	} {
		if got := Of(c.key); got != c.want {
			t.Errorf("Of(%q) = %d, want %d", c.key, got, c.want)
		}
	}
	if Of("{}foo") == Of("foo") {
		t.Errorf("an empty tag hashed as the rest of the key")
	}
}

func TestSplit(t *testing.T) {
	keys := []string{"{a}1", "{b}1", "{a}2", "{c}1"}
	gs := Split(keys)
	for i, g := range gs {
		if i > 0 && g.Slot <= gs[i-1].Slot {
			t.Errorf("groups not in slot order: %v", gs)
		}
	}
	if len(gs) != 3 {
		t.Fatalf("Split(%q) = %v, want 3 groups", keys, gs)
	}
	for _, g := range gs {
		if g.Slot == Of("a") && !slices.Equal(g.Idx, []int{0, 2}) {
			t.Errorf("group of {a} = %v, want [0 2]", g.Idx)
		}
	}
	if got := Pick(keys, []int{0, 2}); !slices.Equal(got, []string{"{a}1", "{a}2"}) {
		t.Errorf("Pick = %q", got)
	}
}

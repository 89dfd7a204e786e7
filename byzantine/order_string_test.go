package byzantine_test

import (
	"fmt"
	"testing"

	"dlm/byzantine"
)

// TestOrderStringUnambiguous: an order prints as it is when it shows
// unambiguously, and quoted when it holds what a terminal would act on or
// could pass for a quoted order.
func TestOrderStringUnambiguous(t *testing.T) {
	tests := []struct {
		o    byzantine.Order
		want string
	}{
		{byzantine.Attack, "attack"},
		{"deploy v2@prod", "deploy v2@prod"},
		{"naïve", "naïve"},
		{"att\nack", `"att\nack"`},
		{"x\r\x1b[2K", `"x\r\x1b[2K"`},
		{"\u009b2K", `"\u009b2K"`},
		{"bad\xff", `"bad\xff"`},
		{`"x\r"`, `"\"x\\r\""`},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(tt.o); got != tt.want {
			t.Errorf("fmt.Sprint(%q) = %s, want %s", string(tt.o), got, tt.want)
		}
	}
	if got := fmt.Sprint([]byzantine.Order{"a", "b\n"}); got != `[a "b\n"]` {
		t.Errorf("a vector prints %s", got)
	}
}

package suggest

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	fields := []string{"on_error", "retries", "timeout", "allowed-tools"}
	tests := []struct {
		word, want string
	}{
		{"on-error", "on_error"},           // folded equal
		{"ON_ERROR", "on_error"},           // case
		{"allowed_tools", "allowed-tools"}, // folded equal
		{"retires", "retries"},             // one swap
		{"rteries", "retries"},             // one swap
		{"timoeut", "timeout"},             // one swap
		{"timeot", "timeout"},              // distance 1
		{"parallelism", ""},                // nothing close
		{strings.Repeat("x", 100), ""},     // too long to compare
	}
	for _, tt := range tests {
		if got := Closest(tt.word, fields); got != tt.want {
			t.Errorf("Closest(%q) = %q; want %q", tt.word, got, tt.want)
		}
	}
}

// TestClosestSwapBeatsSubstitution: a swap of two adjacent letters is one
// edit, so "demo-wiat" means "demo-wait", not "demo-list" (two
// substitutions), even when "demo-list" comes first.
func TestClosestSwapBeatsSubstitution(t *testing.T) {
	if got := Closest("demo-wiat", []string{"demo-list", "demo-wait"}); got != "demo-wait" {
		t.Errorf("Closest(demo-wiat) = %q; want demo-wait", got)
	}
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"wiat", "wait", 1},
		{"ab", "ba", 1},
		{"abc", "ca", 3}, // optimal string alignment: no edit of a swapped pair
		{"kitten", "sitting", 3},
		{"", "abc", 3},
		{"same", "same", 0},
	} {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

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
		{"retires", "retries"},             // distance 2
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

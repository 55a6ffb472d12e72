package yamlplain

import (
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestWalk(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // "LINE: message"
	}{
		{"plain", "a: 1\nb: [x, y]\nc: {d: e}\n", nil},
		{"anchor alone", "a: &x 1\nb: 2\n", nil},
		{"alias", "a: &x 1\nb: *x\n", []string{"2: " + AliasMessage}},
		{"alias in a list and a key", "a: &x k\nl: [1, *x]\n*x : v\n", []string{"2: " + AliasMessage, "3: " + AliasMessage}},
		{"merge key, once", "base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n", []string{"3: " + MergeKeyMessage}},
		{"quoted merge key", "m:\n  \"<<\": 1\n", []string{"2: " + MergeKeyMessage}},
		{"<< as a value", "m: <<\n", nil},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.src), &doc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		Walk(&doc, func(line int, msg string) { got = append(got, fmt.Sprintf("%d: %s", line, msg)) })
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: Walk(%q) reported %q; want %q", tc.name, tc.src, got, tc.want)
		}
	}
}

package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/tool"
)

// items is a JSON array of n numbers, text.render's data for the loops below.
func items(n int) string {
	xs := make([]string, n)
	for i := range xs {
		xs[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(xs, ",") + "]"
}

// TestRenderStopsRunawayTemplates runs templates that would take minutes
// (2000³ iterations, 2⁶⁰ template calls) and checks each ends at once with
// a clear error: by the output cap, by the step limit, or by the caller's
// deadline.
func TestRenderStopsRunawayTemplates(t *testing.T) {
	cases := []struct {
		name, template string
		data           string
		timeout        time.Duration
		code, want     string
	}{
		{"writes past the cap", `{{range .}}{{range $}}{{range $}}x{{end}}{{end}}{{end}}`, items(2000), time.Minute, "413", "output over 262144 bytes"},
		{"silent nested ranges", `{{range .}}{{range $}}{{range $}}{{end}}{{end}}{{end}}`, items(2000), time.Minute, "400", "more than 2000000 steps"},
		{"silent integer range", `{{range 100000000000}}{{end}}`, `null`, time.Minute, "400", "more than 2000000 steps"},
		{"silent recursion past the deadline", `{{define "a"}}{{if .}}{{template "a" slice . 1}}{{template "a" slice . 1}}{{end}}{{end}}{{template "a" .}}`, items(60), 200 * time.Millisecond, "", "deadline exceeded"},
		{"deadline", `{{range .}}{{range $}}{{range $}}{{end}}{{end}}{{end}}`, items(2000), 50 * time.Millisecond, "", "deadline exceeded"},
	}
	p := newProvider(t, Config{Root: t.TempDir()})
	var render tool.Func
	for _, tl := range p.Tools() {
		if tl.Name == "text.render" {
			render = tl.Func
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			tmpl, _ := json.Marshal(tc.template)
			args := fmt.Sprintf(`{"template":%s,"data":%s}`, tmpl, tc.data)
			start := time.Now()
			res, err := render(ctx, json.RawMessage(args))
			took := time.Since(start)
			if err == nil {
				t.Fatalf("text.render(%q) = %.60v…; want an error", tc.template, res)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("text.render(%q) error %q; want it to contain %q", tc.template, err, tc.want)
			}
			var te *tool.Error
			switch {
			case tc.code == "" && !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("text.render(%q) error %v; want the context's deadline error (code 504 on the wire)", tc.template, err)
			case tc.code != "" && (!errors.As(err, &te) || te.Code != tc.code):
				t.Errorf("text.render(%q) error %v; want code %s", tc.template, err, tc.code)
			}
			if limit := tc.timeout + 5*time.Second; took > limit && tc.timeout < time.Minute || took > 15*time.Second {
				t.Errorf("text.render(%q) took %v; want it stopped promptly", tc.template, took)
			}
		})
	}
}

// TestRenderWithinLimits checks that output right at the cap and loops
// under the step limit still render.
func TestRenderWithinLimits(t *testing.T) {
	p := newProvider(t, Config{Root: t.TempDir()})
	tmpl := fmt.Sprintf(`{{range .}}{{range $}}{{end}}{{end}}{{printf "%%0%dd" 0}}`, DefaultMaxRenderBytes)
	res, code, err := call(t, p, "text.render", fmt.Sprintf(`{"template":%q,"data":%s}`, tmpl, items(1000)))
	if err != nil {
		t.Fatalf("text.render(1000² steps, %d bytes): code %s: %v", DefaultMaxRenderBytes, code, err)
	}
	var s string
	if err := json.Unmarshal(res, &s); err != nil || len(s) != DefaultMaxRenderBytes {
		t.Errorf("text.render(%d bytes) = %d bytes (%v); want all of them", DefaultMaxRenderBytes, len(s), err)
	}
}

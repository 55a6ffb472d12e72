package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/skillbus/skillbus/pkg/tool"
)

// renderFuncs are the functions text.render's templates may call besides
// text/template's built-ins (len, index, printf, and, or, not, eq, lt, ...).
var renderFuncs = template.FuncMap{
	// join joins a list of values with sep.
	"join": func(sep string, xs []any) string {
		ss := make([]string, len(xs))
		for i, x := range xs {
			ss[i] = fmt.Sprint(x)
		}
		return strings.Join(ss, sep)
	},
	// lines splits text into lines (no trailing empty line).
	"lines": func(s string) []string {
		s = strings.TrimRight(s, "\n")
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	},
	// first returns the first n items of a list (all when fewer).
	"first": func(n int, xs any) any {
		switch v := xs.(type) {
		case []any:
			return v[:min(n, len(v))]
		case []string:
			return v[:min(n, len(v))]
		}
		return xs
	},
	// trunc cuts text to n bytes, marking a cut with "…".
	"trunc": func(n int, s string) string { return clipText(s, n) },
	// json renders a value as compact JSON.
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	// keys returns the sorted keys of an object.
	"keys": func(m map[string]any) []string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	},
	// default returns def when v is null or "".
	"default": func(def, v any) any {
		if v == nil || v == "" {
			return def
		}
		return v
	},
	"upper": strings.ToUpper,
	"lower": strings.ToLower,
	"trim":  strings.TrimSpace,
}

// render is text.render: it executes a Go text/template (with renderFuncs)
// on data and returns the text as a JSON string. Numbers in data arrive as
// float64 (integers print without a fraction through printf "%v"). The
// output is capped at DefaultMaxRenderBytes. A template error is code "400"
// with the template's own line and column.
func render(ctx context.Context, args json.RawMessage) (any, error) {
	var in struct {
		Template string `json:"template"`
		Data     any    `json:"data"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if in.Template == "" {
		return nil, tool.Errorf("400", "bad arguments: template is required (Go text/template syntax, for example \"Hello {{.name}}\")")
	}
	t, err := template.New("template").Option("missingkey=zero").Funcs(renderFuncs).Parse(in.Template)
	if err != nil {
		return nil, tool.Errorf("400", "template: %v", strings.TrimPrefix(err.Error(), "template: "))
	}
	var out bytes.Buffer
	lw := &limitedBuffer{max: DefaultMaxRenderBytes}
	if err := t.Execute(lw, in.Data); err != nil {
		return nil, tool.Errorf("400", "template: %v", strings.TrimPrefix(err.Error(), "template: "))
	}
	out.Write(lw.buf.Bytes())
	if lw.dropped > 0 {
		out.WriteString("\n… (output cut at 256 KiB)\n")
	}
	return out.String(), nil
}

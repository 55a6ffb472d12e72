package seq

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestRewriteArgs(t *testing.T) {
	tests := []struct {
		in, want string
		keys     []string
	}{
		{`$args.a > 1`, `_args_a > 1`, []string{"a"}},
		{`$args.a == "$args.b"`, `_args_a == "$args.b"`, []string{"a"}},
		{`$args.a == '$args.b' && $args.c`, `_args_a == '$args.b' && _args_c`, []string{"a", "c"}},
		{`$args.a == """x $args.b"""`, `_args_a == """x $args.b"""`, []string{"a"}},
		{`$args.a == "q\"$args.b"`, `_args_a == "q\"$args.b"`, []string{"a"}},
		{`size($args.list) > 0`, `size(_args_list) > 0`, []string{"list"}},
		{`$args.o.field == 1`, `_args_o.field == 1`, []string{"o"}},
	}
	for _, tt := range tests {
		got, keys, msg := rewriteArgs(tt.in)
		if msg != "" || got != tt.want || strings.Join(keys, ",") != strings.Join(tt.keys, ",") {
			t.Errorf("rewriteArgs(%q) = %q, %v, %q; want %q, %v", tt.in, got, keys, msg, tt.want, tt.keys)
		}
	}
	for _, bad := range []string{`$args. > 1`, `$x > 1`, `_args_a`, `$args.1a`} {
		if _, _, msg := rewriteArgs(bad); msg == "" {
			t.Errorf("rewriteArgs(%q) accepted; want a message", bad)
		}
	}
}

func TestWhenEvaluation(t *testing.T) {
	in := map[string]Type{"s": "string", "n": "integer", "r": "number", "b": "bool", "o": "object", "l": "array<string>"}
	tests := []struct {
		expr  string
		scope map[string]string
		want  bool
	}{
		{`$args.s == null`, map[string]string{"s": "null"}, true},
		{`$args.s == null`, map[string]string{}, true}, // absent reads as null
		{`$args.s != null && $args.s.startsWith("v")`, map[string]string{"s": `"v1"`}, true},
		{`$args.n > 2`, map[string]string{"n": "3"}, true},
		{`$args.n > 2.5`, map[string]string{"n": "2"}, false},
		{`$args.r >= 2`, map[string]string{"r": "2"}, true},
		{`$args.r * 2.0 == 3.0`, map[string]string{"r": "1.5"}, true},
		{`$args.b`, map[string]string{"b": "true"}, true},
		{`$args.o == null`, map[string]string{"o": "null"}, true},
		{`$args.o.k.size() == 2`, map[string]string{"o": `{"k":[1,2]}`}, true},
		{`$args.o.count > 1`, map[string]string{"o": `{"count": 2}`}, true},
		{`$args.l != null && "b" in $args.l`, map[string]string{"l": `["a","b"]`}, true},
		{`$args.l == null || size($args.l) == 0`, map[string]string{"l": `[]`}, true},
	}
	for _, tt := range tests {
		prog, msg, _ := compileWhen(tt.expr, in)
		if msg != "" {
			t.Errorf("compileWhen(%q): %s", tt.expr, msg)
			continue
		}
		scope := map[string]json.RawMessage{}
		for k, v := range tt.scope {
			scope[k] = json.RawMessage(v)
		}
		got, err := prog.eval(context.Background(), scope)
		if err != nil || got != tt.want {
			t.Errorf("eval(%q, %v) = %v, %v; want %v", tt.expr, tt.scope, got, err, tt.want)
		}
	}
}

func TestWhenCompileMessages(t *testing.T) {
	in := map[string]Type{"s": "string", "n": "integer"}
	tests := []struct{ expr, want string }{
		{`$args.s > 1`, "found no matching overload for '>' applied to '(string, int)'"},
		{`$args.n +`, "does not compile"},
		{`$args.n`, "yields an integer, not true or false"},
		{`$args.s`, "yields a string"},
		{`$args.zz == 1`, `"zz" is not declared in the group's` + " `in`"},
		{`env.HOME == "x"`, "undeclared reference to 'env'"},
	}
	for _, tt := range tests {
		_, msg, _ := compileWhen(tt.expr, in)
		if !strings.Contains(msg, tt.want) {
			t.Errorf("compileWhen(%q) = %q; want it to contain %q", tt.expr, msg, tt.want)
		}
		if strings.Contains(msg, "_args_") || strings.Contains(msg, "wrapper(") || strings.Contains(msg, "|") {
			t.Errorf("compileWhen(%q) message leaks internals: %q", tt.expr, msg)
		}
	}
}

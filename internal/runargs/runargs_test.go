package runargs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/seq"
)

// The rules are tested through the CLI too (internal/cli/args_test.go);
// these cases pin the exported names the web console uses.
func TestValue(t *testing.T) {
	cases := []struct {
		typ     seq.Type
		in      string
		want    string
		wantErr string
	}{
		{"string", "123", `"123"`, ""},
		{"string", "null", `"null"`, ""},
		{"integer", "007", `7`, ""},
		{"integer", "1e3", `1e3`, ""},
		{"integer", "2.5", "", `give a whole number such as 10, not "2.5"`},
		{"number", "2.5", `2.5`, ""},
		{"bool", "yes", "", "give true or false"},
		{"bool", "null", `null`, ""},
		{"object", `{"a":1}`, `{"a":1}`, ""},
		{"array<string>", `x`, "", "give a JSON array"},
		{"array<object>", `[{"path":"a"},2]`, "", "item 2: give a JSON object"},
		{"array<string>", `["a","b"]`, `["a","b"]`, ""},
	}
	for _, tc := range cases {
		got, err := Value(tc.typ, tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Value(%s, %q) error = %v; want %q", tc.typ, tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("Value(%s, %q) = %s, %v; want %s", tc.typ, tc.in, got, err, tc.want)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	if err := CheckJSON("array<integer>", json.RawMessage(`[1, 2.5]`)); err == nil || !strings.Contains(err.Error(), "item 2") {
		t.Errorf("CheckJSON(array<integer>, [1, 2.5]) = %v; want an error naming item 2", err)
	}
	if err := CheckJSON("string", json.RawMessage(`null`)); err != nil {
		t.Errorf("null for a string: %v", err)
	}
	if got := SignatureText(map[string]seq.Type{"b": "bool", "a": "string"}); got != "(a: string, b: bool)" {
		t.Errorf("SignatureText = %q", got)
	}
	if got := SignatureText(nil); got != "no arguments" {
		t.Errorf("SignatureText(nil) = %q", got)
	}
}

// TestDecodeObject: what an --args-file says when it is not one JSON
// object of arguments, in words and with the line.
func TestDecodeObject(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a": 1, "b": [1, {"a": 2}]}`, ""}, // a key inside a value is not an argument
		{"{\n \"a\": 1,\n \"b\": 2,\n \"a\": 3\n}", `line 4: the argument "a" is given twice (first at line 2); give each argument once`},
		{`[1, 2]`, `want a JSON object of arguments such as {"root": "."}, not an array`},
		{`42`, `not an integer`},
		{`null`, `not null`},
		{`  `, `the file is empty`},
		{"{\n \"a\": 1\n", `the JSON ends early`},
		{"{\n \"a\": 1,\n}", `not valid JSON at line 3, column 1: invalid character '}' looking for beginning of object key string`},
		{"{\"a\": 1}\n{}", `there is more after the JSON object (line 2)`},
		{"{\"a\": tru}", `not valid JSON at line 1, column 10`},
		{"\xef\xbb\xbf{\"a\": 1, \"b\": [1, {\"a\": 2}]}", ""}, // a UTF-8 byte-order mark is skipped
	} {
		obj, err := DecodeObject([]byte(tc.in))
		if tc.want == "" {
			if err != nil || len(obj) != 2 || string(obj["b"]) != `[1, {"a": 2}]` {
				t.Errorf("DecodeObject(%q) = %v, %v", tc.in, obj, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeObject(%q) error = %v; want %q", tc.in, err, tc.want)
		}
	}
}

// TestShadowed: each --arg whose key the file also gives is named once,
// with the file's value and line; --arg keys the file lacks are not.
func TestShadowed(t *testing.T) {
	f := &File{Name: "a.json", Data: []byte("{\n  \"root\": \".\",\n  \"n\": 2\n}")}
	got := Shadowed(f, []string{"n=3", "who=x", "n=4", "bad"})
	want := []string{`--arg n=3 replaces "n": 2 from --args-file a.json line 3 (--arg wins over --args-file)`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Shadowed = %q; want %q", got, want)
	}
	if got := Shadowed(&File{Name: "-", Data: []byte(`{"n": 1}`)}, []string{"n=2"}); len(got) != 1 || !strings.Contains(got[0], "--args-file - (standard input) line 1") {
		t.Errorf("Shadowed(stdin) = %q", got)
	}
	if got := Shadowed(&File{Name: "a.json", Data: []byte(`{`)}, []string{"n=2"}); got != nil {
		t.Errorf("Shadowed(invalid file) = %q; want nothing (Build reports the file)", got)
	}
	args, err := Build(map[string]seq.Type{"root": "string", "n": "integer"}, f, []string{"n=3"}, true)
	if err != nil || string(args["n"]) != "3" || string(args["root"]) != `"."` {
		t.Errorf("Build = %s, %v; want n 3 (the --arg) and root from the file", args, err)
	}
}

// FuzzDecodeObject: an --args-file never panics the reader; what it
// accepts is exactly what encoding/json reads as an object (so nothing is
// lost or invented), and what it refuses that encoding/json would take is
// a key given twice; errors never show Go types or the json package.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{"root": ".", "n": 2}`, "{\n \"a\": 1,\n \"a\": 2\n}", `[1]`, `null`, ``, `{"a": {"a": 1, "a": 2}}`,
		`{"a": 1} x`, `{"\u0061": 1, "a": 2}`, "{\"a\": \"\xff\", \"\xfe\": 1}", `{"a":1e999}`, `{"":""}`,
	} {
		f.Add([]byte(s), "a=1")
	}
	f.Fuzz(func(t *testing.T, b []byte, kv string) {
		obj, err := DecodeObject(b)
		var std map[string]json.RawMessage
		stdErr := json.Unmarshal(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), &std) // a leading BOM is skipped
		if err == nil {
			if stdErr != nil || std == nil || len(std) != len(obj) {
				t.Fatalf("DecodeObject(%q) = %d keys; encoding/json: %d keys, %v", b, len(obj), len(std), stdErr)
			}
			for k, v := range obj {
				if !json.Valid(v) || !bytes.Equal(std[k], v) {
					t.Fatalf("DecodeObject(%q)[%q] = %s; encoding/json: %s", b, k, v, std[k])
				}
			}
		} else {
			msg := err.Error()
			for _, leak := range []string{"json:", "Go value", "RawMessage", "map["} {
				if strings.Contains(msg, leak) {
					t.Fatalf("DecodeObject(%q) error %q shows %q", b, msg, leak)
				}
			}
			if stdErr == nil && std != nil && !strings.Contains(msg, "is given twice") {
				t.Fatalf("DecodeObject(%q) refused what encoding/json reads as an object: %v", b, err)
			}
		}
		_ = Shadowed(&File{Name: "f", Data: b}, []string{kv})
	})
}

// FuzzBuild: any --args-file content and --arg pair against a signature
// never panics; what Build accepts fits the signature (every key declared,
// every value of its type), and the --arg wins over the file.
func FuzzBuild(f *testing.F) {
	f.Add([]byte(`{"root": ".", "n": 2}`), "n=3")
	f.Add([]byte(`{"tags": ["a"], "o": {"k": 1}}`), `tags=["b"]`)
	f.Add([]byte("{\n\"n\": 1,\n\"n\": 2}"), "root=x")
	f.Add([]byte(`{"n": null}`), "n=null")
	sig := map[string]seq.Type{"root": "string", "n": "integer", "tags": "array<string>", "o": "object"}
	f.Fuzz(func(t *testing.T, b []byte, kv string) {
		args, err := Build(sig, &File{Name: "f.json", Data: b}, []string{kv}, false)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--args-file f.json: ") && !strings.HasPrefix(err.Error(), "--arg ") {
				t.Fatalf("Build error %q names neither --args-file nor --arg", err)
			}
			return
		}
		for k, v := range args {
			typ, ok := sig[k]
			if !ok {
				t.Fatalf("Build accepted undeclared %q", k)
			}
			if err := CheckJSON(typ, v); err != nil {
				t.Fatalf("Build accepted %s = %s of the wrong type: %v", k, v, err)
			}
		}
		if k, v, ok := strings.Cut(kv, "="); ok {
			if want, err := Value(sig[k], v); err == nil && string(args[k]) != string(want) {
				t.Fatalf("--arg %s lost to the file: %s = %s", kv, k, args[k])
			}
		}
	})
}

func TestProblems(t *testing.T) {
	sig := map[string]seq.Type{"root": "string", "n": "integer"}
	if p := Problems(sig, map[string]json.RawMessage{"root": json.RawMessage(`"."`), "n": json.RawMessage(`2`)}); p != nil {
		t.Errorf("Problems(fitting args) = %v; want nil", p)
	}
	p := Problems(sig, map[string]json.RawMessage{"root": json.RawMessage(`5`), "colour": json.RawMessage(`"red"`)})
	want := map[string]string{
		"root":   `root is declared string; give a JSON string such as "text", not an integer 5`,
		"colour": `unknown argument "colour"; the sequence takes `,
		"n":      "missing: n is a run argument of type integer; give a value such as ",
	}
	for k, w := range want {
		if !strings.HasPrefix(p[k], w) {
			t.Errorf("Problems()[%q] = %q; want it to start with %q", k, p[k], w)
		}
	}
	if len(p) != 3 {
		t.Errorf("Problems() = %v; want 3 problems", p)
	}
}

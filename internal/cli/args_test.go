package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/seq"
)

func TestBuildArgs(t *testing.T) {
	sig := map[string]seq.Type{"root": "string", "limit": "integer", "ratio": "number", "page": "bool", "meta": "object", "tags": "array<string>"}
	file := filepath.Join(t.TempDir(), "args.json")
	if err := os.WriteFile(file, []byte(`{"root": "from-file", "limit": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		file    string
		kvs     []string
		all     bool
		want    string // JSON of the result; "" when an error is wanted
		wantErr string
	}{
		{"string kept literally", "", []string{"root=.", "limit=10"}, false, `{"limit":10,"root":"."}`, ""},
		{"string that looks like JSON stays a string", "", []string{"root=123"}, false, `{"root":"123"}`, ""},
		{"string with equals", "", []string{"root=a=b"}, false, `{"root":"a=b"}`, ""},
		{"typed values", "", []string{"ratio=2.5", "page=true", `meta={"a":1}`, `tags=["x","y"]`}, false, `{"meta":{"a":1},"page":true,"ratio":2.5,"tags":["x","y"]}`, ""},
		{"null for non-string", "", []string{"limit=null"}, false, `{"limit":null}`, ""},
		{"file then arg wins", file, []string{"root=cli"}, false, `{"limit":3,"root":"cli"}`, ""},
		{"unknown key", "", []string{"rot=."}, false, "", `unknown argument "rot"`},
		{"no equals", "", []string{"root"}, false, "", "write KEY=VALUE"},
		{"bad integer", "", []string{"limit=ten"}, false, "", "limit is declared integer; give a whole number"},
		{"integer written with .0", "", []string{"limit=5.0"}, false, `{"limit":5.0}`, ""},
		{"integer with exponent", "", []string{"limit=1e3"}, false, `{"limit":1e3}`, ""},
		{"negative integer", "", []string{"limit=-3"}, false, `{"limit":-3}`, ""},
		{"integer with leading zeros", "", []string{"limit=007"}, false, `{"limit":7}`, ""},
		{"fraction for integer", "", []string{"limit=2.5"}, false, "", `limit is declared integer; give a whole number such as 10, not "2.5"`},
		{"small exponent for integer", "", []string{"limit=1e-3"}, false, "", `give a whole number such as 10, not "1e-3"`},
		{"string for integer", "", []string{"limit=5 apples"}, false, "", `give a whole number such as 10, not "5 apples"`},
		{"bad bool", "", []string{"page=yes"}, false, "", "give true or false"},
		{"object not object", "", []string{"meta=[1]"}, false, "", "give a JSON object"},
		{"array not array", "", []string{"tags=x"}, false, "", "give a JSON array"},
		{"missing with all", "", []string{"root=."}, true, "", "missing argument(s) limit, meta, page, ratio, tags"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildArgsFile(sig, tc.file, tc.kvs, tc.all)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("buildArgs(%q) error = %v; want one containing %q", tc.kvs, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("buildArgs(%q): %v", tc.kvs, err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Errorf("buildArgs(%q) = %s; want %s", tc.kvs, b, tc.want)
			}
		})
	}
}

func TestBuildArgsFileTypes(t *testing.T) {
	sig := map[string]seq.Type{"root": "string", "limit": "integer", "ratio": "number", "page": "bool", "meta": "object", "tags": "array<string>", "any": "array"}
	cases := []struct {
		name    string
		content string
		wantErr string // "" when the file is accepted
	}{
		{"every type right", `{"root": ".", "limit": 5, "ratio": 2, "page": false, "meta": {}, "tags": ["a"], "any": [1, "x"]}`, ""},
		{"null fits every type", `{"root": null, "limit": null, "tags": null}`, ""},
		{"integer written with .0", `{"limit": 5.0}`, ""},
		{"string for integer", `{"limit": "5"}`, `limit is declared integer; give a whole number such as 10, not a string "5"`},
		{"fraction for integer", `{"limit": 2.5}`, `limit is declared integer; give a whole number such as 10, not a number 2.5`},
		{"number for string", `{"root": 5}`, `root is declared string; give a JSON string such as "text", not an integer 5`},
		{"string for bool", `{"page": "true"}`, `page is declared bool; give true or false, not a string "true"`},
		{"array for object", `{"meta": [1]}`, `meta is declared object; give a JSON object`},
		{"object for array", `{"tags": {}}`, `tags is declared array<string>; give a JSON array`},
		{"wrong item type", `{"tags": ["a", 2]}`, `tags is declared array<string>; item 2: give a JSON string such as "text", not an integer 2`},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, fmt.Sprintf("args%d.json", i))
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := buildArgsFile(sig, p, nil, false)
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("buildArgs(--args-file %s): %v", tc.content, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "--args-file "+p+": ") {
				t.Errorf("buildArgs(--args-file %s) error = %v; want one starting with --args-file %s and containing %q", tc.content, err, p, tc.wantErr)
			}
		})
	}
}

func TestBuildArgsRepeatedKey(t *testing.T) {
	sig := map[string]seq.Type{"who": "string", "n": "integer"}
	for _, sg := range []map[string]seq.Type{sig, nil} {
		_, err := buildArgsFile(sg, "", []string{"who=a", "n=1", "who=b"}, false)
		if err == nil || !strings.Contains(err.Error(), `argument "who" is given more than once`) {
			t.Errorf("buildArgs(who=a who=b, signature %v) error = %v; want a repeated-key error naming who", sg, err)
		}
	}
}

func TestBuildArgsUnknownSignature(t *testing.T) {
	got, err := buildArgsFile(nil, "", []string{"n=5", "s=hello", `o={"a":true}`}, true)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	if want := `{"n":5,"o":{"a":true},"s":"hello"}`; string(b) != want {
		t.Errorf("buildArgs(no signature) = %s; want %s", b, want)
	}
}

func TestBuildArgsFileErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"array.json": `[1]`, "bad.json": `{`, "null.json": `null`, "unknown.json": `{"x":1}`} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := buildArgsFile(map[string]seq.Type{"root": "string"}, p, nil, false); err == nil || !strings.Contains(err.Error(), "--args-file") {
			t.Errorf("buildArgs(--args-file %s) error = %v; want an --args-file error", content, err)
		}
	}
	if _, err := buildArgsFile(nil, filepath.Join(dir, "missing.json"), nil, false); err == nil {
		t.Error("buildArgs(missing --args-file) succeeded")
	}
}

// buildArgsFile is readArgsFile then buildArgs, as run and call do.
func buildArgsFile(want map[string]seq.Type, file string, kvs []string, all bool) (map[string]json.RawMessage, error) {
	af, err := readArgsFile(Env{Stdin: strings.NewReader("")}, file)
	if err != nil {
		return nil, err
	}
	return buildArgs(want, af, kvs, all)
}

// TestArgsFileWords: --args-file problems are said in words, never in Go
// types; a key given twice is refused (as a repeated --arg is), not
// silently the last; "-" reads standard input.
func TestArgsFileWords(t *testing.T) {
	dir := t.TempDir()
	sig := map[string]seq.Type{"root": "string", "n": "integer"}
	for _, tc := range []struct{ content, want string }{
		{`[1]`, `want a JSON object of arguments such as {"root": "."}, not an array`},
		{`"x"`, `not a string`},
		{`null`, `not null`},
		{`{"root": "a", "root": "b"}`, `line 1: the argument "root" is given twice (first at line 1); give each argument once`},
		{"{\n  \"root\": \"a\",\n  \"n\": 1,\n  \"root\": \"b\"\n}", `line 4: the argument "root" is given twice (first at line 2)`},
		{"{\n  \"root\": \"a\",\n  \"n\": \"two\"\n}", `line 3: n is declared integer; give a whole number such as 10, not a string "two"`},
		{"{\n  \"root\": \"a\",\n  \"rooot\": \"b\"\n}", `line 3: unknown argument "rooot" (did you mean root?); the sequence takes (n: integer, root: string)`},
		{"{\n  \"root\": \"a\",\n  }", "not valid JSON at line 3, column 3"},
		{`{"root": "a"`, "the JSON ends early"},
		{``, "the file is empty"},
		{`{"root": "a"} {}`, "there is more after the JSON object (line 1)"},
	} {
		p := filepath.Join(dir, "a.json")
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := buildArgsFile(sig, p, nil, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--args-file %q: %v; want %q", tc.content, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "Go value") || strings.Contains(err.Error(), "json.RawMessage") || strings.Contains(err.Error(), "map[") {
			t.Errorf("--args-file %q: Go types in %q", tc.content, err)
		}
	}
	af, err := readArgsFile(Env{Stdin: strings.NewReader(`{"root": ".", "n": 2}`)}, "-")
	if err != nil {
		t.Fatal(err)
	}
	got, err := buildArgs(sig, af, []string{"n=3"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(got); string(b) != `{"n":3,"root":"."}` {
		t.Errorf("--args-file - = %s", b)
	}
	af, _ = readArgsFile(Env{Stdin: strings.NewReader(`[`)}, "-")
	if _, err := buildArgs(sig, af, nil, false); err == nil || !strings.HasPrefix(err.Error(), "--args-file - (standard input): ") {
		t.Errorf("--args-file - with bad input: %v", err)
	}
	if _, err := readArgsFile(Env{}, dir); err == nil || !strings.Contains(err.Error(), "it is a directory") {
		t.Errorf("--args-file DIR: %v", err)
	}
}

func TestParseInterleaved(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  string
		arg  string
	}{
		{[]string{"file.yaml", "--arg", "a=1"}, "file.yaml", "a=1"},
		{[]string{"--arg", "a=1", "file.yaml"}, "file.yaml", "a=1"},
		{[]string{"x", "--arg=a=1", "y"}, "x y", "a=1"},
		{[]string{"--prefix", "p", "--", "npx", "--arg", "z"}, "npx --arg z", ""},
	} {
		fs := newFlags(Env{Stderr: os.Stderr}, "t", runCommand)
		var argv stringList
		fs.Var(&argv, "arg", "")
		fs.String("prefix", "", "")
		pos, err := parseInterleaved(fs, tc.args)
		if err != nil {
			t.Fatalf("parseInterleaved(%q): %v", tc.args, err)
		}
		if strings.Join(pos, " ") != tc.pos || argv.String() != tc.arg {
			t.Errorf("parseInterleaved(%q) = %q, --arg %q; want %q, %q", tc.args, pos, argv.String(), tc.pos, tc.arg)
		}
	}
}

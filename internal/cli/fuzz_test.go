package cli

import (
	"encoding/json"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillbus/skillbus/pkg/seq"
)

// FuzzArgValue checks --arg parsing: it never panics, a string value is
// kept exactly, and any accepted value is valid JSON.
func FuzzArgValue(f *testing.F) {
	for _, s := range []string{"", ".", "10", "2.5", "true", "null", `{"a":1}`, `["x"]`, "a=b", "\xff", "1e999", "[1,"} {
		f.Add(s)
	}
	types := []seq.Type{"string", "bool", "integer", "number", "object", "array", "array<string>"}
	f.Fuzz(func(t *testing.T, v string) {
		for _, typ := range types {
			raw, err := argValue(typ, v)
			if err != nil {
				continue
			}
			if !json.Valid(raw) {
				t.Fatalf("argValue(%s, %q) = %s; not JSON", typ, v, raw)
			}
			if typ == "string" {
				var s string
				if json.Unmarshal(raw, &s) != nil || utf8.ValidString(v) && s != v {
					t.Fatalf("argValue(string, %q) = %s; want the value kept", v, raw)
				}
			}
		}
	})
}

// FuzzParseInterleaved checks the flags-anywhere parser on any command line
// (arguments separated by NUL): it never panics; every argument is a flag,
// a flag's value, the first "--" or a positional argument, none lost or
// reordered; and the standard library parsing the same line in canonical
// form (flags, "--", positional arguments) agrees on every value.
func FuzzParseInterleaved(f *testing.F) {
	for _, s := range []string{"--name\x00--\x00--\x00x", "", "x", "x\x00--json", "--json\x00x", "--arg\x00a=1\x00f\x00--arg=b=2", "-o\x00yaml\x00--\x00-o\x00json", "-\x00--name", "--arg", "---x", "--json=false\x00x", "x\x00--\x00--", "--o=wide\x00y\x00-arg\x00--"} {
		f.Add(s)
	}
	mk := func() (*flag.FlagSet, *output, *stringList, *string) {
		fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		out := outputFlags(fs, "json", "yaml", "wide")
		var argv stringList
		fs.Var(&argv, "arg", "")
		name := fs.String("name", "", "")
		return fs, out, &argv, name
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		fs, out, argv, name := mk()
		flags, pos := splitArgs(fs, args)
		// Only the terminator is dropped.
		if term := len(args) - len(flags) - len(pos); term < 0 || term > 1 || term == 1 && !slices.Contains(args, "--") {
			t.Fatalf("splitArgs(%q) = %q, %q: arguments lost or added", args, flags, pos)
		}
		got, err := parseInterleaved(fs, args)
		if err != nil {
			return
		}
		// Positional arguments keep their order.
		i := 0
		for _, a := range args {
			if i < len(got) && a == got[i] {
				i++
			}
		}
		if i != len(got) {
			t.Fatalf("parseInterleaved(%q) = %q: not in the order given", args, got)
		}
		fs2, out2, argv2, name2 := mk()
		canon := append(append(slices.Clone(flags), "--"), got...)
		if err := fs2.Parse(canon); err != nil {
			t.Fatalf("canonical %q: %v", canon, err)
		}
		if !slices.Equal(fs2.Args(), got) || out.format != out2.format || argv.String() != argv2.String() || *name != *name2 {
			t.Fatalf("parseInterleaved(%q) = %q o=%q arg=%q name=%q; canonical %q gives %q o=%q arg=%q name=%q", args, got, out.format, argv, *name, canon, fs2.Args(), out2.format, argv2, *name2)
		}
	})
}

package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/events"
)

// splitArgs separates args into the flag tokens (each flag with its value
// when the value is the next argument) and the positional arguments, in
// order. A flag takes the next argument as its value unless it is written
// --flag=value or is a boolean flag of fs; an argument that starts with "-"
// is a flag (a lone "-" is positional); "--" ends the flags. Flags fs does
// not define are kept for fs.Parse to report.
func splitArgs(fs *flag.FlagSet, args []string) (flags, pos []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(pos, args[i+1:]...)
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		a = expandShort(fs.Lookup, a)
		flags = append(flags, a)
		if strings.Contains(a, "=") {
			continue
		}
		f := fs.Lookup(flagName(a))
		if f == nil || isBoolFlag(f) {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return flags, pos
}

// expandShort rewrites a one-letter flag written with its value attached
// (-ojson, as kubectl and getopt accept it) as -o=json. A token that names
// a flag of its own, or whose first letter is no flag taking a value, is
// left as it is (for fs.Parse to report).
func expandShort(lookup func(string) *flag.Flag, a string) string {
	if len(a) < 3 || a[0] != '-' || a[1] == '-' || strings.Contains(a, "=") || lookup(a[1:]) != nil {
		return a
	}
	if f := lookup(a[1:2]); f != nil && !isBoolFlag(f) {
		return a[:2] + "=" + a[2:]
	}
	return a
}

// flagName returns the name of a flag argument: "--name=v" → "name".
func flagName(a string) string {
	a = strings.TrimPrefix(a, "-")
	a = strings.TrimPrefix(a, "-")
	name, _, _ := strings.Cut(a, "=")
	return name
}

// isBoolFlag reports whether f is set without a value (--json).
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// An inspector receives a command's flag set (with args parsed) and its
// positional arguments, instead of the command running on.
type inspector func(fs *flag.FlagSet, pos []string, err error)

// inspectors maps each flag set made by newFlags for an inspected command
// to its inspector, until parseInterleaved hands the set over.
var inspectors sync.Map // *flag.FlagSet → inspector

// errInspected is what parseInterleaved returns to an inspected command:
// the command returns (flagExit: exit 2) without doing anything.
var errInspected = errors.New("inspected: the command does not run")

func takeInspector(fs *flag.FlagSet) inspector {
	if h, ok := inspectors.LoadAndDelete(fs); ok {
		return h.(inspector)
	}
	return nil
}

// inspection is what inspect learned of a command: its flags as parsed from
// the arguments given, its positional arguments and the parse error.
type inspection struct {
	fs  *flag.FlagSet
	pos []string
	err error
}

// inspect runs c with args only as far as its flag parsing (newFlags and
// parseInterleaved, which every command uses) and returns its flags and
// positional arguments; ok is false when the command did not reach
// parseInterleaved. The command runs with a cancelled context, no input and
// discarded output, and its connection flags bound to conn (nil: a
// settings value of its own), so nothing it could do before parsing goes
// far.
func inspect(c command, args []string, conn *natsconn.Settings) (in inspection, ok bool) {
	if conn == nil {
		conn = new(natsconn.Settings)
	}
	env := Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, conn: conn}
	env.inspect = func(fs *flag.FlagSet, pos []string, err error) {
		in, ok = inspection{fs: fs, pos: pos, err: err}, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.run(ctx, env, args)
	return in, ok
}

// findSub returns the index in args of c's subcommand (the first
// positional argument before "--", when it names one of c.subs) and the
// subcommand; -1 when there is none. Flags may come before the subcommand
// (`runs --status failed ls`): a flag's value is skipped when the flag,
// as the command or any of its subcommands defines it, takes one.
func findSub(c command, args []string) (int, command) {
	if c.subs == nil {
		return -1, command{}
	}
	subs := c.subs()
	sets := make([]*flag.FlagSet, 0, len(subs)+1)
	for _, sc := range append([]command{c}, mapValues(subs)...) {
		if in, ok := inspect(sc, nil, nil); ok {
			sets = append(sets, in.fs)
		}
	}
	lookup := func(name string) *flag.Flag {
		for _, fs := range sets {
			if f := fs.Lookup(name); f != nil {
				return f
			}
		}
		return nil
	}
	takesValue := func(name string) bool {
		if f := lookup(name); f != nil {
			return !isBoolFlag(f)
		}
		return true // unknown: the command reports it
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 2 && a[0] == '-' {
			a = expandShort(lookup, a)
		}
		switch {
		case a == "--":
			return -1, command{}
		case len(a) > 1 && a[0] == '-':
			if !strings.Contains(a, "=") && takesValue(flagName(a)) {
				i++
			}
		default:
			if sc, ok := subs[a]; ok {
				return i, sc
			}
			return -1, command{}
		}
	}
	return -1, command{}
}

func mapValues(m map[string]command) []command {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]command, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// choiceValue is a string flag that takes one of a fixed set of values;
// anything else is a usage error listing them, with the one a near miss
// most likely meant (`--status faild`: did you mean "failed"?), and
// `skillbus completion` offers them.
type choiceValue struct {
	value   string
	choices []string
}

// choiceFlag defines a flag on fs that takes one of choices (def, the
// default, may be "" for "not given").
func choiceFlag(fs *flag.FlagSet, name, def, usage string, choices ...string) *string {
	v := &choiceValue{value: def, choices: choices}
	fs.Var(v, name, usage)
	return &v.value
}

func (v *choiceValue) String() string {
	if v == nil {
		return ""
	}
	return v.value
}

func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		if c := suggest.Closest(s, v.choices); c != "" {
			return fmt.Errorf("want %s; did you mean %q?", orList(v.choices), c)
		}
		return fmt.Errorf("want %s", orList(v.choices))
	}
	v.value = s
	return nil
}

// Choices returns the values the flag takes (for completion).
func (v *choiceValue) Choices() []string { return v.choices }

// orList writes a, b or c.
func orList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// given reports whether the flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// givenAny returns the first of names set on the command line, as "--name",
// or "".
func givenAny(fs *flag.FlagSet, names ...string) string {
	for _, n := range names {
		if given(fs, n) {
			return "--" + n
		}
	}
	return ""
}

// longText says which free-text flag — a reason, a note, a by — is longer
// than events.MaxReasonLength bytes, the bound pkg/events puts on those
// fields of every request (seq.cancel, seq.signal, seq.schedules.*), as a
// usage error's message (`--by is 2000 bytes long; the limit is 1024 bytes
// (...)`); "" when none is. Each pair is a flag's name and its value.
func longText(flags ...[2]string) string {
	for _, f := range flags {
		if len(f[1]) > events.MaxReasonLength {
			return fmt.Sprintf("--%s is %d bytes long; the limit is %d bytes (a reason, a note or a name of who asks): shorten it", f[0], len(f[1]), events.MaxReasonLength)
		}
	}
	return ""
}

package servicecmd

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/suggest"
)

// FlagError turns an error of fs.Parse into the sentence every skillbus
// binary prints for a bad command line (the skillbus command and the
// services alike): the flag written as it is typed (--name, or -o for a
// one-letter flag), the value given, and what the flag takes instead —
// "--since "2d": not a duration; use a Go duration such as 48h (units
// ns, us, ms, s, m, h)", "unknown flag --nope; did you mean --nats?". The
// flag package's own messages ("invalid value "2d" for flag -since:
// parse error") say neither. Errors fs.Parse does not produce are
// returned as they are.
func FlagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		s := "unknown flag " + dashed(m[1])
		var names []string
		fs.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
		if c := suggest.Closest(m[1], names); c != "" {
			s += "; did you mean " + dashed(c) + "?"
		}
		return s
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		s := dashed(m[1]) + " needs a value"
		if fl := fs.Lookup(m[1]); fl != nil {
			if h := valueHint(fl, nil); h != "" {
				s += ": " + h
			}
		}
		return s
	}
	for _, re := range []*regexp.Regexp{reBadValue, reBadBool} {
		m := re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		value, _ := strconv.Unquote(m[1])
		name, cause := m[2], m[3]
		fl := fs.Lookup(name)
		if fl == nil {
			return fmt.Sprintf("%s %q: %s", dashed(name), value, cause)
		}
		return fmt.Sprintf("%s %q: %s", dashed(name), value, valueHint(fl, errors.New(cause)))
	}
	if m := reBadSyntax.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%q is not a flag: write --name or --name=value", m[1])
	}
	return msg
}

// The messages of the flag package's FlagSet.Parse (Go 1.26, flag.go).
var (
	reUnknown   = regexp.MustCompile(`^flag provided but not defined: -(.*)$`)
	reNeedsArg  = regexp.MustCompile(`^flag needs an argument: -(.*)$`)
	reBadValue  = regexp.MustCompile(`^invalid value ("(?:[^"\\]|\\.)*") for flag -([^:]*): (.*)$`)
	reBadBool   = regexp.MustCompile(`^invalid boolean value ("(?:[^"\\]|\\.)*") for -([^:]*): (.*)$`)
	reBadSyntax = regexp.MustCompile(`^bad flag syntax: (.*)$`)
)

// dashed writes a flag name as it is typed: -o for a one-letter flag,
// --name otherwise.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// FlagName is dashed for callers that name a flag in a message.
func FlagName(name string) string { return dashed(name) }

// valueHint says in words what value fl takes, from the type of its value
// (the flag package says only "parse error" or "value out of range"). A
// flag.Value of its own (a choice of words, say) has already said so in
// cause, which is returned as it is; cause may be nil for "no value
// given".
func valueHint(fl *flag.Flag, cause error) string {
	if g, ok := fl.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool:
			return "not a boolean; want true or false"
		case int, int64:
			if cause != nil && strings.Contains(cause.Error(), "out of range") {
				return "out of range; want a whole number such as 10"
			}
			return "not a whole number; want one such as 10"
		case uint, uint64:
			return "not a whole number ≥ 0; want one such as 10"
		case float64:
			return "not a number; want one such as 2.5"
		case time.Duration:
			return "not a duration; use a Go duration such as 48h, 90m or 30s (units ns, us, ms, s, m, h; no days)"
		case string:
			if cause == nil {
				return ""
			}
		}
	}
	if cause == nil {
		return ""
	}
	if c, ok := fl.Value.(interface{ Choices() []string }); ok && cause.Error() == "parse error" {
		ch := c.Choices()
		sort.Strings(ch)
		return "want one of " + strings.Join(ch, ", ")
	}
	return cause.Error()
}

// ConfigError returns the text of a configuration error (a Config's
// Validate, events.Options) for the person who ran the command: without
// the Go sentinel prefixes (errtext.Error), each Config field named by the
// flag that sets it with the value as given — `--ack-wait "-5s": want at
// least 1s` rather than `Provision: events: invalid provisioning option:
// AckWait = -5s`, and `SKILLBUS_ACK_WAIT="-5s" (the environment form of
// --ack-wait)` when its variable set it. fields maps a Config field
// ("AckWait") to its flag ("ack-wait"); a field mapped to "" is a Go
// grouping ("Provision") dropped with its ": ". Call it after Parse.
func (f *Flags) ConfigError(err error, fields map[string]string) string {
	return ConfigText(err, fields, func(flag string) string { return f.fromEnv[flag] })
}

// ConfigText is ConfigError for any command: envOf, when not nil, returns
// the variable that set a flag ("" when none did).
func ConfigText(err error, fields map[string]string, envOf func(flag string) string) string {
	msg := errtext.Error(err)
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	// Longer names first: RunSlotsMaxBytes before SlotMaxBytes.
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, field := range names {
		flagName := fields[field]
		if flagName == "" {
			msg = regexp.MustCompile(`\b`+regexp.QuoteMeta(field)+`: `).ReplaceAllString(msg, "")
			continue
		}
		// Field = VALUE, Field VALUE (a quoted string or a number or
		// duration), then an optional "; want" or ":"; or the field alone.
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(field) + `(?:(?: = | )("(?:[^"\\]|\\.)*"|[-+.0-9][^\s;:,]*)(; want|:)?|\b)`)
		msg = re.ReplaceAllStringFunc(msg, func(m string) string {
			sub := re.FindStringSubmatch(m)
			if sub[1] == "" {
				return dashed(flagName)
			}
			v := sub[1]
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			s := fmt.Sprintf("%s %q", dashed(flagName), v)
			if envOf != nil {
				if env := envOf(flagName); env != "" {
					s = fmt.Sprintf("%s=%q (the environment form of %s)", env, v, dashed(flagName))
				}
			}
			switch sub[2] {
			case "; want":
				return s + ": want"
			case ":":
				return s + ":"
			}
			return s
		})
	}
	return msg
}

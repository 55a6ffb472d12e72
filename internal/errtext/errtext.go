// Package errtext writes errors for the person who reads them — on the
// command line's stderr, in the web console, in a service's error reply —
// rather than for the Go program that tests them.
//
// skillbus's Go APIs return sentinel errors to test with errors.Is, and by
// Go convention their text starts with the package ("client: conflict",
// "registry: invalid configuration") and wrapping adds more of the same
// ("client: conflict: queue the run: seqworker: run id already used: …").
// That text says where in the code the error passed, which a user of the
// command cannot act on; what they need is what is wrong, where, and how to
// fix it, which the innermost message already says. Error keeps that and
// drops the Go scaffolding.
package errtext

import (
	"regexp"
	"strings"
)

// packages are the Go package names of skillbus whose "name: " starts the
// text of its sentinel errors. A message segment that is exactly one of
// them, followed by ": ", is that prefix, wherever it arrived from (an
// error chain, or the text of a service's reply).
var packages = map[string]bool{
	"auth": true, "bench": true, "builtin": true, "client": true, "console": true,
	"devstack": true, "events": true, "health": true, "kvsession": true, "mcpbridge": true,
	"mcpserver": true, "natsconn": true, "natsserver": true, "registry": true, "runargs": true,
	"sections": true, "seq": true, "seqworker": true, "servicecmd": true, "skill": true,
	"skillface": true, "skillfacesvc": true, "telemetry": true, "tool": true, "toolcall": true,
}

// prefixes are the package names Text drops from text: those that are
// never also a word of a message's own (a field, "tool 2", "skill").
var prefixes = map[string]bool{
	"builtin": true, "client": true, "devstack": true, "events": true, "kvsession": true,
	"mcpbridge": true, "mcpserver": true, "natsconn": true, "natsserver": true, "registry": true,
	"runargs": true, "seqworker": true, "servicecmd": true, "skillfacesvc": true, "telemetry": true,
	"toolcall": true,
}

// sentinel matches the text of a package sentinel: "pkg: what it means".
var sentinel = regexp.MustCompile(`^([a-z][a-z0-9]*): [^:]+$`)

// Error returns err's text for a person: the text of every skillbus
// sentinel in err's chain ("client: conflict", "events: invalid subject
// token") is dropped where more specific text follows it, and so is every
// "pkg: " prefix of a skillbus package left in the text; a word repeated
// as a prefix ("cancelled: cancelled: x") is said once. The result is
// never empty for a non-nil err: a sentinel alone keeps its meaning
// ("conflict").
func Error(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for _, s := range sentinels(err) {
		msg = strings.ReplaceAll(msg, s+": ", "")
	}
	return Text(msg)
}

// Text cleans a message that is already text (a service's error reply, a
// run's error as stored): each "pkg: " prefix of a skillbus package at the
// start of a segment (after ": ", "; " or "(") is dropped, and a segment
// that repeats the one before it is said once. A message that would become
// empty keeps its last segment.
func Text(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:0:0]
	pending := "" // what came before a dropped prefix in its segment ("x; ")
	for i, p := range parts {
		if i < len(parts)-1 && prefixes[lastWord(p)] && isPrefixAt(p) {
			pending += strings.TrimSuffix(p, lastWord(p))
			continue
		}
		p = pending + p
		pending = ""
		if len(out) > 0 && strings.EqualFold(out[len(out)-1], p) {
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return msg
	}
	return strings.Join(out, ": ")
}

// lastWord returns the last word of a segment ("x; seqworker" →
// "seqworker").
func lastWord(p string) string {
	i := strings.LastIndexAny(p, " (")
	return p[i+1:]
}

// isPrefixAt reports whether the package name that ends p starts a
// segment: p is the name alone, or the name comes after "; " or "(".
func isPrefixAt(p string) bool {
	w := lastWord(p)
	rest := strings.TrimSuffix(p, w)
	return rest == "" || strings.HasSuffix(rest, "; ") || strings.HasSuffix(rest, "(")
}

// sentinels returns the texts of the package sentinels in err's chain.
func sentinels(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			if w := u.Unwrap(); w != nil {
				walk(w)
				return
			}
		case interface{ Unwrap() []error }:
			for _, w := range u.Unwrap() {
				walk(w)
			}
			return
		}
		if m := sentinel.FindStringSubmatch(e.Error()); m != nil && packages[m[1]] {
			out = append(out, e.Error())
		}
	}
	walk(err)
	return out
}

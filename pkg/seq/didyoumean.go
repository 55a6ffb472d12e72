package seq

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/skillbus/skillbus/internal/suggest"
)

// didYouMean returns ` did you mean "S"?` (with a leading space) for the
// candidate closest to got (internal/suggest: case, `_`/`-` and up to two
// edits), or "" when none is close.
func didYouMean(got string, candidates []string) string {
	if s := suggest.Closest(got, candidates); s != "" && s != got {
		return fmt.Sprintf(" did you mean %q?", s)
	}
	return ""
}

// typeAliases are type names of other languages that people write for a
// sequence type (docs/sequences.md, "Types").
var typeAliases = map[string]Type{
	"int":     "integer",
	"int64":   "integer",
	"long":    "integer",
	"float":   "number",
	"float64": "number",
	"double":  "number",
	"decimal": "number",
	"boolean": "bool",
	"str":     "string",
	"text":    "string",
	"list":    "array",
	"map":     "object",
	"dict":    "object",
}

// suggestType returns the legal type closest to t (a near miss such as
// "strin" or "Object", another language's name such as "int", the same
// inside array<…>), or "" when none is close.
func suggestType(t string) Type {
	if inner, ok := strings.CutPrefix(t, "array<"); ok {
		inner, ok = strings.CutSuffix(inner, ">")
		if !ok || inner == "" || strings.Contains(inner, "<") {
			return ""
		}
		if s := suggestType(inner); s != "" && !s.IsArray() {
			return "array<" + s + ">"
		}
		return ""
	}
	if s, ok := typeAliases[strings.ToLower(t)]; ok {
		return s
	}
	return Type(suggest.Closest(t, []string{"string", "bool", "integer", "number", "object", "array"}))
}

// zoneNames is the list of IANA time zone names (one per line) as Go's own
// copy of the tz database holds them (GOROOT/lib/time/zoneinfo.zip, which
// time/tzdata embeds). It serves suggestions only: whether a zone exists is
// decided by time.LoadLocation, and a suggestion is offered only when it
// loads.
//
//go:embed zones.txt
var zoneNames string

var zoneList = sync.OnceValue(func() []string { return strings.Fields(zoneNames) })

// suggestZone returns the IANA zone name that tz means: the one that
// equals it ignoring case ("europe/berlin" → "Europe/Berlin"), else the
// closest one (internal/suggest), provided it loads; "" when none.
func suggestZone(tz string) string {
	if len(tz) > 64 {
		return ""
	}
	var s string
	for _, z := range zoneList() {
		if strings.EqualFold(z, tz) {
			s = z
			break
		}
	}
	if s == "" {
		s = suggest.Closest(tz, zoneList())
	}
	if s == "" || s == tz {
		return ""
	}
	if _, err := time.LoadLocation(s); err != nil {
		return ""
	}
	return s
}

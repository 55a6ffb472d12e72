package seq

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
)

// refsIn returns the $args references in every string of v (map keys are
// not searched), in a stable order, and reports malformed ones via bad.
func refsIn(v any, found func(key string), bad func(ref string)) {
	switch x := v.(type) {
	case string:
		for _, m := range refRE.FindAllStringSubmatch(x, -1) {
			if keyRE.MatchString(m[1]) {
				found(m[1])
			} else {
				bad(m[0])
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			refsIn(x[k], found, bad)
		}
	case []any:
		for _, e := range x {
			refsIn(e, found, bad)
		}
	}
}

// check enforces the dataflow rules of docs/sequences.md, compiles `when`
// expressions and derives the signature.
func (d *decoder) check(s *Sequence) {
	provided := map[string]int{} // out slot → 1-based group that declares it
	provType := map[string]Type{}
	argFirst := map[string]int{} // run argument → 1-based group that first reads it
	s.Signature = Signature{}
	for gi := range s.Groups {
		g := &s.Groups[gi]
		a := at{group: gi + 1, gname: g.Name}
		// in: provided by an earlier out (same type) or a run argument.
		for _, k := range sortedKeys(g.In) {
			t := g.In[k]
			if pg, ok := provided[k]; ok {
				if provType[k] != t {
					d.errf(ErrDataflow, a, "in."+k, nil, "declares %q as %s, but group %d %q writes it as %s; use the same type in both places", k, t, pg, s.Groups[pg-1].Name, provType[k])
				}
				continue
			}
			if prev, ok := s.Signature[k]; ok {
				if prev != t {
					fg := argFirst[k]
					d.errf(ErrDataflow, a, "in."+k, nil, "declares the run argument %q as %s, but group %d %q declares it as %s; a run argument has one type: use the same type in both groups", k, t, fg, s.Groups[fg-1].Name, prev)
				}
				continue
			}
			s.Signature[k] = t
			argFirst[k] = gi + 1
		}
		// out: unique across the sequence, no clash with run arguments.
		for _, k := range sortedKeys(g.Out) {
			if pg, ok := provided[k]; ok {
				d.errf(ErrDataflow, a, "out."+k, nil, "the out slot %q is already declared by group %d %q; out slot names are unique across the sequence, rename one", k, pg, s.Groups[pg-1].Name)
				continue
			}
			if fg, ok := argFirst[k]; ok {
				d.errf(ErrDataflow, a, "out."+k, nil, "the out slot %q has the name of a run argument that group %d %q reads; a later $args.%s would be ambiguous, rename the slot", k, fg, s.Groups[fg-1].Name, k)
				continue
			}
			provided[k] = gi + 1
			provType[k] = g.Out[k]
		}
		// calls: references, as, fallback.
		writers := map[string][]int{}
		for ci := range g.Tools {
			c := &g.Tools[ci]
			ca := at{group: gi + 1, gname: g.Name, tool: ci + 1, tname: c.Tool}
			// Each top-level argument is searched on its own, so a problem
			// is reported at that argument's line.
			for _, ak := range sortedAnyKeys(c.Args) {
				line := d.fieldLines[fieldAt{gi + 1, ci + 1, "args." + ak}]
				refsIn(c.Args[ak], func(k string) {
					if _, ok := g.In[k]; ok {
						return
					}
					if pg, ok := provided[k]; ok && pg == gi+1 {
						d.errfLine(ErrDataflow, ca, "args", line, "reads $args.%s, but %q is an out slot of this same group (written by %s); the calls of a group run at once and its slots are written only when they finish, so no call can read a slot of its own group: move this call to a later group and declare \"%s\": %s in that group's `in`", k, k, writerOf(g, k), k, provType[k])
						return
					}
					d.errfLine(ErrDataflow, ca, "args", line, "reads $args.%s, but %q is not declared in the group's `in`; add \"%s\": TYPE to `in` (%s)", k, k, k, scopeHint(gi, provided, provType))
				}, func(ref string) {
					d.errfLine(ErrDataflow, ca, "args", line, "%q is not a valid reference; write $args.KEY with KEY %s", ref, keyRule)
				})
			}
			d.checkForEach(s, g, gi, ci, ca, provided, provType)
			if c.As != "" {
				if t, ok := g.Out[c.As]; !ok {
					d.errf(ErrDataflow, ca, "as", nil, "writes the slot %q, which the group's `out` does not declare; add \"%s\": TYPE to `out`, or fix the name (declared: %s)", c.As, c.As, keyList(g.Out))
				} else {
					writers[c.As] = append(writers[c.As], ci+1)
					if c.ForEach != "" && !t.IsArray() {
						d.errf(ErrDataflow, ca, "as", nil, "writes the slot %q, declared as %s, but a for_each call writes the list of its items' results; declare \"%s\": array<%s> in `out` (each item's result of type %s)", c.As, t, c.As, t, t)
					}
					if len(writers[c.As]) == 2 && (c.ForEach != "" || g.Tools[writers[c.As][0]-1].ForEach != "") {
						d.errf(ErrDataflow, ca, "as", nil, "writes the slot %q, which tool %d also writes; a for_each call's slot holds the results of its items and has no other writer: give each call its own slot", c.As, writers[c.As][0])
					} else if len(writers[c.As]) == 2 && !t.IsArray() {
						d.errf(ErrDataflow, ca, "as", nil, "writes the slot %q, which tool %d also writes; a %s slot holds one value and parallel writes would race: give each call its own slot, or declare the slot as array<%s> to collect both in declaration order", c.As, writers[c.As][0], t, t)
					}
				}
			}
			if c.Fallback != "" && g.Missing != MissingDegrade {
				d.errf(ErrInvalidValue, ca, "fallback", nil, "fallback is only used under missing: degrade (this group's missing is %q); set missing: degrade or remove the fallback", g.Missing)
			}
			if g.Missing == MissingDegrade && c.As != "" && c.Fallback == "" {
				d.errf(ErrMissingField, ca, "fallback", nil, "under missing: degrade a call that writes a slot (as: %q) needs a fallback: the JSON text to write when the tool is missing, for example \"null\" or \"[]\"", c.As)
			}
		}
		if g.WaitFor != nil {
			d.checkWait(g, gi, provided, provType) // waitfor.go: its signal writes its out
		}
		for _, k := range sortedKeys(g.Out) {
			if len(writers[k]) == 0 && g.WaitFor == nil {
				d.errf(ErrDataflow, a, "out."+k, nil, "the out slot %q is declared but no tool call writes it; add \"as\": %q to a call or remove the slot", k, k)
			}
		}
		// fallback values must fit their slot (single writer: the slot type;
		// several writers of an array slot: its element type).
		for ci, c := range g.Tools {
			t, ok := g.Out[c.As]
			if c.Fallback == "" || !ok {
				continue
			}
			want := t
			if len(writers[c.As]) > 1 || c.ForEach != "" {
				want = t.elem() // one item of the slot
			}
			if want != "" {
				if ok, got := checkType(want, json.RawMessage(c.Fallback)); !ok {
					d.errf(ErrInvalidValue, at{group: gi + 1, gname: g.Name, tool: ci + 1, tname: c.Tool}, "fallback", nil, "the fallback %s is %s, but the slot %q receives %s; write a fallback of that type (or \"null\")", clip(c.Fallback, 60), got, c.As, want)
				}
			}
		}
		if g.When != "" {
			prog, msg, cause := compileWhen(g.When, g.In)
			if msg != "" {
				d.errf(ErrExpression, a, "when", nil, "%s", msg)
				d.list[len(d.list)-1].Err = cause
			} else {
				g.when = prog
			}
		}
	}
	d.checkTriggered(s)
}

// BootArgs are the run arguments a boot run receives (docs/sequences.md): the
// booting agent's id and its boot id, both strings. A `boot: true`
// sequence may read them as run arguments (declare them in `in` with type
// string); it may have no other run argument, since nobody gives one.
var BootArgs = Signature{"agent": "string", "boot_id": "string"}

// checkTriggered enforces that sequences started by the system — at agent
// boot or on a schedule — need no argument that nobody gives: a scheduled
// run gets none, a boot run only BootArgs.
func (d *decoder) checkTriggered(s *Sequence) {
	if !s.Boot && s.Schedule == "" {
		return
	}
	for _, k := range s.Signature.Keys() {
		t := s.Signature[k]
		g := at{}
		// name the group that reads the argument first
		for gi := range s.Groups {
			if _, ok := s.Groups[gi].In[k]; ok {
				g = at{group: gi + 1, gname: s.Groups[gi].Name}
				break
			}
		}
		switch {
		case s.Schedule != "":
			d.errf(ErrDataflow, g, "in."+k, nil, "reads the run argument %q, but this sequence runs on a schedule and a run of a single-string schedule gets no arguments; "+
				"have an earlier group write %q as an out slot, or write the schedule as a list of entries that give it: schedule: [{every: 1h, args: {%s: ...}}]", k, k, k)
		case BootArgs[k] == "":
			d.errf(ErrDataflow, g, "in."+k, nil, "reads the run argument %q, but a boot run (boot: true) gets only agent and boot_id (strings); "+
				"have an earlier group write %q as an out slot, or read $args.agent / $args.boot_id", k, k)
		case t != BootArgs[k]:
			d.errf(ErrDataflow, g, "in."+k, nil, "declares the boot argument %q as %s; a boot run gives it as a string: declare \"%s\": string", k, t, k)
		}
	}
}

// scopeHint describes what group gi (0-based) could declare in `in`: the
// out slots of the groups before it (provided maps each slot to the 1-based
// group that declares it, this group's own included, which are left out).
func scopeHint(gi int, provided map[string]int, provType map[string]Type) string {
	var avail []string
	for k, t := range provType {
		if provided[k] <= gi {
			avail = append(avail, k+": "+string(t))
		}
	}
	sort.Strings(avail)
	switch {
	case len(avail) > 0:
		return "earlier groups write " + strings.Join(avail, ", ") + "; any other key becomes a run argument"
	case gi == 0:
		return "this is the first group, so every key in its `in` is a run argument"
	}
	return "no earlier group writes an out slot, so every key in its `in` is a run argument"
}

// writerOf names the calls of g that write slot k ("tool 2 \"fs.read\"").
func writerOf(g *Group, k string) string {
	var ws []string
	for ci, c := range g.Tools {
		if c.As == k {
			ws = append(ws, fmt.Sprintf("tool %d %q", ci+1, c.Tool))
		}
	}
	if len(ws) == 0 {
		return "no call yet"
	}
	return strings.Join(ws, " and ")
}

// sortedAnyKeys returns m's keys in order.
func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// signatureField reads a given `signature` (the canonical form carries
// it) with the other field problems, in the first round: an object of
// key → type, each a legal type (the words of `in`/`out`). It returns the
// signature and whether it could be read whole.
func (d *decoder) signatureField(n *node) (Signature, bool) {
	if n.kind != kindObject {
		d.errf(ErrInvalidValue, at{}, "signature", n, "got %s; signature is derived from the groups' `in` and `out` — remove it, or give the object of run arguments {key: type}", n.describe())
		return nil, false
	}
	before := len(d.list)
	given := Signature{}
	maps.Copy(given, d.slots(n, at{}, "signature"))
	return given, len(d.list) == before
}

// checkSignature reports a given signature that differs from the one
// derived from the groups. It runs with the dataflow checks, in the same
// round as their problems, so that one `skillbus validate` says both.
func (d *decoder) checkSignature(s *Sequence, given Signature, n *node) {
	if given.String() != s.Signature.String() {
		d.errf(ErrInvalidValue, at{}, "signature", n, "the given signature %s differs from the one derived from the groups, %s; the signature is derived — remove it, or fix the groups' `in`/`out` so that they give the arguments you meant", given, s.Signature)
	}
}

func sortedKeys(m map[string]Type) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func keyList(m map[string]Type) string {
	if len(m) == 0 {
		return "none"
	}
	return strings.Join(sortedKeys(m), ", ")
}

// checkType reports whether raw (a JSON value) is of type t; null passes
// every type (docs/sequences.md). got describes what raw is, for messages.
func checkType(t Type, raw json.RawMessage) (ok bool, got string) {
	got = JSONKind(raw)
	if got == "null" {
		return true, got
	}
	switch t {
	case "string", "bool", "object":
		return got == string(t), got
	case "number":
		return got == "integer" || got == "number", got
	case "integer":
		return got == "integer", got
	}
	if !t.IsArray() || got != "array" {
		return false, got
	}
	el := t.elem()
	if el == "" {
		return true, got
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return false, got
	}
	for i, it := range items {
		if ok, g := checkType(el, it); !ok {
			return false, fmt.Sprintf("an array whose item %d is %s", i+1, g)
		}
	}
	return true, "array<" + string(el) + ">"
}

// JSONKind names the JSON type of raw in the sequence language's terms
// (docs/sequences.md, "Types"): "null", "string", "bool", "integer" (a
// whole number from -2^63 to 2^63-1, however written: 5, 5.0, 1e3,
// 9.007199254740993e15), "number" (any other number), "object", "array"; "nothing" for empty input and
// "invalid JSON" for a number that does not parse. It is what error
// messages say a value "is", and what run arguments are checked against.
func JSONKind(raw json.RawMessage) string {
	b := trimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case 'n':
		return "null"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	if plainInt(b) {
		return "integer" // the common case, without a parse
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return "invalid JSON"
	}
	if i, ok := exactInt(string(n)); ok && i.IsInt64() {
		return "integer"
	}
	return "number"
}

// plainInt reports whether b is a JSON integer written with at most 18
// digits and no fraction or exponent (-?(0|[1-9][0-9]*)): always within
// int64, so JSONKind names it "integer" without parsing it.
func plainInt(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

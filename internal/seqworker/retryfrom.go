package seqworker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// retryStart resolves seq.retry's from (docs/runs.md, "Retry from a
// group") against the run's groups (names, in order): a group's name, or
// its 1-based number. first is the 0-based index of the run's first group
// that did not finish (len(names) when every group did); the retry may
// start at any group up to it. It returns the 0-based group to start at,
// or the error text and its code: "400" for a from that names no group of
// the run (with the closest name), "409" for a group the run never
// reached; both list the groups allowed.
func retryStart(from string, names []string, first int) (int, string, string) {
	last := min(first, len(names)-1) // the latest group a retry may start at
	allowed := func() string {
		if last < 0 {
			return "the run records no groups"
		}
		var b strings.Builder
		for i := 0; i <= last; i++ {
			switch {
			case i > 0 && i == last:
				b.WriteString(" or ")
			case i > 0:
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d %q", i+1, names[i])
		}
		if last == 0 {
			return "it may be retried from group " + b.String() + " only"
		}
		return "it may be retried from group " + b.String()
	}
	gi := -1
	if n, err := strconv.Atoi(from); err == nil || strings.TrimLeft(from, "+-0123456789") == "" && from != "" {
		// Group names start with a letter, so a number is a number.
		switch {
		case err != nil || n < 1:
			return 0, fmt.Sprintf("from %q: groups are numbered from 1 as runs show prints them; %s", from, allowed()), "400"
		case n > len(names):
			return 0, fmt.Sprintf("from %d: the run has %d groups; %s", n, len(names), allowed()), "400"
		}
		gi = n - 1
	} else {
		name := seq.NormalizeName(from)
		for i, g := range names {
			if g == name {
				gi = i
				break
			}
		}
		if gi < 0 {
			hint := ""
			if s := suggest.Closest(name, names); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", s)
			}
			return 0, fmt.Sprintf("from %q: the run has no such group%s; give a group's name or its number as runs show prints it; %s", from, hint, allowed()), "400"
		}
	}
	if gi > last {
		return 0, fmt.Sprintf("from %d %q: the run never reached this group — it did not finish group %d %q — so there is nothing of it to run again; a retry starts at or before the first group that did not finish: %s",
			gi+1, names[gi], first+1, names[first], allowed()), "409"
	}
	return gi, "", ""
}

// retryGroupNames returns the names of orig's groups in order: those of
// its result (one entry per group), or, for a run that ended before its
// first group recorded one, those of the definition it ran (nil when
// that cannot be read either).
func (w *Worker) retryGroupNames(ctx context.Context, orig *events.RunState, res *seq.Result) []string {
	names := make([]string, 0, len(res.Groups))
	for _, g := range res.Groups {
		names = append(names, g.Name)
	}
	if len(names) > 0 {
		return names
	}
	if s := w.ranSequence(ctx, orig); s != nil {
		for _, g := range s.Groups {
			names = append(names, g.Name)
		}
	}
	return names
}

// ranSequence decodes the definition orig ran — its inline one, or the
// copy its Definition names — or returns nil when it cannot be read
// (a run stored by an older worker, a copy expired).
func (w *Worker) ranSequence(ctx context.Context, orig *events.RunState) *seq.Sequence {
	raw := []byte(orig.Inline)
	if len(raw) == 0 {
		if orig.Definition == nil {
			return nil
		}
		b, err := w.readDefinition(ctx, orig.Sequence, *orig.Definition)
		if err != nil {
			return nil
		}
		raw = b
	}
	s, err := seq.Decode(raw)
	if err != nil {
		return nil
	}
	return s
}

// laterSlots returns the slots that orig's groups from the 0-based group
// from on write (their calls' `as`, a wait's values and, with byDef,
// every `out` of the definition when it can be read: a skipped wait
// group's nulls): a retry from that group must not see them, since it
// runs those groups again (docs/runs.md, "Retry from a group").
func (w *Worker) laterSlots(ctx context.Context, orig *events.RunState, res *seq.Result, from int, byDef bool) map[string]bool {
	drop := map[string]bool{}
	for i := from; i < len(res.Groups); i++ {
		g := res.Groups[i]
		for _, c := range g.Calls {
			if c.As != "" {
				drop[c.As] = true
			}
		}
		if g.Wait != nil {
			for k := range g.Wait.Out {
				drop[k] = true
			}
		}
	}
	if !byDef {
		return drop
	}
	if s := w.ranSequence(ctx, orig); s != nil {
		for i := from; i < len(s.Groups); i++ {
			for k := range s.Groups[i].Out {
				drop[k] = true
			}
		}
	}
	return drop
}

// reusedGroups counts the leading groups of a retry's stored result that
// it took over from the run it retries (their ReusedFrom set): where the
// retry started. -1 when the result does not decode.
func reusedGroups(result json.RawMessage) int {
	if len(result) == 0 {
		return 0
	}
	var r seq.Result
	if json.Unmarshal(result, &r) != nil {
		return -1
	}
	n := 0
	for n < len(r.Groups) && r.Groups[n].ReusedFrom != "" {
		n++
	}
	return n
}

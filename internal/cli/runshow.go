package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// printRunGroups prints the group table of `runs show` so that it agrees
// with the status line above it: a running run's group after its
// checkpoint is shown running (the checkpoint was written before it
// started, so it reads pending there), and a run whose groups' results
// were not stored (too large for its RUNS entry: docs/runs.md, Large
// state) says so instead of claiming that no group has run.
func printRunGroups(w io.Writer, st *events.RunState, res *seq.Result) {
	if len(res.Groups) == 0 {
		if st.FinishedGroups > 0 {
			fmt.Fprintf(w, "%d groups finished; their results are not stored with the run (see Error).\n", st.FinishedGroups)
			return
		}
		fmt.Fprintln(w, "No group has run yet.")
		return
	}
	if st.Status == events.StatusRunning {
		markRunning(res.Groups)
	}
	printResultTable(w, res.Groups, st.Error)
}

// markRunning marks the first group that has not finished as running (its
// calls stay as the checkpoint has them).
func markRunning(groups []seq.GroupResult) {
	for i := range groups {
		switch groups[i].Status {
		case seq.GroupPending:
			groups[i].Status = seq.GroupRunning
			return
		case seq.GroupRunning:
			return
		}
		if !groups[i].Status.Finished() {
			return
		}
	}
}

// definitionText describes the definition a run uses (RunState.Definition,
// docs/runs.md): the stored sequence's revision, or inline, with the start
// of its digest; "" when the state does not record it.
func definitionText(d *events.DefinitionRef) string {
	if d == nil {
		return ""
	}
	digest := d.Digest
	if len(digest) > 19 {
		digest = digest[:19] + "…"
	}
	if d.Revision == 0 {
		return "inline (" + digest + ")"
	}
	// The revision is the SEQUENCES bucket's, shared by every sequence, so
	// it names the version by where it was stored, not by a count of this
	// sequence's versions.
	return fmt.Sprintf("the version stored at SEQUENCES revision %d (%s); a resume uses this version even if the sequence was edited since", d.Revision, digest)
}

// runDuration is a run's duration as every command prints it (docs/runs.md,
// States): from its first claim (StartedAt) to its final state
// (FinishedAt), interruptions, failovers and the waits between deliveries
// included. 0 when the state does not have both times.
func runDuration(st *events.RunState) time.Duration {
	if st.StartedAt.IsZero() || st.FinishedAt.IsZero() || st.FinishedAt.Before(st.StartedAt) {
		return 0
	}
	return st.FinishedAt.Sub(st.StartedAt)
}

// fanOutText sums up a for_each call's items (docs/sequences.md,
// "for_each"): "100 items: 97 ok, 2 failed, 1 canceled", the counts that
// are not zero, in a fixed order.
func fanOutText(f *seq.FanOut) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{f.Succeeded, "ok"}, {f.Failed, "failed"}, {f.Running, "running"}, {f.Degraded, "degraded"}, {f.Skipped, "skipped"}, {f.Canceled, "canceled"}, {f.NotRun, "not run"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	items := fmt.Sprintf("%d items", f.Items)
	if f.Items == 1 {
		items = "1 item"
	}
	if len(parts) == 0 {
		return items
	}
	return items + ": " + strings.Join(parts, ", ")
}

// maxItemLines is how many of a fan-out's items (FanOut.Details) the
// tables and the progress print; -o json has them all.
const maxItemLines = 5

// itemLines returns the fan-out's items worth a line of their own (those
// that did not succeed at their first attempt), at most maxItemLines, and
// how many of them were left out.
func itemLines(f *seq.FanOut) ([]seq.ItemResult, int) {
	d := f.Details
	if len(d) <= maxItemLines {
		return d, f.Omitted
	}
	return d[:maxItemLines], len(d) - maxItemLines + f.Omitted
}

// printSentArgs prints the arguments each call of the groups was sent,
// after substitution (seq.SentArgs; docs/runs.md, "What a run state
// holds"): a line per call that was sent — a for_each call's line holds
// its first item's, then a line per item in its details — with the JSON on
// one line cut at maxInlineValue characters, or, with whole set, the JSON
// indented below the line. Calls never sent have no line; notKept
// (seq.Result.ArgsNotKept) calls sent past the run's bound are counted in
// a last line; a run state without any recorded arguments (written by an
// older release) prints nothing.
func printSentArgs(w io.Writer, groups []seq.GroupResult, notKept int, whole bool) {
	type line struct{ label, args string }
	var lines []line
	for gi, g := range groups {
		for ci, c := range g.Calls {
			label := fmt.Sprintf("%d %s / %s", gi+1, g.Name, callLabel(c))
			if len(g.Calls) > 1 {
				label = fmt.Sprintf("%d %s / %d %s", gi+1, g.Name, ci+1, callLabel(c))
			}
			if text := sentArgsText(c.SentArgs, whole); text != "" {
				if c.ForEach != nil {
					label += " (its first item)"
				}
				lines = append(lines, line{label, text})
			}
			if c.ForEach == nil {
				continue
			}
			for _, it := range c.ForEach.Details {
				if text := sentArgsText(it.SentArgs, whole); text != "" {
					lines = append(lines, line{"    " + seq.ItemLabel(it.Index), text})
				}
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	defer func() {
		if notKept > 0 {
			fmt.Fprintf(w, "  (the arguments of %d more calls or items are not kept: a run's state keeps at most %s of arguments)\n", notKept, sizeText(seq.MaxRunArgs))
		}
	}()
	if whole {
		fmt.Fprintln(w, "\nArguments sent (after substitution):")
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n    %s\n", l.label, strings.ReplaceAll(l.args, "\n", "\n    "))
		}
		return
	}
	fmt.Fprintln(w, "\nArguments sent (after substitution; --args prints them whole):")
	tw := newTable(w)
	for _, l := range lines {
		fmt.Fprintf(tw, "  %s\t%s\n", l.label, l.args)
	}
	tw.Flush()
}

// sentArgsText is how printSentArgs shows one call's arguments: their
// JSON as a person reads it on one line (or indented when whole), or,
// for clipped ones, their size and the start that was kept; "" when the
// call was not sent.
func sentArgsText(a seq.SentArgs, whole bool) string {
	switch {
	case len(a.Args) > 0:
		if whole {
			var b bytes.Buffer
			if json.Indent(&b, a.Args, "", "  ") == nil {
				return readableJSON(b.String())
			}
		}
		return oneLine(readableJSON(string(a.Args)), maxInlineValue)
	case a.ArgsClipped != nil:
		c := a.ArgsClipped
		head := readableJSON(c.Head)
		if !whole {
			head = oneLine(head, maxInlineValue)
		}
		return fmt.Sprintf("(%s sent; the first %d bytes kept) %s…", sizeText(int64(c.Size)), len(c.Head), head)
	}
	return ""
}

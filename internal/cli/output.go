package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(w, "{\"error\": %q}\n", err.Error())
		return
	}
	w.Write(append(b, '\n'))
}

// maxInlineValue is how many characters of a non-text output the table
// shows before pointing at --json.
const maxInlineValue = 160

// printRunState prints a finished run for a person: a header line, a table
// of groups and calls, and the outputs (string outputs in full, other
// values on one line, cut at maxInlineValue characters).
func printRunState(w io.Writer, st *events.RunState, s *seq.Sequence) {
	var r seq.Result
	_ = json.Unmarshal(st.Result, &r)
	fmt.Fprintf(w, "Run %s of %s: %s", st.RunID, st.Sequence, st.Status)
	if r.Duration > 0 {
		fmt.Fprintf(w, " in %s", roundDur(time.Duration(r.Duration)))
	}
	fmt.Fprintln(w)
	if st.Error != "" {
		fmt.Fprintf(w, "Error: %s\n", st.Error)
	}
	fmt.Fprintln(w)
	printResultTable(w, r.Groups)
	slots := st.Slots
	if len(slots) == 0 {
		slots = r.Slots
	}
	printSlots(w, slots, s)
}

// printResultTable prints one row per group and one per call under it.
func printResultTable(w io.Writer, groups []seq.GroupResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP / CALL\tSTATUS\tATTEMPTS\tTIME\tERROR")
	for i, g := range groups {
		d := ""
		if g.Status != seq.GroupPending && g.Status != seq.GroupSkipped {
			d = roundDur(time.Duration(g.Duration)).String()
		}
		e := g.Error
		if e == "" {
			e = g.Reason
		}
		fmt.Fprintf(tw, "%d %s\t%s\t\t%s\t%s\n", i+1, g.Name, g.Status, d, oneLine(e, 100))
		for _, c := range g.Calls {
			d := ""
			if c.Attempts > 0 {
				d = roundDur(time.Duration(c.Duration)).String()
			}
			fmt.Fprintf(tw, "    %s\t%s\t%d\t%s\t%s\n", callLabel(c), c.Status, c.Attempts, d, oneLine(c.Error, 100))
		}
	}
	tw.Flush()
}

// printSlots prints the outputs in the order the groups declare them.
func printSlots(w io.Writer, slots map[string]json.RawMessage, s *seq.Sequence) {
	if len(slots) == 0 {
		return
	}
	var names []string
	seen := map[string]bool{}
	if s != nil {
		for _, g := range s.Groups {
			keys := make([]string, 0, len(g.Out))
			for k := range g.Out {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if _, ok := slots[k]; ok && !seen[k] {
					names, seen[k] = append(names, k), true
				}
			}
		}
	}
	var rest []string
	for k := range slots {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)
	fmt.Fprintln(w, "\nOutputs:")
	var texts []string
	for _, k := range names {
		v := slots[k]
		var str string
		if json.Unmarshal(v, &str) == nil && strings.Contains(str, "\n") {
			texts = append(texts, k)
			fmt.Fprintf(w, "  %s: text, %d line(s), below\n", k, strings.Count(strings.TrimRight(str, "\n"), "\n")+1)
			continue
		}
		var buf bytes.Buffer
		if json.Compact(&buf, v) != nil {
			buf.Reset()
			buf.Write(v)
		}
		line := buf.String()
		if len(line) > maxInlineValue {
			line = oneLine(line, maxInlineValue) + fmt.Sprintf(" (%d bytes; --json shows all)", buf.Len())
		}
		fmt.Fprintf(w, "  %s: %s\n", k, line)
	}
	for _, k := range texts {
		var str string
		_ = json.Unmarshal(slots[k], &str)
		fmt.Fprintf(w, "\n── %s ──\n%s", k, str)
		if !strings.HasSuffix(str, "\n") {
			fmt.Fprintln(w)
		}
	}
}

// oneLine flattens s to one line and cuts it at n bytes on a rune boundary.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"

	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// output is the value of a read command's output flags (outputFlags):
// "" for the command's table, or one of its formats — json and yaml (the
// same data: the pkg/events wire types, or the type the command documents),
// and for a table that has more columns to show, wide.
type output struct {
	format  string
	choices []string
	from    string // the flag that set format, for a conflict message
}

// outputFlags defines a read command's output flags on fs: -o FORMAT and
// --output FORMAT with FORMAT one of formats (json, yaml, wide), and
// --json, the same as -o json. Another FORMAT is a usage error listing
// them; two different formats on one line are one too.
func outputFlags(fs *flag.FlagSet, formats ...string) *output {
	o := &output{choices: formats}
	usage := "output format: " + orList(formats)
	fs.Var(outputFlag{o, "-o"}, "o", usage)
	fs.Var(outputFlag{o, "--output"}, "output", usage)
	fs.Var(jsonFlag{o}, "json", "the same as -o json")
	return o
}

// JSON reports whether the output is JSON.
func (o *output) JSON() bool { return o.format == "json" }

// Wide reports whether the table is to show its extra columns.
func (o *output) Wide() bool { return o.format == "wide" }

// Structured prints v as JSON or YAML when the output format is one of them
// and reports whether it did; otherwise the command prints its table.
func (o *output) Structured(w io.Writer, v any) bool {
	switch o.format {
	case "json":
		writeJSON(rawWriter(w), v) // exact: the encoders escape what needs it
	case "yaml":
		writeYAML(rawWriter(w), v)
	default:
		return false
	}
	return true
}

func (o *output) set(format, flagName string) error {
	if !slices.Contains(o.choices, format) {
		return fmt.Errorf("want %s", orList(o.choices))
	}
	if o.from != "" && o.format != format {
		return fmt.Errorf("%s gave %s already: give one output format", o.from, o.format)
	}
	o.format, o.from = format, flagName
	return nil
}

// outputFlag is -o and --output.
type outputFlag struct {
	o    *output
	name string
}

func (f outputFlag) String() string {
	if f.o == nil {
		return ""
	}
	return f.o.format
}
func (f outputFlag) Set(s string) error { return f.o.set(s, f.name+" "+s) }

// Choices returns the formats (for completion).
func (f outputFlag) Choices() []string { return f.o.choices }

// jsonFlag is --json: -o json.
type jsonFlag struct{ o *output }

func (f jsonFlag) String() string   { return strconv.FormatBool(f.o != nil && f.o.format == "json") }
func (f jsonFlag) IsBoolFlag() bool { return true }
func (f jsonFlag) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if !b {
		if f.o.from == "--json" {
			f.o.format, f.o.from = "", ""
		}
		return nil
	}
	return f.o.set("json", "--json")
}

// writeYAML writes v as YAML (yaml.v3): the data JSON has (the same field
// names, order and exact numbers), in block style, strings that need it
// quoted, text with line breaks as literal blocks.
func writeYAML(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "error: %q\n", err.Error())
		return
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		fmt.Fprintf(w, "error: %q\n", err.Error())
		return
	}
	plainStyle(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		fmt.Fprintf(w, "error: %q\n", err.Error())
	}
	enc.Close()
}

// plainStyle clears the JSON styles (flow collections, quoted strings) of
// n and its children, so that the encoder picks YAML's own.
func plainStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plainStyle(c)
	}
}

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
	if d := runDuration(st); d > 0 { // runshow.go: one duration everywhere
		fmt.Fprintf(w, " in %s", roundDur(d))
	}
	fmt.Fprintln(w)
	if st.Error != "" {
		fmt.Fprintf(w, "Error: %s\n", st.Error)
	}
	fmt.Fprintln(w)
	printResultTable(w, r.Groups, st.Error)
	slots := st.Slots
	if len(slots) == 0 {
		slots = r.Slots
	}
	printSlots(w, slots, s)
}

// printResultTable prints one row per group and one per call under it. An
// error is said once: a group's error that the run's error (runErr, "" for
// none) already holds reads "(the run's error)", and a call's error that
// its group's error holds reads "(the group's error)". A group a retry
// reused (GroupResult.ReusedFrom) reads "STATUS (reused)", and a line
// under the table names the run that ran it.
func printResultTable(w io.Writer, groups []seq.GroupResult, runErr string) {
	tw := newTable(w)
	fmt.Fprintln(tw, "GROUP / CALL\tSTATUS\tATTEMPTS\tTIME\tERROR")
	var reusedFrom []string
	defer func() {
		for _, from := range reusedFrom {
			fmt.Fprintf(w, "(reused): the group finished in run %s; this retry did not call its tools again and kept its slots\n", termSafe(from))
		}
	}()
	for i, g := range groups {
		status := string(g.Status)
		if g.ReusedFrom != "" {
			status += " (reused)"
			if !slices.Contains(reusedFrom, g.ReusedFrom) {
				reusedFrom = append(reusedFrom, g.ReusedFrom)
			}
		}
		d := ""
		if g.Status != seq.GroupPending && g.Status != seq.GroupSkipped && g.Status != seq.GroupRunning {
			d = roundDur(time.Duration(g.Duration)).String()
		}
		e := g.Error
		if e == "" {
			e = g.Reason
		}
		shown := errorLine(e, 100)
		if g.Error != "" && runErr != "" && strings.Contains(runErr, g.Error) {
			shown = "(the run's error)"
		}
		fmt.Fprintf(tw, "%d %s\t%s\t\t%s\t%s\n", i+1, g.Name, status, d, shown)
		if g.Wait != nil {
			fmt.Fprintf(tw, "    wait_for\t%s\t\t\t\n", groupWaitText(g.Wait)) // runsignal.go
		}
		for _, c := range g.Calls {
			d := ""
			if c.Attempts > 0 {
				d = roundDur(time.Duration(c.Duration)).String()
			}
			ce := errorLine(c.Error, 100)
			if c.Error != "" && g.Error != "" && strings.Contains(g.Error, c.Error) {
				ce = "(the group's error)"
			}
			fmt.Fprintf(tw, "    %s\t%s\t%d\t%s\t%s\n", callLabel(c), c.Status, c.Attempts, d, ce)
			if f := c.ForEach; f != nil {
				fmt.Fprintf(tw, "      for_each\t%s\t\t\t\n", fanOutText(f))
				lines, more := itemLines(f)
				for _, it := range lines {
					fmt.Fprintf(tw, "      %s\t%s\t%d\t%s\t%s\n", seq.ItemLabel(it.Index), it.Status, it.Attempts, roundDur(time.Duration(it.Duration)), errorLine(it.Error, 100))
				}
				if more > 0 {
					fmt.Fprintf(tw, "      (%d more items not shown; -o json lists them)\t\t\t\t\n", more)
				}
			}
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
		var buf bytes.Buffer
		if json.Compact(&buf, v) != nil {
			buf.Reset()
			buf.Write(v)
		}
		line := readableJSON(buf.String())
		var str string
		if json.Unmarshal(v, &str) == nil && (strings.Contains(str, "\n") || len(line) > maxInlineValue) {
			// Text is shown in full (README): below, when it has several
			// lines or is too long for the line.
			texts = append(texts, k)
			fmt.Fprintf(w, "  %s: text, %d line(s), below\n", k, strings.Count(strings.TrimRight(str, "\n"), "\n")+1)
			continue
		}
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

// errorCode finds a tool error's code in an error text: "(code 503)", as
// toolcall.Error writes it.
var errorCode = regexp.MustCompile(`\(code [^()\s]{1,16}\)`)

// errorLine is oneLine for an error in a table: when the cut would drop
// the tool error's code, the code is kept at the end ("tool "x" failed…
// (code 503)"), so a 503 is never hidden by the width of a column.
func errorLine(s string, n int) string {
	line := oneLine(s, n)
	if line == strings.Join(strings.Fields(s), " ") {
		return line
	}
	code := errorCode.FindString(s)
	if code == "" || strings.Contains(line, code) || n <= len(code)+10 {
		return line
	}
	return oneLine(s, n-len(code)-1) + " " + code
}

// readableJSON returns compact JSON text as a person reads it: the escapes
// of its strings that stand for a printable character — \u003c, \u003e and
// \u0026, which Go's encoder writes for <, > and &, and \u00e9 or a
// surrogate pair from other encoders — are written as the character. The
// escapes of quotes, backslashes, control characters, line separators and
// invisible format characters (bidi controls) stay, so the text is still
// JSON, means the same value, and prints nothing a terminal acts on.
func readableJSON(s string) string {
	if !strings.Contains(s, `\u`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		if s[i+1] != 'u' {
			b.WriteString(s[i : i+2]) // \" \\ \n …: kept, and not read as the start of another escape
			i += 2
			continue
		}
		r, n := jsonEscape(s[i:])
		if n > 0 && r != '"' && r != '\\' && unicode.IsPrint(r) {
			b.WriteRune(r)
			i += n
			continue
		}
		b.WriteString(s[i : i+2])
		i += 2
	}
	return b.String()
}

// jsonEscape reads the \uXXXX escape (or surrogate pair of two) at the
// start of s and returns its rune and length, or 0, 0.
func jsonEscape(s string) (rune, int) {
	hex4 := func(s string) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(s[2:6], 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	r2, ok := hex4(s[6:])
	if d := utf16.DecodeRune(r, r2); ok && d != unicode.ReplacementChar {
		return d, 12
	}
	return 0, 0
}

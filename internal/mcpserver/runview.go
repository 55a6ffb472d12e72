package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// Output bounds of a tool result: a model's context is small, so an
// output over MaxOutputBytes, and the largest outputs while all of them
// together are over MaxOutputsBytes, are replaced by a note in the normal
// answer; seq_status returns one output alone up to MaxOneOutputBytes.
const (
	MaxOutputBytes    = 64 << 10
	MaxOutputsBytes   = 128 << 10
	MaxOneOutputBytes = 1 << 20
)

// runView is what seq_run, seq_status and seq_cancel answer: a run's
// state as a model needs it (docs/runs.md).
type runView struct {
	RunID          string                     `json:"run_id"`
	Sequence       string                     `json:"sequence,omitempty"`
	Status         string                     `json:"status" jsonschema:"queued, running, waiting (for a signal or a time: see wait), interrupted (another worker resumes it), succeeded, failed or cancelled"`
	Finished       bool                       `json:"finished" jsonschema:"true once the run succeeded, failed or was cancelled"`
	FinishedGroups int                        `json:"finished_groups"`
	Groups         int                        `json:"groups"`
	Error          string                     `json:"error,omitempty"`
	Outputs        map[string]json.RawMessage `json:"outputs,omitempty" jsonschema:"the slots written so far, by name (JSON values; null for a skipped group's)"`
	Steps          []stepView                 `json:"steps,omitempty" jsonschema:"each group run so far, in order, with its calls"`
	Wait           *events.WaitState          `json:"wait,omitempty" jsonschema:"what a waiting run waits for: its group, the signal's name and the values it brings (out), since and until when"`
	Next           string                     `json:"next,omitempty" jsonschema:"what to do next"`
}

// stepView is one group of a run.
type stepView struct {
	Group  string     `json:"group"`
	Status string     `json:"status"`
	Reason string     `json:"reason,omitempty"`
	Error  string     `json:"error,omitempty"`
	Calls  []callView `json:"calls,omitempty"`
}

// callView is one tool call of a group.
type callView struct {
	Tool     string `json:"tool"`
	As       string `json:"as,omitempty"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error,omitempty"`
	// ForEach is a for_each call's fan-out: its items' counts, failed
	// items and their errors and arguments (docs/sequences.md, "for_each").
	ForEach *seq.FanOut `json:"for_each,omitempty"`
	// Args and ArgsClipped are the arguments the tool was sent
	// (seq.SentArgs; docs/runs.md, "What a run state holds").
	Args        json.RawMessage  `json:"args,omitempty" jsonschema:"the JSON object the tool was sent, after $args, $item and $index were substituted (a for_each call: its first item's); absent when the call was not sent or its arguments were clipped"`
	ArgsClipped *seq.ClippedArgs `json:"args_clipped,omitempty" jsonschema:"arguments too long to keep whole (over 2 KiB): their size in bytes and their start"`
}

// view builds the answer for st; output names one output to return alone
// and in full (seq_status).
func (s *Server) view(ctx context.Context, st *events.RunState, output string) (runView, string, error) {
	v := runView{RunID: st.RunID, Sequence: st.Sequence, Status: st.Status, Finished: events.Finished(st.Status),
		FinishedGroups: st.FinishedGroups, Groups: st.Groups, Error: st.Error}
	var res seq.Result
	if len(st.Result) > 0 && json.Unmarshal(st.Result, &res) == nil {
		for _, g := range res.Groups {
			if g.Status == seq.GroupPending {
				continue
			}
			v.Steps = append(v.Steps, stepView{Group: g.Name, Status: string(g.Status), Reason: g.Reason, Error: g.Error, Calls: callViews(g.Calls)})
		}
	}
	slots, err := s.c.Slots(ctx, st)
	if err != nil {
		return runView{}, "", fmt.Errorf("run %s: reading its outputs: %w", st.RunID, err)
	}
	if output != "" {
		val, ok := slots[output]
		if !ok {
			return runView{}, "", fmt.Errorf("run %s has no output %q; its outputs: %s", st.RunID, output, strings.Join(sortedKeys(slots), ", "))
		}
		if len(val) > MaxOneOutputBytes {
			val = cutNote(output, len(val), MaxOneOutputBytes, "read it with `skillbus runs show "+st.RunID+" --json` outside this conversation")
		}
		v.Outputs = map[string]json.RawMessage{output: val}
	} else {
		v.Outputs = capOutputs(slots, st.RunID)
	}
	switch {
	case st.Status == events.StatusSucceeded:
	case st.Status == events.StatusFailed:
		v.Next = "The run failed: read the failed group's calls above, fix the arguments or the sequence (seq_show, seq_create) and run it again."
	case st.Status == events.StatusCancelled:
		v.Next = "The run was cancelled."
	case st.Status == events.StatusWaiting && st.Wait != nil:
		v.Wait = st.Wait
		v.Next = waitNext(st) // seqsignal.go
	default:
		v.Next = fmt.Sprintf("The run is still %s: call seq_status {\"run_id\": %q, \"wait_seconds\": 60} to wait for its end, or seq_cancel to stop it.", st.Status, st.RunID)
	}
	return v, runText(v), nil
}

func callViews(calls []seq.CallResult) []callView {
	out := make([]callView, 0, len(calls))
	for _, c := range calls {
		out = append(out, callView{Tool: c.Tool, As: c.As, Status: string(c.Status), Attempts: c.Attempts, Error: c.Error, ForEach: c.ForEach, Args: c.Args, ArgsClipped: c.ArgsClipped})
	}
	return out
}

// capOutputs returns slots with every value over MaxOutputBytes, and then
// the largest ones while the total is over MaxOutputsBytes, replaced by a
// note saying how to read it whole.
func capOutputs(slots map[string]json.RawMessage, runID string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(slots))
	total := 0
	for k, v := range slots {
		out[k] = v
		total += len(v)
	}
	bySize := sortedKeys(out)
	sort.SliceStable(bySize, func(i, j int) bool { return len(out[bySize[i]]) > len(out[bySize[j]]) })
	for _, k := range bySize {
		v := out[k]
		if len(v) <= MaxOutputBytes && total <= MaxOutputsBytes {
			break
		}
		note := cutNote(k, len(v), MaxOutputBytes, fmt.Sprintf(`read it alone with seq_status {"run_id": %q, "output": %q}`, runID, k))
		if len(note) >= len(v) {
			continue
		}
		total += len(note) - len(v)
		out[k] = note
	}
	return out
}

// cutNote is the JSON string that stands for an output too large to show.
func cutNote(name string, size, limit int, how string) json.RawMessage {
	b, _ := json.Marshal(fmt.Sprintf("[output %q is %d bytes, more than the %d bytes shown here: %s]", name, size, limit, how))
	return b
}

// runText writes a run for a model: a status line, each group with its
// calls, the outputs (text outputs as they are) and what to do next.
func runText(v runView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s", v.RunID)
	if v.Sequence != "" {
		fmt.Fprintf(&b, " of sequence %s", v.Sequence)
	}
	fmt.Fprintf(&b, ": %s", v.Status)
	if v.Groups > 0 {
		fmt.Fprintf(&b, ", %d of %d group(s) finished", v.FinishedGroups, v.Groups)
	}
	if v.Error != "" {
		fmt.Fprintf(&b, "\nError: %s", v.Error)
	}
	b.WriteString("\n")
	for i, st := range v.Steps {
		fmt.Fprintf(&b, "%d. group %s: %s", i+1, st.Group, st.Status)
		if st.Reason != "" {
			fmt.Fprintf(&b, " (%s)", st.Reason)
		}
		if st.Error != "" {
			fmt.Fprintf(&b, " — %s", st.Error)
		}
		b.WriteString("\n")
		writeCalls(&b, "   ", st.Calls)
	}
	writeOutputs(&b, v.Outputs)
	if v.Next != "" {
		fmt.Fprintf(&b, "\n%s\n", v.Next)
	}
	return b.String()
}

func writeCalls(b *strings.Builder, indent string, calls []callView) {
	for _, c := range calls {
		fmt.Fprintf(b, "%s- %s", indent, c.Tool)
		if c.As != "" {
			fmt.Fprintf(b, " → %s", c.As)
		}
		fmt.Fprintf(b, ": %s", c.Status)
		if c.Attempts > 1 {
			fmt.Fprintf(b, " after %d attempts", c.Attempts)
		}
		if c.Error != "" {
			fmt.Fprintf(b, " — %s", c.Error)
		}
		b.WriteString("\n")
		// The arguments of a call that did not succeed, to see what to fix.
		if t := argsText(seq.SentArgs{Args: c.Args, ArgsClipped: c.ArgsClipped}); t != "" && c.Status != string(seq.CallSucceeded) {
			fmt.Fprintf(b, "%s  args: %s\n", indent, t)
		}
		if f := c.ForEach; f != nil {
			fmt.Fprintf(b, "%s  for_each: %d items, %d succeeded, %d failed", indent, f.Items, f.Succeeded, f.Failed)
			if n := f.Items - f.Succeeded - f.Failed; n > 0 {
				fmt.Fprintf(b, ", %d other (skipped, degraded, canceled or not run)", n)
			}
			b.WriteString("\n")
			for i, it := range f.Details {
				if i == 5 {
					fmt.Fprintf(b, "%s  (%d more items in the JSON)\n", indent, len(f.Details)-i+f.Omitted)
					break
				}
				fmt.Fprintf(b, "%s  %s: %s after %d attempt(s)", indent, seq.ItemLabel(it.Index), it.Status, it.Attempts)
				if it.Error != "" {
					fmt.Fprintf(b, " — %s", it.Error)
				}
				if t := argsText(it.SentArgs); t != "" {
					fmt.Fprintf(b, " (args %s)", t)
				}
				b.WriteString("\n")
			}
		}
	}
}

// maxArgsText bounds the arguments runText shows of one call or item.
const maxArgsText = 300

// argsText is a call's arguments as runText shows them: compact JSON cut
// at maxArgsText bytes, or the size of clipped ones; "" when not sent.
func argsText(a seq.SentArgs) string {
	switch {
	case len(a.Args) > 0:
		t := string(a.Args)
		if len(t) > maxArgsText {
			n := maxArgsText
			for n > 0 && !utf8.RuneStart(t[n]) {
				n--
			}
			t = t[:n] + "…"
		}
		return t
	case a.ArgsClipped != nil:
		return fmt.Sprintf("(%d bytes, too long to keep)", a.ArgsClipped.Size)
	}
	return ""
}

// writeOutputs writes each output: a JSON string as its text, any other
// value as compact JSON.
func writeOutputs(b *strings.Builder, outputs map[string]json.RawMessage) {
	if len(outputs) == 0 {
		return
	}
	b.WriteString("\nOutputs:\n")
	for _, k := range sortedKeys(outputs) {
		v := outputs[k]
		var text string
		if json.Unmarshal(v, &text) == nil && strings.Contains(text, "\n") {
			fmt.Fprintf(b, "- %s:\n%s\n", k, strings.TrimRight(text, "\n"))
			continue
		}
		fmt.Fprintf(b, "- %s: %s\n", k, v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

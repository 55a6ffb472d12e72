package seqtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/pkg/seq"
)

// Signal is one signal a case sends a waiting run (docs/testing.md, "Waits
// and signals"), as `skillbus runs signal RUN NAME` would: Values (checked
// against the wait's `out` like seq.signal checks them), or a rejection.
type Signal struct {
	Name string
	// After is the virtual time between the start of the wait and the
	// signal; past the wait's timeout, the wait times out instead.
	After  time.Duration
	Values map[string]json.RawMessage
	// Reject sends a rejection (`runs signal --reject REASON`), with
	// Reason (may be empty).
	Reject bool
	Reason string
	By     string
	Line   int
}

// parseSignals reads a case's signals: a list of {name, after, values |
// reject, by}.
func parseSignals(n *yaml.Node) ([]Signal, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, perr(n.Line, "signals must be a list of {name: SIGNAL, after: DURATION, values: {...}} or {name: SIGNAL, reject: REASON}")
	}
	var out []Signal
	for _, sn := range n.Content {
		sg := Signal{Line: sn.Line}
		hasValues, hasReject := false, false
		err := fields(sn, "a signal ({name, after, values} or {name, after, reject})", func(k, v *yaml.Node) error {
			switch k.Value {
			case "name":
				if v.Kind != yaml.ScalarNode || v.Value == "" {
					return perr(v.Line, "name: must be the signal's name, as the wait group's wait_for.signal names it")
				}
				sg.Name = seq.NormalizeName(v.Value)
			case "after":
				d, err := time.ParseDuration(v.Value)
				if v.Kind != yaml.ScalarNode || err != nil || d < 0 {
					return perr(v.Line, "after: %q is not a duration such as 30m or 2h (the virtual time from the start of the wait to the signal)", v.Value)
				}
				sg.After = d
			case "values":
				if v.Kind != yaml.MappingNode {
					return perr(v.Line, "values: must be a mapping of the wait's out slots to their values, for example {approved: true}")
				}
				sg.Values = map[string]json.RawMessage{}
				hasValues = true
				return fields(v, "values", func(vk, vv *yaml.Node) error {
					j, err := toJSON(vv)
					sg.Values[vk.Value] = j
					return err
				})
			case "reject":
				if v.Kind != yaml.ScalarNode {
					return perr(v.Line, "reject: must be the reason of the rejection (text), or true for none")
				}
				hasReject, sg.Reject = true, true
				if v.Tag != "!!bool" {
					sg.Reason = v.Value
				} else if v.Value != "true" {
					return perr(v.Line, "reject: false sends no rejection; leave reject out and give values")
				}
			case "by":
				if v.Kind != yaml.ScalarNode {
					return perr(v.Line, "by: must be who signals (text)")
				}
				sg.By = v.Value
			default:
				return perr(k.Line, "unknown signal field %q; a signal has name, after, values or reject, and by", k.Value)
			}
			return nil
		})
		switch {
		case err != nil:
			return nil, err
		case sg.Name == "":
			return nil, perr(sn.Line, "a signal needs a name: the wait group's wait_for.signal")
		case hasValues && hasReject:
			return nil, perr(sn.Line, "a signal has either values or reject, not both: a rejection brings no values")
		}
		out = append(out, sg)
	}
	return out, nil
}

// checkWaitExpect refuses, at the case's line, expectations of a waiting
// run in a case that does not stop when the run waits.
func checkWaitExpect(n *yaml.Node, c *Case) error {
	if c.StopWhenWaiting {
		return nil
	}
	what := ""
	switch {
	case c.Expect.Status == "waiting":
		what = "status: waiting"
	default:
		for g, s := range c.Expect.Groups {
			if s == "waiting" {
				what = fmt.Sprintf("groups: {%s: waiting}", g)
			}
		}
		for g, s := range c.Expect.Waits {
			if s == "waiting" {
				what = fmt.Sprintf("waits: {%s: waiting}", g)
			}
		}
	}
	if what != "" {
		return perr(n.Line, "case %q expects %s, but without stop_when_waiting: true a wait with no signal left times out at its deadline; add stop_when_waiting: true", c.Name, what)
	}
	return nil
}

// signalProblems checks c's signals against s: each names a signal some
// wait group waits for, and its values fit that group's `out` (the check
// seq.signal makes, seq.CheckSignal). Each problem has the signal's line.
func signalProblems(s *seq.Sequence, c *Case) []Warning {
	var out []Warning
	for _, sg := range c.Signals {
		var names []string
		var groups []*seq.Group
		for i := range s.Groups {
			g := &s.Groups[i]
			if g.WaitFor == nil || g.WaitFor.Signal == "" {
				continue
			}
			if !slices.Contains(names, g.WaitFor.Signal) {
				names = append(names, g.WaitFor.Signal)
			}
			if g.WaitFor.Signal == sg.Name {
				groups = append(groups, g)
			}
		}
		if len(groups) == 0 {
			waits := "no group waits for a signal"
			if len(names) > 0 {
				waits = "its groups wait for " + strings.Join(names, ", ")
			}
			out = append(out, Warning{Line: sg.Line, Message: fmt.Sprintf("case %q: the signal %q: no group of the sequence %s waits for it (%s); fix the name", c.Name, sg.Name, s.Name, waits)})
			continue
		}
		if sg.Reject {
			continue
		}
		var err error
		for _, g := range groups {
			if err = seq.CheckSignal(seq.Signature(g.Out), sg.Values); err == nil {
				break
			}
		}
		if err != nil {
			msg := err.Error()
			if e, ok := err.(*seq.Error); ok {
				msg = e.Message
			}
			out = append(out, Warning{Line: sg.Line, Message: fmt.Sprintf("case %q: the signal %q: %s (seq.signal would refuse it)", c.Name, sg.Name, msg)})
		}
	}
	return out
}

// waitStep decides how the wait w of group gi ends, from the case's
// signals not used yet (used marks them): the next signal of its name, at
// the wait's start plus its after (past the deadline: the timer); with no
// such signal, the timer at the deadline, or stop (StopWhenWaiting). It
// returns the outcome, the virtual time it happens and the trace line.
func waitStep(c *Case, used []bool, gi int, gname string, w *seq.Wait) (o seq.WaitOutcome, at time.Time, line string, stop bool) {
	o = seq.WaitOutcome{Group: gi + 1, Cause: seq.CauseTimer, Since: w.Since, Deadline: w.Deadline}
	if w.Kind != seq.WaitSignal {
		o.At = w.Deadline
		return o, w.Deadline, fmt.Sprintf("timer: group %q waited %s (%s)", gname, w.Deadline.Sub(w.Since), w.Kind), false
	}
	for i, sg := range c.Signals {
		if used[i] || sg.Name != w.Signal {
			continue
		}
		used[i] = true
		at = w.Since.Add(sg.After)
		if at.After(w.Deadline) {
			o.At = w.Deadline
			return o, w.Deadline, fmt.Sprintf("signal %q (line %d) comes %s after the wait began, past its timeout of %s: the wait timed out", sg.Name, sg.Line, sg.After, w.Deadline.Sub(w.Since)), false
		}
		o.Cause, o.Values, o.Reject, o.Reason, o.By, o.At = seq.CauseSignal, sg.Values, sg.Reject, sg.Reason, sg.By, at
		line = fmt.Sprintf("signal %q (line %d)", sg.Name, sg.Line)
		if sg.Reject {
			line += " rejects"
			if sg.Reason != "" {
				line += ": " + sg.Reason
			}
		} else {
			v, _ := json.Marshal(sg.Values)
			line += " " + string(v)
		}
		if sg.By != "" {
			line += " by " + sg.By
		}
		return o, at, line, false
	}
	if c.StopWhenWaiting {
		return o, w.Since, "", true
	}
	o.At = w.Deadline
	return o, w.Deadline, fmt.Sprintf("no signal %q left in the case: the wait timed out at its deadline", w.Signal), false
}

// waitingLine is the trace line of a wait that began.
func waitingLine(gname string, w *seq.Wait) string {
	if w.Kind == seq.WaitSignal {
		return fmt.Sprintf("group %q waiting for the signal %q (timeout %s, until %s)", gname, w.Signal, w.Deadline.Sub(w.Since), w.Deadline.Format(time.RFC3339))
	}
	return fmt.Sprintf("group %q waiting until %s (%s)", gname, w.Deadline.Format(time.RFC3339), w.Kind)
}

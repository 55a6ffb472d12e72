package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// runRunsSignal is `skillbus runs signal RUN_ID NAME [--arg k=v ...]
// [--args-file F] [--reject REASON] [--by NAME]` (docs/runs.md, "Waiting
// runs"): the values are read as `run` reads arguments (internal/runargs),
// against the wait's `out` types from the run's state.
func runRunsSignal(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "runs signal", runsCommand)
	var argv stringList
	fs.Var(&argv, "arg", "signal value KEY=VALUE (repeatable)")
	argsFile := fs.String("args-file", "", "JSON object of signal values")
	reject := fs.String("reject", "", "reject the wait with this reason (an approval denied)")
	by := fs.String("by", "", "who signals (default: $USER, the system user, the credentials' role, or the host)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 2 {
		return runsUsage(env, "signal", "give RUN_ID and the signal's NAME (`skillbus runs show RUN_ID` says what the run waits for), got %s", gotArgs(pos))
	}
	id, name := pos[0], seq.NormalizeName(pos[1])
	if err := events.CheckRunID(id); err != nil {
		return runsUsage(env, "signal", "%s (`skillbus runs --status waiting` lists the waiting runs)", errtext.Error(err))
	}
	rejecting := flagSet(fs, "reject")
	if rejecting && (len(argv.values) > 0 || *argsFile != "") {
		return runsUsage(env, "signal", "--reject carries only its reason; drop --arg and --args-file, or drop --reject")
	}
	if rejecting && strings.TrimSpace(*reject) == "" {
		// Only spaces are no reason either: seq.signal refuses them (400).
		return runsUsage(env, "signal", "--reject needs a reason (not only spaces) saying why the wait is rejected, for example --reject \"not during the freeze\"")
	}
	if msg := longText([2]string{"by", *by}, [2]string{"reject", *reject}); msg != "" {
		return runsUsage(env, "signal", "%s", msg)
	}
	af, err := readArgsFile(env, *argsFile)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus runs signal: %v\n", err)
		return ExitUsage
	}
	if *by == "" {
		*by = whoAsks(connSettings(env).Creds.V)
	}
	return withClient(env, "runs", func(c *client.Client) int {
		st, err := c.Status(ctx, id)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus runs signal: %v\n", describeClient(err, "list the waiting runs with `skillbus runs --status waiting`"))
			return ExitFailure
		}
		opts := []client.SignalOption{client.WithSignalBy(*by)}
		var values map[string]json.RawMessage
		if rejecting {
			opts = append(opts, client.WithReject(*reject))
		} else {
			// The values are checked against the wait's types only when the
			// run waits for this very signal: a run not waiting, waiting for
			// a timer or for another name is refused by the seqworker (409,
			// with the name it waits for), and that is said first.
			var want map[string]seq.Type
			if st.Wait != nil && st.Wait.Kind == seq.WaitSignal && st.Wait.Signal == name {
				want = typesOf(st.Wait.Out)
			}
			noteShadowed(env, "runs signal", af, argv.values)
			if values, err = buildArgs(want, af, argv.values, true); err != nil {
				fmt.Fprintf(env.Stderr, "skillbus runs signal: %v\n", errtext.Error(err))
				return ExitUsage
			}
		}
		st, err = c.Signal(ctx, id, name, values, opts...)
		if err != nil {
			code := ExitFailure
			if errors.Is(err, client.ErrBadRequest) {
				code = ExitUsage
			}
			fmt.Fprintf(env.Stderr, "skillbus runs signal: %v\n", describeClient(err, "list the waiting runs with `skillbus runs --status waiting`"))
			return code
		}
		what := "signalled"
		if rejecting {
			what = "rejected"
		}
		fmt.Fprintf(env.Stderr, "skillbus runs signal: run %s %s (%q at group %d %q); it resumes on a worker now: follow it with `skillbus watch %s`\n",
			id, what, name, st.Wait.Group, st.Wait.GroupName, id)
		return ExitOK
	})
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// waitText says what a waiting run waits for and since when ("" when it
// does not wait): for the Waiting row of `runs show`, and `watch` / `run`.
func waitText(runID string, ws *events.WaitState, now time.Time) string {
	if ws == nil {
		return ""
	}
	s := fmt.Sprintf("at group %d %q ", ws.Group, ws.GroupName)
	switch ws.Kind {
	case seq.WaitSignal:
		s += fmt.Sprintf("for the signal %q", ws.Signal)
		if len(ws.Out) > 0 {
			s += " with " + seq.Signature(typesOf(ws.Out)).String()
		}
		s += fmt.Sprintf(", since %s (%s), timeout at %s", ws.Since.Local().Format("2006-01-02 15:04:05"), ago(now, ws.Since), ws.Deadline.Local().Format("2006-01-02 15:04:05"))
		if ws.Signalled != nil {
			s += "; signalled, resuming"
		} else {
			s += "; signal it with `skillbus runs signal " + runID + " " + ws.Signal + "`"
		}
	default:
		s += fmt.Sprintf("for a timer (%s), since %s (%s)", events.TimerText(ws.Kind, ws.Deadline.Local().Format("2006-01-02 15:04:05")), ws.Since.Local().Format("2006-01-02 15:04:05"), ago(now, ws.Since))
	}
	return s
}

func typesOf(m map[string]string) map[string]seq.Type {
	out := make(map[string]seq.Type, len(m))
	for k, t := range m {
		out[k] = seq.Type(t)
	}
	return out
}

// groupWaitText is a wait group's line in a result table: what it waits
// or waited for, and how the wait ended: `signal "approve" since T, until
// D` (its timeout), `duration until D, since T` or `until D, since T`
// (events.TimerText: "until" said once), then the outcome.
func groupWaitText(w *seq.Wait) string {
	var s string
	if w.Signal != "" {
		s = fmt.Sprintf("signal %q since %s", w.Signal, w.Since.Local().Format("2006-01-02 15:04:05"))
		if w.Outcome == "" {
			s += ", until " + w.Deadline.Local().Format("2006-01-02 15:04:05")
		}
	} else {
		s = events.TimerText(w.Kind, w.Deadline.Local().Format("2006-01-02 15:04:05")) + ", since " + w.Since.Local().Format("2006-01-02 15:04:05")
	}
	switch w.Outcome {
	case "":
	case seq.WaitSignalled, seq.WaitRejected:
		s += ", " + w.Outcome
		if w.By != "" {
			s += " by " + w.By
		}
		s += " at " + w.Ended.Local().Format("2006-01-02 15:04:05")
	default:
		s += ", " + strings.ReplaceAll(w.Outcome, "_", " ") + " at " + w.Ended.Local().Format("2006-01-02 15:04:05")
	}
	return oneLine(s, 200)
}

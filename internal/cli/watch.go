package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
)

func watchCommand() command {
	return command{
		summary: "print skillbus events live: runs, agent boots, registry changes",
		usage: `Usage: skillbus watch [RUN_ID] [--json]

Without RUN_ID, prints every new event of the EVENTS stream as it happens
(run started / group finished / run finished, agent_ready, registry put,
delete, invalid and clash) until Ctrl-C. With RUN_ID, prints that run's
events from its start — also when it finished already — and exits when the
run finishes. --json prints each event as one JSON line. Needs NATS_URL.

Examples:
  skillbus watch
  skillbus watch run-Xq3... --json

Exit codes: 0 stopped by Ctrl-C, or the run succeeded; 1 the run failed (or
NATS is unreachable); 2 bad command line.
`,
		run: runWatch,
	}
}

func runWatch(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "watch", watchCommand)
	asJSON := fs.Bool("json", false, "one JSON object per event")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 1 {
		fmt.Fprintf(env.Stderr, "skillbus watch: give at most one RUN_ID\n\n%s", watchCommand().usage)
		return ExitUsage
	}
	filter, policy := events.SubjectEventsAll, jetstream.DeliverNewPolicy
	runID := ""
	if len(pos) == 1 {
		runID = pos[0]
		subj, err := events.RunEventSubject(runID, events.RunStarted)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus watch: %q is not a run id (letters, digits, '-' and '_')\n", runID)
			return ExitUsage
		}
		filter, policy = strings.TrimSuffix(subj, events.RunStarted)+">", jetstream.DeliverAllPolicy
	}
	return withConn(env, "watch", func(nc *nats.Conn) int {
		js, err := jetstream.New(nc)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus watch: %v\n", err)
			return ExitFailure
		}
		cctx, cancel := context.WithTimeout(ctx, requestTimeout)
		cons, err := js.OrderedConsumer(cctx, events.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: policy})
		cancel()
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus watch: cannot read the %s stream: %v (is a skillbus service running against NATS_URL? `skillbus dev` starts one)\n", events.StreamEvents, err)
			return ExitFailure
		}
		var known *events.RunState
		if runID == "" {
			fmt.Fprintln(env.Stderr, "watching events (Ctrl-C to stop)…")
		} else {
			known = announceWatch(ctx, env, js, runID)
		}
		seen := false
		for {
			msg, err := cons.Next(jetstream.FetchMaxWait(time.Second))
			if ctx.Err() != nil {
				return ExitOK
			}
			if err != nil {
				if !seen && known != nil && (known.Status == events.StatusSucceeded || known.Status == events.StatusFailed) {
					// Finished, but its events have left the EVENTS stream.
					fmt.Fprintf(env.Stderr, "skillbus watch: run %s of %s %s (its events are no longer in the %s stream)", runID, known.Sequence, known.Status, events.StreamEvents)
					if known.Error != "" {
						fmt.Fprintf(env.Stderr, ": %s", oneLine(known.Error, 200))
					}
					fmt.Fprintln(env.Stderr)
					if known.Status == events.StatusSucceeded {
						return ExitOK
					}
					return ExitFailure
				}
				continue // no message within the wait
			}
			seen = true
			status := printEvent(env.Stdout, msg.Subject(), msg.Data(), *asJSON)
			if runID != "" && status != "" {
				if status == events.StatusSucceeded {
					return ExitOK
				}
				return ExitFailure
			}
		}
	})
}

// printEvent prints one event and returns the run status when it is a
// run-finished event ("" otherwise).
func printEvent(w io.Writer, subject string, data []byte, asJSON bool) string {
	var ev struct {
		events.RunEvent
		Agent  string `json:"agent"`
		BootID string `json:"boot_id"`
		Op     string `json:"op"`
		Name   string `json:"name"`
		File   string `json:"file"`
		Line   int    `json:"line"`
		Kept   string `json:"kept"`
		Other  string `json:"other"`
	}
	_ = json.Unmarshal(data, &ev)
	finished := ""
	if strings.HasPrefix(subject, "events.run.") && ev.Kind == events.RunFinished {
		finished = ev.Status
	}
	if asJSON {
		var v map[string]any
		if json.Unmarshal(data, &v) != nil {
			v = map[string]any{"raw": string(data)}
		}
		v["subject"] = subject
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "%s\n", b)
		return finished
	}
	at := ev.At.Local().Format("15:04:05.000")
	if ev.At.IsZero() {
		at = time.Now().Format("15:04:05.000")
	}
	switch {
	case strings.HasPrefix(subject, "events.run."):
		switch ev.Kind {
		case events.RunStarted:
			fmt.Fprintf(w, "%s run %s: %s started\n", at, ev.RunID, ev.Sequence)
		case events.RunGroup:
			fmt.Fprintf(w, "%s run %s: group %d %s %s", at, ev.RunID, ev.Group, ev.GroupName, ev.Status)
			if ev.Error != "" {
				fmt.Fprintf(w, ": %s", oneLine(ev.Error, 200))
			}
			fmt.Fprintln(w)
		default:
			fmt.Fprintf(w, "%s run %s: %s %s", at, ev.RunID, ev.Sequence, ev.Status)
			if ev.Error != "" {
				fmt.Fprintf(w, ": %s", oneLine(ev.Error, 200))
			}
			fmt.Fprintln(w)
		}
	case strings.HasPrefix(subject, "events.agent_ready."):
		fmt.Fprintf(w, "%s agent_ready %s (boot %s)\n", at, ev.Agent, ev.BootID)
	case strings.HasPrefix(subject, "events.registry."):
		kind := strings.TrimPrefix(subject, "events.registry.")
		fmt.Fprintf(w, "%s registry %s %s", at, strings.ReplaceAll(kind, ".", " "), ev.Name)
		if ev.File != "" {
			fmt.Fprintf(w, " (%s", ev.File)
			if ev.Line > 0 {
				fmt.Fprintf(w, ":%d", ev.Line)
			}
			fmt.Fprint(w, ")")
		}
		if ev.Error != "" {
			fmt.Fprintf(w, ": %s", oneLine(ev.Error, 200))
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "%s %s %s\n", at, subject, oneLine(string(data), 200))
	}
	return finished
}

// announceWatch tells on stderr, at once, which run watch waits for and
// what the RUNS bucket knows of it, so a mistyped or not yet started run id
// does not look like a hang. It returns the stored state (nil when there is
// none or it cannot be read).
func announceWatch(ctx context.Context, env Env, js jetstream.JetStream, runID string) *events.RunState {
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var st *events.RunState
	kv, err := js.KeyValue(cctx, events.BucketRuns)
	if err == nil {
		var e jetstream.KeyValueEntry
		if e, err = kv.Get(cctx, runID); err == nil {
			st = &events.RunState{}
			if err = events.Decode(e.Value(), st); err != nil {
				st = nil
			}
		}
	}
	switch {
	case st != nil:
		fmt.Fprintf(env.Stderr, "skillbus watch: run %s of %s is known (status %s); printing its events until it finishes (Ctrl-C to stop)\n", runID, st.Sequence, st.Status)
	case errors.Is(err, jetstream.ErrKeyNotFound):
		fmt.Fprintf(env.Stderr, "skillbus watch: waiting for run %s: no run %s is known yet; waiting for it to start (Ctrl-C to stop)\n", runID, runID)
	default:
		fmt.Fprintf(env.Stderr, "skillbus watch: waiting for run %s (its state in %s cannot be read: %v); waiting for its events (Ctrl-C to stop)\n", runID, events.BucketRuns, err)
	}
	return st
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/streamread"
)

func watchCommand() command {
	return command{
		summary: "print skillbus events live: runs, agent boots, registry changes",
		usage: `Usage: skillbus watch [RUN_ID] [-o json] [flags]

Without RUN_ID, prints every new event of the EVENTS stream as it happens
(run started / group finished / run finished, agent_ready, registry put,
delete, invalid, clash, warning and reverted; a warning's lines are printed
indented below it) until Ctrl-C. With RUN_ID, prints that run's
events from its start — also when it finished already — and exits when the
run finishes (succeeded: 0; failed or cancelled: 1); an interruption (its
worker stopped) and the resume by another worker are lines of their own,
and watch keeps waiting meanwhile. Schedule events say when the NATS server
refused a sequence's schedule. -o json (--json) prints each event as one
JSON line. Needs NATS_URL.
When the NATS server goes away (skillbus dev stopped or restarted), watch
says so on stderr, keeps reconnecting and resumes after the last event it
printed; after 30 s without a server it exits 1 (NATS unreachable).

Examples:
  skillbus watch
  skillbus watch run-Xq3... --json

Exit codes: 0 stopped by Ctrl-C, or the run succeeded; 1 the run failed (or
NATS is unreachable); 2 bad command line.
`,
		run:      runWatch,
		operands: operandRun,
	}
}

func runWatch(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "watch", watchCommand)
	out := outputFlags(fs, "json")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	asJSON := out.JSON()
	if len(pos) > 1 {
		fmt.Fprintf(env.Stderr, "skillbus watch: give at most one RUN_ID\n%s\n", helpHint("watch"))
		return ExitUsage
	}
	filter, from := events.SubjectEventsAll, uint64(0) // 0: new events only
	runID := ""
	if len(pos) == 1 {
		runID = pos[0]
		subj, err := events.RunEventSubject(runID, events.RunStarted)
		if err == nil {
			err = events.CheckRunID(runID)
		}
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus watch: %.80q is not a run id: %v\n", runID, err)
			return ExitUsage
		}
		filter, from = strings.TrimSuffix(subj, events.RunStarted)+">", 1
	}
	// Watch outlives server restarts: reconnect without limit, and give up
	// on our own after watchUnreachableAfter without a server.
	conn := make(chan connEvent, 16)
	send := func(ev connEvent) {
		select {
		case conn <- ev:
		default: // main is behind; the next event tells the state
		}
	}
	nc, err := connect(env, "watch",
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { send(connLost) }),
		nats.ReconnectHandler(func(*nats.Conn) { send(connBack) }),
		nats.ClosedHandler(func(*nats.Conn) { send(connClosed) }))
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus watch: %v\n", err)
		return connectExit(err)
	}
	// Nothing to flush: a short drain, so Ctrl-C ends watch at once even
	// while the server is gone.
	defer drainWait(nc, time.Second)
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus watch: %v\n", err)
		return ExitFailure
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	f, err := streamread.NewFollower(cctx, nc, streamread.FollowConfig{Stream: events.StreamEvents, Filters: []string{filter}, From: from, Poll: time.Second})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ExitOK
		}
		fmt.Fprintf(env.Stderr, "skillbus watch: cannot read the %s stream: %v (is a skillbus service running against NATS_URL? `skillbus dev` starts one)\n", events.StreamEvents, err)
		return ExitFailure
	}
	defer f.Close()
	r := &eventReader{f: f}
	var known *events.RunState
	if runID == "" {
		fmt.Fprintln(env.Stderr, "watching events (Ctrl-C to stop)…")
	} else {
		known = announceWatch(ctx, env, js, runID)
	}
	rctx, stop := context.WithCancel(ctx)
	items := make(chan watchItem)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		r.run(rctx, items)
	}()
	defer func() {
		stop()
		select {
		case <-readerDone:
		case <-time.After(2 * time.Second): // a fetch still waiting on a dead connection
		}
	}()

	seen := false
	var lost <-chan time.Time // set while disconnected
	for {
		select {
		case <-ctx.Done():
			return ExitOK
		case ev := <-conn:
			switch ev {
			case connLost:
				if lost == nil {
					fmt.Fprintf(env.Stderr, "skillbus watch: NATS connection lost; reconnecting… (giving up after %v)\n", watchUnreachableAfter)
					lost = time.After(watchUnreachableAfter)
				}
			case connBack:
				if lost != nil {
					fmt.Fprintf(env.Stderr, "skillbus watch: reconnected to NATS at %s; resuming\n", nc.ConnectedUrlRedacted())
					lost = nil
				}
			case connClosed:
				if ctx.Err() != nil {
					return ExitOK
				}
				fmt.Fprintln(env.Stderr, "skillbus watch: NATS unreachable: the connection was closed")
				return ExitFailure
			}
		case <-lost:
			fmt.Fprintf(env.Stderr, "skillbus watch: NATS unreachable: no server at %s (NATS_URL) for %v; start `skillbus dev` or check the URL\n", os.Getenv(EnvNATSURL), watchUnreachableAfter)
			return ExitFailure
		case it := <-items:
			if it.msg == nil {
				if !seen && known != nil && events.Finished(known.Status) {
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
			status := printEvent(env.Stdout, it.msg.Subject, it.msg.Data, asJSON)
			if runID != "" && status != "" {
				if status == events.StatusSucceeded {
					return ExitOK
				}
				return ExitFailure
			}
		}
	}
}

// watchUnreachableAfter is how long watch keeps reconnecting to a server
// that went away before it exits 1 ("NATS unreachable").
var watchUnreachableAfter = 30 * time.Second

// connEvent is a change of watch's NATS connection, sent by nats.go's
// handlers to watch's loop (which alone writes to stderr).
type connEvent int

const (
	connLost connEvent = iota + 1
	connBack
	connClosed
)

// watchItem is one event message for watch's loop, or (msg nil) word that
// a read waited without a message.
type watchItem struct {
	msg *streamread.Msg
}

// eventReader reads the EVENTS stream in order from a cursor, without a
// consumer (pkg/streamread: STREAM.MSG.GET, woken by the live core
// messages): after a lost connection or a restarted server it reads on
// from the message after the last one it passed on, so no event is lost
// or repeated, and every wait is bounded by the context, so watch stops
// promptly while disconnected.
type eventReader struct {
	f *streamread.Follower
}

// run reads until ctx ends, sending each message (and an empty item after
// each second without one) to out; a failed read is tried again half a
// second later from the same cursor.
func (r *eventReader) run(ctx context.Context, out chan<- watchItem) {
	emit := func(it watchItem) bool {
		select {
		case out <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for ctx.Err() == nil {
		msgs, err := r.f.Read(ctx, time.Second)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		for _, m := range msgs {
			if !emit(watchItem{msg: m}) {
				return
			}
		}
		if len(msgs) == 0 && !emit(watchItem{}) {
			return
		}
	}
}

// printEvent prints one event and returns the run status when it is a
// run-finished event ("" otherwise).
func printEvent(w io.Writer, subject string, data []byte, asJSON bool) string {
	var ev struct {
		events.RunEvent        // its Agent and BootID are also agent_ready's
		Op              string `json:"op"`
		Name            string `json:"name"`
		File            string `json:"file"`
		Line            int    `json:"line"`
		Kept            string `json:"kept"`
		Other           string `json:"other"`
	}
	_ = json.Unmarshal(data, &ev)
	finished := ""
	if strings.HasPrefix(subject, "events.run.") && ev.Kind == events.RunFinished {
		finished = ev.Status
	}
	if strings.HasPrefix(subject, "events.run.") && ev.Kind == events.RunCancelling && ev.Status == events.StatusCancelled {
		finished = ev.Status // cancelled while nobody held it
	}
	if asJSON {
		var v map[string]any
		if json.Unmarshal(data, &v) != nil {
			v = map[string]any{"raw": string(data)}
		}
		v["subject"] = subject
		b, _ := json.Marshal(v)
		fmt.Fprintf(rawWriter(w), "%s\n", b) // JSON lines, exact
		return finished
	}
	at := ev.At.Local().Format("15:04:05.000")
	if ev.At.IsZero() {
		at = time.Now().Format("15:04:05.000")
	}
	switch {
	case strings.HasPrefix(subject, "events.run."):
		fmt.Fprintf(w, "%s %s\n", at, eventLine(&ev.RunEvent))
	case strings.HasPrefix(subject, "events.schedule."):
		var se events.ScheduleEvent
		_ = json.Unmarshal(data, &se)
		fmt.Fprintf(w, "%s schedule %s\n", at, scheduleLine(&se))
	case strings.HasPrefix(subject, "events.agent_ready."):
		fmt.Fprintf(w, "%s agent_ready %s (boot %s)\n", at, ev.Agent, ev.BootID)
	case strings.HasPrefix(subject, "events.registry."):
		kind := strings.TrimPrefix(subject, "events.registry.")
		fmt.Fprintf(w, "%s registry %s", at, strings.ReplaceAll(kind, ".", " "))
		if ev.Name != "" {
			fmt.Fprintf(w, " %s", ev.Name)
		}
		if ev.File != "" {
			fmt.Fprintf(w, " (%s", ev.File)
			if ev.Line > 0 {
				fmt.Fprintf(w, ":%d", ev.Line)
			}
			fmt.Fprint(w, ")")
		}
		if ev.Error != "" {
			fmt.Fprintf(w, ": %s", oneLine(ev.Error, 1000)) // a tree that differs lists its files
		}
		fmt.Fprintln(w)
		fmt.Fprint(w, registryEventDetail(subject, data)) // warnings: devproblems.go
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
	// STREAM.MSG.GET, not a KV get: clients may not direct-get
	// (docs/security.md, "Reply subjects are not permissions").
	m, err := streamread.Last(cctx, js.Conn(), "KV_"+events.BucketRuns, "$KV."+events.BucketRuns+"."+runID)
	switch {
	case err == nil && (m == nil || m.Header.Get("KV-Operation") != ""):
		err = jetstream.ErrKeyNotFound // none, or deleted or purged
	case err == nil:
		st = &events.RunState{}
		if err = events.Decode(m.Data, st); err != nil {
			st = nil
		}
	}
	if st != nil {
		st.Normalize()
	}
	switch {
	case st != nil && st.Status == events.StatusInterrupted:
		fmt.Fprintf(env.Stderr, "skillbus watch: run %s of %s is interrupted after group %d of %d (worker %s stopped); waiting for a seqworker to resume it (Ctrl-C to stop)\n", runID, st.Sequence, st.FinishedGroups, st.Groups, st.Worker)
	case st != nil:
		fmt.Fprintf(env.Stderr, "skillbus watch: run %s of %s is known (status %s); printing its events until it finishes (Ctrl-C to stop)\n", runID, st.Sequence, st.Status)
	case errors.Is(err, jetstream.ErrKeyNotFound):
		fmt.Fprintf(env.Stderr, "skillbus watch: waiting for run %s: no run %s is known yet; waiting for it to start (Ctrl-C to stop)\n", runID, runID)
	default:
		fmt.Fprintf(env.Stderr, "skillbus watch: waiting for run %s (its state in %s cannot be read: %v); waiting for its events (Ctrl-C to stop)\n", runID, events.BucketRuns, err)
	}
	return st
}

// eventLine describes a run event on one line: what happened, on which
// worker, after which group.
func eventLine(ev *events.RunEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s: ", ev.RunID)
	switch ev.Kind {
	case events.RunStarted:
		fmt.Fprintf(&b, "%s started", ev.Sequence)
		if ev.Worker != "" {
			fmt.Fprintf(&b, " on worker %s", ev.Worker)
		}
		switch {
		case ev.Trigger == events.TriggerBoot && ev.Agent != "":
			fmt.Fprintf(&b, " (boot of agent %s, boot %s)", ev.Agent, ev.BootID)
		case ev.Trigger != "" && ev.Trigger != events.TriggerManual:
			fmt.Fprintf(&b, " (%s)", ev.Trigger)
		}
	case events.RunGroup:
		fmt.Fprintf(&b, "group %d %s %s", ev.Group, ev.GroupName, ev.Status)
		var gr seq.GroupResult
		if len(ev.Result) > 0 && json.Unmarshal(ev.Result, &gr) == nil {
			for ci, c := range gr.Calls {
				if c.ForEach != nil {
					fmt.Fprintf(&b, " (call %d %s for_each: %s)", ci+1, c.Tool, fanOutText(c.ForEach))
				}
			}
		}
		if ev.Error != "" {
			fmt.Fprintf(&b, ": %s", oneLine(ev.Error, 200))
		}
	case events.RunItems:
		fmt.Fprintf(&b, "group %d %s running", ev.Group, ev.GroupName)
		var gr seq.GroupResult
		if len(ev.Result) > 0 && json.Unmarshal(ev.Result, &gr) == nil {
			for ci, c := range gr.Calls {
				if c.ForEach != nil {
					fmt.Fprintf(&b, " (call %d %s for_each: %s)", ci+1, c.Tool, fanOutText(c.ForEach))
				}
			}
		}
	case events.RunInterrupted:
		fmt.Fprintf(&b, "interrupted on worker %s after group %d", ev.Worker, ev.Group)
		if ev.Groups > 0 {
			fmt.Fprintf(&b, " of %d", ev.Groups)
		}
		fmt.Fprint(&b, "; waiting for a seqworker to resume it")
		if ev.Error != "" {
			fmt.Fprintf(&b, " (%s)", oneLine(ev.Error, 200))
		}
	case events.RunResumed:
		fmt.Fprintf(&b, "resumed by worker %s after group %d", ev.Worker, ev.Group)
		if ev.Groups > 0 {
			fmt.Fprintf(&b, " of %d", ev.Groups)
		}
		fmt.Fprintf(&b, " (attempt %d)", ev.Attempt)
	case events.RunWaiting:
		fmt.Fprintf(&b, "waiting %s", oneLine(waitText(ev.RunID, ev.Wait, time.Now()), 400)) // runsignal.go
	case events.RunSignalled:
		what := "signalled"
		if ev.Wait != nil && ev.Wait.Signalled != nil && ev.Wait.Signalled.Reject {
			what = "rejected"
		}
		if ev.Wait != nil {
			fmt.Fprintf(&b, "%s %q at group %d %s", what, ev.Wait.Signal, ev.Group, ev.GroupName)
		} else {
			fmt.Fprint(&b, what)
		}
		if ev.By != "" {
			fmt.Fprintf(&b, " by %s", oneLine(ev.By, 100))
		}
		if ev.Reason != "" {
			fmt.Fprintf(&b, ": %s", oneLine(ev.Reason, 200))
		}
		fmt.Fprint(&b, "; a worker resumes it")
	case events.RunCancelling:
		fmt.Fprint(&b, "cancel requested")
		if ev.By != "" {
			fmt.Fprintf(&b, " by %s", ev.By)
		}
		if ev.Reason != "" {
			fmt.Fprintf(&b, ": %s", oneLine(ev.Reason, 200))
		}
		if ev.Status == events.StatusCancelled {
			fmt.Fprint(&b, "; cancelled (no worker held it)")
		} else if ev.Worker != "" {
			fmt.Fprintf(&b, "; worker %s stops it", ev.Worker)
		}
	default:
		fmt.Fprintf(&b, "%s %s", ev.Sequence, ev.Status)
		if ev.Error != "" {
			fmt.Fprintf(&b, ": %s", oneLine(ev.Error, 200))
		}
	}
	return b.String()
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

func runsCommand() command {
	return command{
		summary: "list, inspect, cancel, rerun, retry and signal runs (ls, show, cancel, rerun, retry, signal)",
		usage: `Usage: skillbus runs [ls] [--status S] [--sequence NAME] [--since DURATION] [--limit N] [--before CURSOR] [-o json|yaml|wide] [flags]
       skillbus runs show RUN_ID [--args] [-o json|yaml]
       skillbus runs cancel RUN_ID [--reason TEXT] [--by NAME] [--no-wait]
       skillbus runs rerun RUN_ID [--run-id NEW_ID]
       skillbus runs retry RUN_ID [--run-id NEW_ID] [--latest] [--from GROUP]
       skillbus runs signal RUN_ID NAME [--arg KEY=VALUE ...] [--args-file FILE] [--reject REASON] [--by NAME]

ls lists the runs kept in the RUNS bucket, newest first: id, sequence,
status (queued, running, waiting, interrupted, succeeded, failed, cancelled), trigger
(manual, boot, schedule, manual-tick, backfill, seq_call), groups finished, age. -o wide adds the
worker, the attempt and the error; -o json (or -o yaml) prints the page
as the seqworker's list reply (pkg/events SeqListReply). It shows
--limit runs (default 50, at most 1000) and prints the flag that shows the
next page.

show prints one run: its arguments, each group and call with status,
attempts, time and error, the arguments each call was sent after
substitution (one line each; --args prints them whole), its outputs (large
ones read from the object store), the worker that holds or held it, its
trigger and its times; -o json or -o yaml prints the run's state as stored
in the RUNS bucket.

cancel stops a run: a queued, interrupted or waiting run is cancelled at once; a
running one is stopped by the worker holding it (its tool calls are
canceled, no further group starts) — cancel waits up to 30 s for that
unless --no-wait. A cancelled run is reported as such (exit 0); a
succeeded or failed run cannot be cancelled (exit 1, with its status),
nor one that finishes on its own before the cancel reaches its worker.

rerun starts a new run with the same sequence and arguments and prints its
id; with --run-id it is idempotent: asked again, it prints the same id and
says that the run already exists.

retry continues a failed or cancelled run in a new run: from its first
group that did not finish, with its arguments and the finished groups'
slots (no tool of a finished group is called again), and the definition
the run ran — with --latest the stored one, refused when its signature
or its groups before that point differ. --from GROUP (a group's name, or
its number as show prints it) runs the run again from that group instead,
reusing only the groups before it: GROUP may be any group up to the first
one that did not finish, and a succeeded run may be retried with --from
(without it, a succeeded run is refused: there is nothing to continue).
The new run records retry_of; show prints the chain both ways.

signal delivers the signal NAME to a run waiting at a wait_for group
(show says what it waits for and since when): its values, given as run
arguments are (--arg KEY=VALUE, --args-file), must fit the wait's out
types; --reject REASON fails the group instead (an approval denied). The
first signal wins; a second one, or one to a run not waiting for NAME, is
refused (exit 1). The run resumes on any worker. Each subcommand takes only its own flags, before or after RUN_ID.
Needs NATS_URL. docs/runs.md describes run states and retention.

Flags:
  --status S        ls: only runs with this status
  --sequence NAME   ls: only runs of this sequence (NFC, as stored); a name
                    with no runs that is not stored is an error (did you mean)
  --since DURATION  ls: only runs created in the last DURATION (90m, 24h)
  --limit N         ls: page size (default 50, at most 1000)
  --before CURSOR   ls: the page after CURSOR (printed at the end of a page)
  -o FORMAT         ls: json, yaml or wide; show: json or yaml (--json: -o json)
  --args            show: the arguments each call was sent, whole and indented
  --reason TEXT     cancel: why (recorded in the run)
  --no-wait         cancel: do not wait for the worker to stop the run
  --run-id ID       rerun, retry: the new run's id (default a new one)
  --latest          retry: use the stored definition, not the one the run ran
  --from GROUP      retry: run again from GROUP (name or 1-based number),
                    reusing the groups before it; a succeeded run too
  --arg KEY=VALUE   signal: a value the signal brings (repeatable)
  --args-file FILE  signal: a JSON object of the signal's values (- reads standard input)
  --reject REASON   signal: reject the wait (the group fails with REASON)
  --by NAME         cancel, signal: who asks (default $USER)

Examples:
  skillbus runs
  skillbus runs ls --status failed --since 24h -o wide
  skillbus runs show run-Xq3... -o json
  skillbus runs show run-Xq3... --args
  skillbus runs cancel run-Xq3... --reason "wrong arguments"
  skillbus runs rerun run-Xq3...
  skillbus runs retry run-Xq3...
  skillbus runs retry run-Xq3... --from transform
  skillbus runs signal run-Xq3... approve --arg ok=true --arg note="go ahead"
  skillbus runs signal run-Xq3... approve --reject "not during the freeze"

Exit codes: 0 done (cancel: the run is cancelled, or was already); 1 no
such run, a succeeded or failed run cancelled, a run that did not stop
within 30 s, NATS or the seqworker unreachable; 2 bad command line.
`,
		run: runRunsList,
		subs: func() map[string]command {
			ls := runsSub("list the runs, newest first", operandNone, runRunsList)
			return map[string]command{
				"ls":     ls,
				"list":   ls,
				"show":   runsSub("show one run: arguments, groups, calls, outputs", operandRun, runRunsShow),
				"cancel": runsSub("cancel a queued or running run", operandLiveRun, runRunsCancel),
				"rerun":  runsSub("start a run again with the same sequence and arguments", operandRun, runRunsRerun),
				"retry":  runsSub("continue a failed or cancelled run from its first unfinished group", operandRun, runRunsRetry),
				"signal": runsSub("deliver a signal to a waiting run (approve or reject its wait)", operandRun, runRunsSignal), // runsignal.go
			}
		},
	}
}

// runsSub is a subcommand of runs; its usage is the runs usage.
func runsSub(summary string, operands operandKind, run func(context.Context, Env, []string) int) command {
	return command{summary: summary, usage: runsCommand().usage, run: run, operands: operands}
}

// runsUsage prints a usage error of a runs subcommand and where its usage
// is; exit 2.
func runsUsage(env Env, sub, format string, a ...any) int {
	name := strings.TrimSpace("runs " + sub)
	fmt.Fprintf(env.Stderr, "skillbus "+name+": "+format+"\n%s\n", append(a, helpHint(name))...)
	return ExitUsage
}

// runsID parses a runs subcommand that takes one RUN_ID; code >= 0 is the
// exit code of a bad command line.
func runsID(env Env, sub string, fs *flag.FlagSet, args []string) (id string, code int) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return "", flagExit(err)
	}
	if len(pos) != 1 {
		return "", runsUsage(env, sub, "give one RUN_ID (letters, digits, - and _, at most %d bytes), got %s", events.MaxRunIDLength, gotArgs(pos))
	}
	if err := events.CheckRunID(pos[0]); err != nil {
		return "", runsUsage(env, sub, "%s (`skillbus runs` lists the runs)", errtext.Error(err))
	}
	return pos[0], -1
}

func runRunsList(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "runs ls", runsCommand)
	statuses := []string{events.StatusQueued, events.StatusRunning, events.StatusWaiting, events.StatusInterrupted, events.StatusSucceeded, events.StatusFailed, events.StatusCancelled}
	status := choiceFlag(fs, "status", "", "only runs with this status: "+orList(statuses), statuses...)
	sequence := fs.String("sequence", "", "only runs of this sequence")
	since := fs.Duration("since", 0, "only runs created in the last DURATION")
	limit := fs.Int("limit", events.DefaultListLimit, "page size")
	before := fs.String("before", "", "the page after this cursor")
	out := outputFlags(fs, "json", "yaml", "wide")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 {
		return unknownSubcommand(env, "runs", pos, []string{"ls", "show", "cancel", "rerun", "retry", "signal"}, "ls, show RUN_ID, cancel RUN_ID, rerun RUN_ID, retry RUN_ID and signal RUN_ID NAME")
	}
	if *limit < 1 || *limit > events.MaxListLimit {
		return runsUsage(env, "ls", "--limit %d: want 1 to %d", *limit, events.MaxListLimit)
	}
	if *since < 0 {
		return runsUsage(env, "ls", "--since %v: want a positive duration such as 90m or 24h", *since)
	}
	if err := events.CheckListCursor(*before); err != nil {
		return runsUsage(env, "ls", "--before: %v", strings.TrimPrefix(err.Error(), events.ErrBadMessage.Error()+": "))
	}
	req := events.SeqListRequest{Status: *status, Sequence: seq.NormalizeName(*sequence), Limit: *limit, Before: *before}
	if *since > 0 {
		req.Since = time.Now().Add(-*since)
	}
	return withClient(env, "runs", func(c *client.Client) int { return runsList(ctx, env, c, req, out) })
}

func runRunsShow(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "runs show", runsCommand)
	out := outputFlags(fs, "json", "yaml")
	wholeArgs := fs.Bool("args", false, "print the arguments each call was sent whole and indented (by default one line each, cut at 160 characters)")
	id, code := runsID(env, "show", fs, args)
	if code >= 0 {
		return code
	}
	return withClient(env, "runs", func(c *client.Client) int { return runsShow(ctx, env, c, id, out, *wholeArgs) })
}

func runRunsCancel(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "runs cancel", runsCommand)
	reason := fs.String("reason", "", "why (recorded in the run)")
	by := fs.String("by", "", "who asks (default: $USER, the system user, the credentials' role, or the host)")
	noWait := fs.Bool("no-wait", false, "do not wait for the run to stop")
	id, code := runsID(env, "cancel", fs, args)
	if code >= 0 {
		return code
	}
	if msg := longText([2]string{"by", *by}, [2]string{"reason", *reason}); msg != "" {
		return runsUsage(env, "cancel", "%s", msg)
	}
	if *by == "" {
		*by = whoAsks(connSettings(env).Creds.V)
	}
	return withClient(env, "runs", func(c *client.Client) int { return runsCancel(ctx, env, c, id, *by, *reason, !*noWait) })
}

func runRunsRerun(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "runs rerun", runsCommand)
	newID := fs.String("run-id", "", "the new run's id")
	id, code := runsID(env, "rerun", fs, args)
	if code >= 0 {
		return code
	}
	if *newID != "" {
		if err := events.CheckRunID(*newID); err != nil {
			return runsUsage(env, "rerun", "--run-id: %s", errtext.Error(err))
		}
		if *newID == id {
			return runsUsage(env, "rerun", "--run-id %s is the run to rerun; give the new run an id of its own, or leave --run-id out for a new one", id)
		}
	}
	return withClient(env, "runs", func(c *client.Client) int { return runsRerun(ctx, env, c, id, *newID) })
}

func runRunsRetry(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "runs retry", runsCommand)
	newID := fs.String("run-id", "", "the new run's id")
	latest := fs.Bool("latest", false, "use the stored definition, not the one the run ran")
	from := fs.String("from", "", "the group to run again from: its name or 1-based number")
	id, code := runsID(env, "retry", fs, args)
	if code >= 0 {
		return code
	}
	fromSet := false
	fs.Visit(func(f *flag.Flag) { fromSet = fromSet || f.Name == "from" })
	if fromSet && strings.TrimSpace(*from) == "" {
		return runsUsage(env, "retry", "--from is empty; give a group's name or its number as `skillbus runs show %s` prints it", id)
	}
	if *newID != "" {
		if err := events.CheckRunID(*newID); err != nil {
			return runsUsage(env, "retry", "--run-id: %s", errtext.Error(err))
		}
		if *newID == id {
			return runsUsage(env, "retry", "--run-id %s is the run to retry; give the new run an id of its own, or leave --run-id out for a new one", id)
		}
	}
	return withClient(env, "runs", func(c *client.Client) int {
		var opts []client.RetryOption
		if *from != "" {
			opts = append(opts, client.WithRetryFrom(*from))
		}
		reply, err := c.RetryReply(ctx, id, *newID, *latest, opts...)
		if err != nil {
			// The seqworker decides what may be retried: its refusal is
			// said as it is, with its code (docs/runs.md, "Retry").
			code := ""
			if te := (*toolcall.Error)(nil); errors.As(err, &te) && te.Code != "" {
				code = " (code " + te.Code + ")"
			}
			fmt.Fprintf(env.Stderr, "skillbus runs retry: %v%s\n", describeClient(err, "list the failed runs with `skillbus runs --status failed`"), code)
			return ExitFailure
		}
		nid := reply.RunID
		fmt.Fprintln(env.Stdout, nid)
		if reply.Existing {
			retryExists(ctx, env, c, id, nid)
			return ExitOK
		}
		if *from != "" {
			fmt.Fprintf(env.Stderr, "skillbus runs retry: run %s runs %s again from group %s: the groups before it are reused (their tools are not called again), it and the groups after it run again; follow it with `skillbus watch %s`\n", nid, id, *from, nid)
			return ExitOK
		}
		fmt.Fprintf(env.Stderr, "skillbus runs retry: run %s continues %s from its first group that did not finish; follow it with `skillbus watch %s`\n", nid, id, nid)
		return ExitOK
	})
}

// retryExists says that the retry asked (`runs retry RUN --run-id NEW`
// asked again) exists already as run NEW, with its status: nothing new
// was started (docs/runs.md, "Retry").
func retryExists(ctx context.Context, env Env, c *client.Client, id, nid string) {
	status := ""
	if st, err := c.Status(ctx, nid); err == nil {
		status = "; " + st.Status
	}
	fmt.Fprintf(env.Stderr, "skillbus runs retry: run %s exists already (it retries %s%s); nothing new was started: see it with `skillbus runs show %s`, or leave --run-id out for a new retry\n", nid, id, status, nid)
}

// runsRerun asks for the rerun and says what happened: a new run started,
// or (a --run-id asked again) the run that already exists, with its status.
func runsRerun(ctx context.Context, env Env, c *client.Client, id, newID string) int {
	reply, err := c.RerunReply(ctx, id, newID)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus runs rerun: %v\n", describeClient(err, "list the runs with `skillbus runs`"))
		return ExitFailure
	}
	nid := reply.RunID
	fmt.Fprintln(env.Stdout, nid)
	if reply.Existing {
		status := ""
		if st, err := c.Status(ctx, nid); err == nil {
			status = " (" + st.Status + ")"
		}
		fmt.Fprintf(env.Stderr, "skillbus runs rerun: run %s already exists%s with this sequence and these arguments (a run id names one run); nothing new was started; see it with `skillbus runs show %s`, or leave --run-id out for a new run\n", nid, status, nid)
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "skillbus runs rerun: run %s started with the sequence and arguments of %s; follow it with `skillbus watch %s`\n", nid, id, nid)
	return ExitOK
}

// withClient runs fn with a pkg/client on a connection to NATS_URL.
func withClient(env Env, command string, fn func(c *client.Client) int) int {
	return withConn(env, command, func(nc *nats.Conn) int {
		c, err := client.New(nc, client.WithTimeout(requestTimeout))
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus %s: %v\n", command, err)
			return ExitFailure
		}
		return fn(c)
	})
}

func runsList(ctx context.Context, env Env, c *client.Client, req events.SeqListRequest, out *output) int {
	reply, err := c.List(ctx, req)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus runs: %v\n", describeClient(err, ""))
		return ExitFailure
	}
	if out.Structured(env.Stdout, reply) {
		return ExitOK
	}
	if len(reply.Runs) == 0 && req.Sequence != "" && req.Before == "" {
		if hint, stored := seqStored(ctx, c, req.Sequence); !stored {
			fmt.Fprintf(env.Stderr, "skillbus runs: no runs of sequence %q, and no sequence of that name is stored: %s\n", req.Sequence, hint)
			return ExitFailure
		}
	}
	tw := newTable(env.Stdout)
	head := "RUN ID\tSEQUENCE\tSTATUS\tTRIGGER\tGROUPS\tCREATED"
	if out.Wide() {
		head += "\tWORKER\tATTEMPT\tUPDATED\tERROR"
	}
	fmt.Fprintln(tw, head)
	now := time.Now()
	for _, r := range reply.Runs {
		groups := fmt.Sprintf("%d", r.FinishedGroups)
		if r.Groups > 0 {
			groups += fmt.Sprintf("/%d", r.Groups)
		}
		status := r.Status
		if r.Waiting != "" {
			status += " (" + r.Waiting + ")" // what it waits for, since when
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", r.RunID, r.Sequence, status, r.Trigger, groups, ago(now, r.CreatedAt))
		if out.Wide() {
			fmt.Fprintf(tw, "\t%s\t%d\t%s\t%s", r.Worker, r.Attempt, ago(now, r.UpdatedAt), errorLine(r.Error, 80))
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	if len(reply.Runs) == 0 {
		fmt.Fprintln(env.Stderr, "skillbus runs: no runs match (runs are kept for the RUNS retention, 7 days by default)")
	}
	if reply.Next != "" {
		fmt.Fprintf(env.Stderr, "%d of %d runs shown; the next page: skillbus runs ls --before '%s'%s\n", len(reply.Runs), reply.Total, reply.Next, sameFilters(req))
	}
	return ExitOK
}

// sameFilters repeats a list request's filters as flags.
func sameFilters(req events.SeqListRequest) string {
	var b strings.Builder
	if req.Status != "" {
		fmt.Fprintf(&b, " --status %s", req.Status)
	}
	if req.Sequence != "" {
		fmt.Fprintf(&b, " --sequence %s", req.Sequence)
	}
	if !req.Since.IsZero() {
		fmt.Fprintf(&b, " --since %s", time.Since(req.Since).Round(time.Minute))
	}
	if req.Limit != 0 && req.Limit != events.DefaultListLimit {
		fmt.Fprintf(&b, " --limit %d", req.Limit)
	}
	return b.String()
}

// ago says how long before now t was ("-" for the zero time).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02 15:04")
}

func runsShow(ctx context.Context, env Env, c *client.Client, id string, out *output, wholeArgs bool) int {
	st, err := c.Status(ctx, id)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus runs show: %v\n", describeClient(err, "list the runs with `skillbus runs`"))
		return ExitFailure
	}
	if out.Structured(env.Stdout, st) {
		return ExitOK
	}
	printRunDetails(env.Stdout, st)
	if len(st.SlotRefs) > 0 {
		if slots, err := c.Slots(ctx, st); err == nil {
			st.Slots = slots
		} else {
			fmt.Fprintf(env.Stderr, "skillbus runs show: large outputs not read: %v\n", err)
		}
	}
	var res seq.Result
	_ = json.Unmarshal(st.Result, &res)
	fmt.Fprintln(env.Stdout)
	printRunGroups(env.Stdout, st, &res)                              // runshow.go
	printSentArgs(env.Stdout, res.Groups, res.ArgsNotKept, wholeArgs) // runshow.go
	printSlots(env.Stdout, st.Slots, nil)
	return ExitOK
}

// printRunDetails prints a run's header: status, sequence, trigger, worker,
// attempt, times, cancel, error and arguments.
func printRunDetails(w io.Writer, st *events.RunState) {
	tw := newTable(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	tm := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("2006-01-02 15:04:05.000")
	}
	row("Run", st.RunID)
	row("Sequence", st.Sequence)
	row("Definition", definitionText(st.Definition)) // runshow.go
	groups := fmt.Sprintf("%d finished", st.FinishedGroups)
	if st.Groups > 0 {
		groups = fmt.Sprintf("%d of %d finished", st.FinishedGroups, st.Groups)
	}
	row("Status", st.Status+" ("+groups+")")
	if st.RetryOf != "" {
		row("Retry of", st.RetryOf+" (its finished groups are reused: `skillbus runs show "+st.RetryOf+"`)")
	}
	if len(st.RetriedBy) > 0 {
		row("Retried by", strings.Join(st.RetriedBy, ", "))
	}
	trig := st.Trigger
	if st.Agent != "" {
		trig += fmt.Sprintf(" (agent %s, boot %s)", st.Agent, st.BootID)
	}
	if !st.ScheduledAt.IsZero() {
		trig += " (tick of " + tm(st.ScheduledAt) + ")"
	}
	row("Trigger", trig)
	worker := st.Worker
	if worker != "" && st.Status == events.StatusRunning {
		worker += " (holds it; last heartbeat " + ago(time.Now(), st.Heartbeat) + ")"
	}
	if st.Status == events.StatusWaiting {
		worker = "none holds it while it waits (last: " + st.Worker + ")"
	}
	row("Worker", worker)
	row("Waiting", waitText(st.RunID, st.Wait, time.Now())) // runsignal.go
	if st.Attempt > 0 {
		row("Attempt", fmt.Sprintf("%d", st.Attempt))
	}
	row("Created", tm(st.CreatedAt))
	row("Started", tm(st.StartedAt))
	row("Interrupted", tm(st.Interrupted))
	row("Updated", tm(st.UpdatedAt))
	row("Finished", tm(st.FinishedAt))
	if d := runDuration(st); d > 0 {
		row("Took", roundDur(d).String()+" (first claim to final state)")
	}
	if c := st.Cancel; c != nil {
		row("Cancel", strings.TrimSpace(cancelLine(c)+" at "+tm(c.At)))
	}
	row("Error", st.Error)
	_ = tw.Flush()
	var args map[string]json.RawMessage
	if json.Unmarshal(st.Args, &args) == nil && len(args) > 0 {
		fmt.Fprintln(w, "\nArguments:")
		keys := make([]string, 0, len(args))
		for k := range args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s = %s\n", k, oneLine(string(args[k]), maxInlineValue))
		}
	}
}

func cancelLine(c *events.CancelInfo) string {
	s := "asked"
	if c.By != "" {
		s += " by " + c.By
	}
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// runsCancel cancels a run and says what became of it (docs/runs.md,
// Cancel). It reads the run's state first: a finished run is not asked
// again — a cancelled one is reported as such (exit 0), a succeeded or
// failed one cannot be cancelled (exit 1) — and it looks at the state the
// cancel left: a run that finished on its own before the cancel reached
// its worker is reported with its status (exit 1).
func runsCancel(ctx context.Context, env Env, c *client.Client, id, by, reason string, wait bool) int {
	const hint = "list the runs with `skillbus runs`"
	cur, err := c.Status(ctx, id)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus runs cancel: %v\n", describeClient(err, hint))
		return ExitFailure
	}
	if events.Finished(cur.Status) {
		return cancelledAlready(env, cur)
	}
	st, err := c.Cancel(ctx, id, by, reason)
	if err != nil {
		if errors.Is(err, client.ErrConflict) {
			// It finished between the read and the cancel.
			if now, serr := c.Status(ctx, id); serr == nil && events.Finished(now.Status) {
				return cancelledAlready(env, now)
			}
		}
		fmt.Fprintf(env.Stderr, "skillbus runs cancel: %v\n", describeClient(err, hint))
		return ExitFailure
	}
	if st.Status == events.StatusRunning {
		if !wait {
			fmt.Fprintf(env.Stdout, "run %s: cancel requested; worker %s stops it\n", id, st.Worker)
			return ExitOK
		}
		fmt.Fprintf(env.Stderr, "skillbus runs cancel: cancel requested; waiting for worker %s to stop run %s…\n", st.Worker, id)
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		final, err := c.Wait(wctx, id, client.WaitOptions{Poll: 500 * time.Millisecond})
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(env.Stderr, "skillbus runs cancel: run %s has not stopped after 30s; the cancel is recorded and its worker stops it at its next heartbeat or group; check with `skillbus runs show %s`\n", id, id)
				return ExitFailure
			}
			fmt.Fprintf(env.Stderr, "skillbus runs cancel: %s\n", errtext.Error(err))
			return ExitFailure
		}
		st = final
	}
	if st.Status != events.StatusCancelled {
		// It finished on its own before the cancel reached its worker.
		fmt.Fprintf(env.Stdout, "run %s %s\n", id, finishedText(st))
		fmt.Fprintf(env.Stderr, "skillbus runs cancel: run %s finished %s before the cancel reached its worker; nothing was cancelled\n", id, st.Status)
		return ExitFailure
	}
	if st.FinishedGroups == 0 {
		fmt.Fprintf(env.Stdout, "run %s cancelled before any group finished: %s\n", id, st.Error)
	} else {
		fmt.Fprintf(env.Stdout, "run %s cancelled after group %d: %s\n", id, st.FinishedGroups, st.Error)
	}
	return ExitOK
}

// cancelledAlready reports a cancel of a run that had finished: exit 0
// when it was cancelled already, 1 when it succeeded or failed.
func cancelledAlready(env Env, st *events.RunState) int {
	if st.Status == events.StatusCancelled {
		fmt.Fprintf(env.Stdout, "run %s was already cancelled %s\n", st.RunID, finishedText(st))
		return ExitOK
	}
	fmt.Fprintf(env.Stderr, "skillbus runs cancel: run %s already finished: %s %s; only a queued, running, waiting or interrupted run can be cancelled (rerun it with `skillbus runs rerun %s`)\n",
		st.RunID, st.Status, finishedText(st), st.RunID)
	return ExitFailure
}

// finishedText says when a finished run ended and how far it got:
// "at 2026-11-30 21:10:12 (2 of 3 groups finished): the error".
func finishedText(st *events.RunState) string {
	s := ""
	if !st.FinishedAt.IsZero() {
		s = "at " + st.FinishedAt.Local().Format("2006-01-02 15:04:05")
	}
	g := fmt.Sprintf("%d groups finished", st.FinishedGroups)
	if st.Groups > 0 {
		g = fmt.Sprintf("%d of %d groups finished", st.FinishedGroups, st.Groups)
	}
	s = strings.TrimSpace(s + " (" + g + ")")
	if st.Error != "" {
		s += ": " + errorLine(st.Error, 200)
	}
	return s
}

// whoAsks names the person or program behind a command for the record of
// a run (a cancel's "asked by"), since $USER is unset in containers and CI:
// $USER; else the system user of this process; else the role of the
// credentials file creds ("credentials of role runner"); else the host
// ("someone on HOST"); else "unknown (give --by)".
func whoAsks(creds string) string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if creds != "" {
		if role, err := natsconn.RoleOf(creds); err == nil && role != "" {
			return "credentials of role " + role
		}
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return "someone on " + h
	}
	return "unknown (give --by)"
}

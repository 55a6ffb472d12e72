package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

func schedulesCommand() command {
	return command{
		summary: "list, show, pause, unpause, trigger and backfill schedule entries (ls, show, pause, unpause, trigger, backfill)",
		usage: `Usage: skillbus schedules [ls] [--sequence NAME] [-o json|yaml|wide] [flags]
       skillbus schedules show NAME[/ENTRY] [-o json|yaml] [flags]
       skillbus schedules pause NAME[/ENTRY] --note TEXT [--overwrite] [--by NAME] [flags]
       skillbus schedules unpause NAME[/ENTRY] [--by NAME] [flags]
       skillbus schedules trigger NAME[/ENTRY] [--by NAME] [flags]
       skillbus schedules backfill NAME[/ENTRY] --from TIME --to TIME [--by NAME] [flags]

ls lists every entry of every scheduled sequence (a schedule string is one
entry named default): its next fire time in its own zone and in UTC, its
last run with status and time, its overlap policy, and whether it is paused
(with the note). -o wide adds the pattern, the counters of skipped, buffered
and dropped ticks, and the entry's current run; -o json (or yaml) prints the
seqworker's reply (pkg/events ScheduleListReply).

show prints one entry: its pattern, zone, arguments and policies, the next
10 fire times (as the NATS server fires them: daylight saving days
included), the current run and the buffered ticks, and the recent ticks
with what became of each (started, skipped, buffered, paused, dropped).

pause keeps an entry's ticks from running (each is dropped and recorded)
until unpause; the note says why and is shown by ls and show. Without
/ENTRY every entry of the sequence is paused. The pause is kept in the
SEQ_SCHEDULES bucket: every worker sees it, and it survives restarts.
Pausing an entry paused already keeps that pause and its note (who paused
it, when and why are printed); --overwrite replaces the note with yours.

trigger runs a tick now, through the entry's overlap policy (a run of the
entry still going: skipped, buffered or cancelled as the policy says), with
trigger manual-tick — also while the entry is paused.

backfill runs one tick per fire time of the entry from --from to --to (RFC
3339 times, both included), through its overlap policy (use an entry with
overlap buffer_all to run them one after another); at most 100 ticks, a
larger range is refused, and so is one that ends in the future (use trigger).
A tick whose run exists already is left out. An every entry's ticks count
from the last tick its schedule fired.

NAME/ENTRY may leave out /ENTRY when the sequence has one entry. Needs
NATS_URL. docs/sequences.md (Schedules) and docs/runs.md (Scheduled runs)
describe entries, overlap and the endpoints.

Flags:
  --sequence NAME   ls: only the entries of this sequence
  -o FORMAT         ls: json, yaml or wide; show: json or yaml (--json: -o json)
  --note TEXT       pause: why (shown with the entry)
  --overwrite       pause: replace the note of an entry paused already
  --by NAME         pause, unpause, trigger, backfill: who asks (default $USER)
  --from TIME       backfill: the first tick time (RFC 3339)
  --to TIME         backfill: the last tick time (RFC 3339)

Examples:
  skillbus schedules
  skillbus schedules show team-report/berlin
  skillbus schedules pause team-report/berlin --note "incident 42: API down"
  skillbus schedules unpause team-report/berlin
  skillbus schedules trigger nightly-deps-audit
  skillbus schedules backfill team-report/ops --from 2026-11-30T00:00:00Z --to 2026-11-30T12:00:00Z

Exit codes: 0 done; 1 no such sequence or entry, a backfill over its bound,
NATS or the seqworker unreachable; 2 bad command line.
`,
		run: runSchedulesList,
		subs: func() map[string]command {
			ls := schedSub("list every schedule entry", runSchedulesList)
			return map[string]command{
				"ls":       ls,
				"list":     ls,
				"show":     schedSub("show one entry: next fire times, current, buffered and recent ticks", runSchedulesShow),
				"pause":    schedSub("pause an entry, with a note", func(ctx context.Context, env Env, args []string) int { return runSchedulesPause(ctx, env, args, true) }),
				"unpause":  schedSub("unpause an entry", func(ctx context.Context, env Env, args []string) int { return runSchedulesPause(ctx, env, args, false) }),
				"trigger":  schedSub("run a tick of an entry now, through its overlap policy", runSchedulesTrigger),
				"backfill": schedSub("run the ticks of an entry in a time range, through its overlap policy", runSchedulesBackfill),
			}
		},
	}
}

// schedSub is a subcommand of schedules; its usage is the schedules usage.
func schedSub(summary string, run func(context.Context, Env, []string) int) command {
	return command{summary: summary, usage: schedulesCommand().usage, run: run, operands: operandSeq}
}

func schedUsage(env Env, sub, format string, a ...any) int {
	name := strings.TrimSpace("schedules " + sub)
	fmt.Fprintf(env.Stderr, "skillbus "+name+": "+format+"\n%s\n", append(a, helpHint(name))...)
	return ExitUsage
}

// schedRef parses the one NAME[/ENTRY] operand of a subcommand.
func schedRef(env Env, sub string, pos []string) (name, entry string, code int) {
	if len(pos) != 1 {
		return "", "", schedUsage(env, sub, "give one NAME[/ENTRY], got %s", gotArgs(pos))
	}
	name, entry, _ = strings.Cut(pos[0], "/")
	name = seq.NormalizeName(name)
	if err := seq.CheckName(name); err != nil {
		return "", "", schedUsage(env, sub, "%v", err)
	}
	if entry != "" {
		if err := events.CheckEntryName(entry); err != nil {
			return "", "", schedUsage(env, sub, "entry %q: %s", entry, seq.EntryNameRule)
		}
	}
	return name, entry, -1
}

func runSchedulesList(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "schedules ls", schedulesCommand)
	sequence := fs.String("sequence", "", "only the entries of this sequence")
	out := outputFlags(fs, "json", "yaml", "wide")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 0 {
		return unknownSubcommand(env, "schedules", pos, []string{"ls", "show", "pause", "unpause", "trigger", "backfill"}, "ls, show, pause, unpause, trigger and backfill")
	}
	return withClient(env, "schedules", func(c *client.Client) int {
		reply, err := c.Schedules(ctx, seq.NormalizeName(*sequence))
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus schedules: %v\n", describeClient(err, ""))
			return ExitFailure
		}
		if out.Structured(env.Stdout, reply) {
			return ExitOK
		}
		printSchedules(env, reply, out.Wide())
		return ExitOK
	})
}

// printSchedules prints the entries' table.
func printSchedules(env Env, reply *events.ScheduleListReply, wide bool) {
	tw := newTable(env.Stdout)
	head := "ENTRY\tNEXT (ZONE)\tNEXT (UTC)\tLAST RUN\tSTATUS\tLAST\tOVERLAP\tPAUSED"
	if wide {
		head += "\tPATTERN\tSKIPPED\tBUFFERED\tDROPPED\tCURRENT"
	}
	fmt.Fprintln(tw, head)
	now := time.Now()
	for _, e := range reply.Entries {
		st := e.State
		if st == nil {
			st = &events.ScheduleState{}
		}
		zoned, utc := "-", "-"
		if len(e.Next) > 0 {
			zoned, utc = inZone(e.Next[0], e.TimeZone), e.Next[0].UTC().Format("2006-01-02 15:04:05Z")
		}
		last, status := "-", "-"
		if st.LastRun != "" {
			last, status = st.LastRun, st.LastStatus
		}
		paused := "no"
		if st.Paused {
			paused = "yes"
			if st.Note != "" {
				paused += ": " + oneLine(st.Note, 60)
			}
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", e.Sequence, e.Entry, zoned, utc, last, status, ago(now, st.LastAt), e.Overlap, paused)
		if wide {
			cur := "-"
			if len(st.Current) > 0 {
				cur = st.Current[0].RunID
			}
			fmt.Fprintf(tw, "\t%s\t%d\t%d\t%d\t%s", e.Pattern, st.Skipped, len(st.Buffered), st.Dropped, cur)
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	if len(reply.Entries) == 0 {
		fmt.Fprintln(env.Stderr, "skillbus schedules: no scheduled sequences (a sequence runs on a schedule with `schedule:`, docs/sequences.md)")
	}
}

// inZone writes t in the IANA zone tz ("" = UTC) with the zone's
// abbreviation.
func inZone(t time.Time, tz string) string {
	loc := time.UTC
	if tz != "" {
		if l, err := time.LoadLocation(tz); err == nil {
			loc = l
		}
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

func runSchedulesShow(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "schedules show", schedulesCommand)
	out := outputFlags(fs, "json", "yaml")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	name, entry, code := schedRef(env, "show", pos)
	if code >= 0 {
		return code
	}
	return withClient(env, "schedules", func(c *client.Client) int {
		info, err := c.Schedule(ctx, name, entry)
		if err != nil {
			return schedError(ctx, env, c, "show", name, entry, err)
		}
		if out.Structured(env.Stdout, info) {
			return ExitOK
		}
		printSchedule(env, info)
		return ExitOK
	})
}

// listEntriesHint is the hint under a schedule entry that is not found.
const listEntriesHint = "list the entries with `skillbus schedules`"

// schedHint is the not-found hint for NAME[/ENTRY] (schedules show,
// pause, unpause, trigger, backfill): the scheduled sequence name closest
// to name when no scheduled sequence has that name, else the closest of
// its entries to entry, written NAME/ENTRY — `did you mean
// "team-report/berlin"? (list the entries with ...)` — or only the listing
// hint when none is near or the seqworker does not list them.
func schedHint(ctx context.Context, c *client.Client, name, entry string) string {
	reply, err := c.Schedules(ctx, "")
	if err != nil {
		return listEntriesHint
	}
	var seqs, entries []string
	for _, e := range reply.Entries {
		if len(seqs) == 0 || seqs[len(seqs)-1] != e.Sequence { // ordered by sequence
			seqs = append(seqs, e.Sequence)
		}
		if e.Sequence == name {
			entries = append(entries, e.Entry)
		}
	}
	if len(entries) == 0 {
		return withDidYouMean(name, seqs, listEntriesHint)
	}
	if sg := suggest.Closest(entry, entries); entry != "" && sg != "" && sg != entry {
		return fmt.Sprintf("did you mean %q? (%s)", name+"/"+sg, listEntriesHint)
	}
	return listEntriesHint
}

// schedError prints the error of a schedules subcommand's request, with
// schedHint when the sequence or entry is not found.
func schedError(ctx context.Context, env Env, c *client.Client, sub, name, entry string, err error) int {
	hint := listEntriesHint
	if errors.Is(err, client.ErrNotFound) {
		hint = schedHint(ctx, c, name, entry)
	}
	msg := describeClient(err, hint)
	if hint != listEntriesHint && !strings.Contains(msg, hint) {
		msg += "; " + hint // describeClient leaves a hint out after a message that gives one
	}
	fmt.Fprintf(env.Stderr, "skillbus schedules %s: %s\n", sub, msg)
	return ExitFailure
}

// printSchedule prints one entry as show does.
func printSchedule(env Env, info *events.ScheduleInfo) {
	w := env.Stdout
	st := info.State
	if st == nil {
		st = &events.ScheduleState{}
	}
	zone := info.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	fmt.Fprintf(w, "%s/%s\n  schedule: %s (%s)\n  overlap:  %s\n", info.Sequence, info.Entry, info.Pattern, zone, info.Overlap)
	if len(info.Args) > 0 {
		fmt.Fprintf(w, "  args:     %s\n", info.Args)
	}
	fmt.Fprintf(w, "  jitter:   %s\n", orText(info.Jitter, "none"))
	fmt.Fprintf(w, "  catchup_window: %s\n", orText(info.CatchupWindow, "none (after an outage the server fires one tick)"))
	if info.PauseOnFailure > 0 {
		fmt.Fprintf(w, "  pause_on_failure: after %d consecutive failed runs\n", info.PauseOnFailure)
	} else {
		fmt.Fprintln(w, "  pause_on_failure: never")
	}
	if !info.StartAt.IsZero() {
		fmt.Fprintf(w, "  start_at: %s\n", info.StartAt.UTC().Format(time.RFC3339))
	}
	if !info.EndAt.IsZero() {
		fmt.Fprintf(w, "  end_at:   %s\n", info.EndAt.UTC().Format(time.RFC3339))
	}
	if st.Paused {
		fmt.Fprintf(w, "  paused:   yes, by %s at %s: %s\n", orDash(st.PausedBy), st.PausedAt.Format(time.RFC3339), orDash(st.Note))
	} else {
		fmt.Fprintln(w, "  paused:   no")
	}
	if st.LastRun != "" {
		fmt.Fprintf(w, "  last run: %s %s at %s\n", st.LastRun, st.LastStatus, st.LastAt.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "  ticks:    %d started, %d skipped, %d buffered, %d dropped, %d lost; %d consecutive failures\n", st.Started, st.Skipped, st.Buffers, st.Dropped, st.Missed, st.ConsecutiveFailures)
	fmt.Fprintln(w, "\nnext fire times:")
	for _, t := range info.Next {
		fmt.Fprintf(w, "  %s  (%s)\n", inZone(t, info.TimeZone), t.UTC().Format(time.RFC3339))
	}
	if len(st.Current) > 0 {
		fmt.Fprintln(w, "\ncurrent runs:")
		for _, r := range st.Current {
			fmt.Fprintf(w, "  %s  tick %s  %s\n", r.RunID, r.At.Format(time.RFC3339), r.Trigger)
		}
	}
	if len(st.Buffered) > 0 {
		fmt.Fprintln(w, "\nbuffered ticks:")
		for _, b := range st.Buffered {
			fmt.Fprintf(w, "  %s  tick %s\n", b.RunID, b.At.Format(time.RFC3339))
		}
	}
	if len(st.Recent) > 0 {
		fmt.Fprintln(w, "\nrecent ticks:")
		tw := newTable(w)
		for i := len(st.Recent) - 1; i >= 0; i-- {
			r := st.Recent[i]
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", r.At.Format(time.RFC3339), r.Outcome, r.RunID, oneLine(r.Why, 100))
		}
		_ = tw.Flush()
	}
}

func runSchedulesPause(ctx context.Context, env Env, args []string, pause bool) int {
	sub := "unpause"
	if pause {
		sub = "pause"
	}
	fs := newFlags(env, "schedules "+sub, schedulesCommand)
	note := fs.String("note", "", "why (shown with the entry)")
	by := fs.String("by", "", "who asks (default $USER)")
	var overwrite *bool
	if pause {
		overwrite = fs.Bool("overwrite", false, "replace the note of an entry paused already")
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	name, entry, code := schedRef(env, sub, pos)
	if code >= 0 {
		return code
	}
	if pause && strings.TrimSpace(*note) == "" {
		return schedUsage(env, sub, "--note TEXT is required: say why the entry is paused (shown to whoever looks at it)")
	}
	if msg := longText([2]string{"note", *note}, [2]string{"by", *by}); msg != "" {
		return schedUsage(env, sub, "%s", msg)
	}
	if *by == "" {
		*by = whoAsks(connSettings(env).Creds.V)
	}
	return withClient(env, "schedules", func(c *client.Client) int {
		var reply *events.ScheduleListReply
		if pause {
			var opts []client.PauseOption
			if *overwrite {
				opts = append(opts, client.WithOverwrite())
			}
			reply, err = c.PauseSchedule(ctx, name, entry, *note, *by, opts...)
		} else {
			reply, err = c.UnpauseSchedule(ctx, name, entry, *by)
		}
		if err != nil {
			return schedError(ctx, env, c, sub, name, entry, err)
		}
		for _, e := range reply.Entries {
			printPaused(env, sub, &e, *note, overwrite != nil && *overwrite)
		}
		return ExitOK
	})
}

// printPaused says what a pause or unpause did to an entry: on stdout
// "NAME/ENTRY paused" (or unpaused, not paused, already paused, paused
// (note replaced)); for an entry paused already, on stderr who paused it,
// when and with which note, and whether that note stays; for an unpause
// of an entry not paused, that nothing changed (docs/runs.md, "Scheduled
// runs").
func printPaused(env Env, sub string, e *events.ScheduleInfo, note string, overwrite bool) {
	ref := e.Sequence + "/" + e.Entry
	pb := e.PausedBefore
	switch {
	case sub == "unpause" && pb == nil && e.State != nil && !e.State.Paused:
		fmt.Fprintf(env.Stdout, "%s not paused\n", ref)
		fmt.Fprintf(env.Stderr, "skillbus schedules unpause: %s was not paused; nothing changed\n", ref)
		return
	case sub == "unpause", pb == nil:
		// An unpause that ended a pause, or from an older seqworker that
		// does not say; a pause of an entry not paused before.
		fmt.Fprintf(env.Stdout, "%s %sd\n", ref, sub)
		return
	}
	was := fmt.Sprintf("%s was already paused by %s at %s with the note %q", ref, orDash(pb.By), pb.At.Format(time.RFC3339), oneLine(pb.Note, 200))
	if overwrite {
		fmt.Fprintf(env.Stdout, "%s paused (note replaced)\n", ref)
		fmt.Fprintf(env.Stderr, "skillbus schedules pause: %s; --overwrite replaced it\n", was)
		return
	}
	fmt.Fprintf(env.Stdout, "%s already paused\n", ref)
	if pb.Note == note {
		fmt.Fprintf(env.Stderr, "skillbus schedules pause: %s; nothing changed\n", was)
		return
	}
	fmt.Fprintf(env.Stderr, "skillbus schedules pause: %s; that pause and its note stay (yours was not stored): add --overwrite to replace the note, or unpause first\n", was)
}

func runSchedulesTrigger(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "schedules trigger", schedulesCommand)
	by := fs.String("by", "", "who asks (default $USER)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	name, entry, code := schedRef(env, "trigger", pos)
	if code >= 0 {
		return code
	}
	if msg := longText([2]string{"by", *by}); msg != "" {
		return schedUsage(env, "trigger", "%s", msg)
	}
	if *by == "" {
		*by = whoAsks(connSettings(env).Creds.V)
	}
	return withClient(env, "schedules", func(c *client.Client) int {
		reply, err := c.TriggerSchedule(ctx, name, entry, *by)
		if err != nil {
			return schedError(ctx, env, c, "trigger", name, entry, err)
		}
		printTicks(env, "trigger", reply)
		return ExitOK
	})
}

func runSchedulesBackfill(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "schedules backfill", schedulesCommand)
	by := fs.String("by", "", "who asks (default $USER)")
	from := fs.String("from", "", "the first tick time (RFC 3339)")
	to := fs.String("to", "", "the last tick time (RFC 3339)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	name, entry, code := schedRef(env, "backfill", pos)
	if code >= 0 {
		return code
	}
	if msg := longText([2]string{"by", *by}); msg != "" {
		return schedUsage(env, "backfill", "%s", msg)
	}
	f, err1 := time.Parse(time.RFC3339, *from)
	t, err2 := time.Parse(time.RFC3339, *to)
	switch {
	case *from == "":
		return schedUsage(env, "backfill", "--from is required: the first tick time of the range, an RFC 3339 time such as 2026-11-30T00:00:00Z")
	case *to == "":
		return schedUsage(env, "backfill", "--to is required: the last tick time of the range, an RFC 3339 time such as 2026-11-30T12:00:00Z (at most now: a tick to come is run with trigger)")
	case err1 != nil:
		return schedUsage(env, "backfill", "--from %q: want an RFC 3339 time such as 2026-11-30T00:00:00Z", *from)
	case err2 != nil:
		return schedUsage(env, "backfill", "--to %q: want an RFC 3339 time such as 2026-11-30T12:00:00Z", *to)
	case t.Before(f):
		return schedUsage(env, "backfill", "--to %s is before --from %s (both ends are included: the same time for one tick)", *to, *from)
	}
	if *by == "" {
		*by = whoAsks(connSettings(env).Creds.V)
	}
	return withClient(env, "schedules", func(c *client.Client) int {
		reply, err := c.BackfillSchedule(ctx, name, entry, f, t, *by)
		if err != nil {
			return schedError(ctx, env, c, "backfill", name, entry, err)
		}
		printTicks(env, "backfill", reply)
		return ExitOK
	})
}

// printTicks prints what became of each tick of a trigger or backfill:
// on stdout the run id of each tick that runs — started, or started once
// the run it cancelled stops (overlap cancel_other) — every time; on
// stderr what became of every tick that did not start at once.
func printTicks(env Env, sub string, reply *events.ScheduleTriggerReply) {
	for _, t := range reply.Ticks {
		switch t.Outcome {
		case events.TickStarted:
			fmt.Fprintln(env.Stdout, t.RunID)
			continue
		case events.TickCancelled:
			fmt.Fprintln(env.Stdout, t.RunID)
		}
		fmt.Fprintf(env.Stderr, "skillbus schedules %s: tick %s (%s) %s: %s\n", sub, t.At.Format(time.RFC3339), t.RunID, t.Outcome, orDash(t.Why))
	}
	if len(reply.Ticks) == 0 {
		fmt.Fprintf(env.Stderr, "skillbus schedules %s: no tick in the range\n", sub)
	}
}

// entryArgsText is ", args {...}" for an entry with run arguments, else "".
func entryArgsText(e seq.ScheduleEntry) string {
	if a := e.ArgsJSON(); len(a) > 0 {
		return ", args " + string(a)
	}
	return ""
}

// orText is s, or none when s is "".
func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/streamread"
)

// registryProblemSubjects are the registry events `skillbus dev` reports on
// stderr: a file that failed validation and one fixed since, two files
// defining one name, a file that loaded with warnings, and a write to
// SKILLS or SEQUENCES that the registry undid.
var registryProblemSubjects = []string{
	"events.registry.*." + events.OpInvalid,
	"events.registry.*." + events.OpFixed,
	"events.registry.*." + events.OpClash,
	"events.registry.*." + events.OpWarning,
	"events.registry.*." + events.OpReverted,
	events.SubjectScheduleEventsAll, // a schedule the NATS server refused
}

// reportRegistryProblems prints on w, one readable line each, the
// registry's invalid, fixed, clash, warning and reverted events (README.md,
// "skillbus dev") published since since on the EVENTS stream of the NATS
// server at url — those of the first load as well as those of later edits
// — until the returned stop is called:
//
//	skillbus dev: invalid seqs/a.seq.yaml:4: group 1 "g": tool 1 "x": ...
//	skillbus dev: fixed seqs/a.seq.yaml: sequence "a" loads again
//	skillbus dev: warning skills/pdf/SKILL.md:4: unknown field "allowed_tools" is ignored; ...
//	skillbus dev: clash: group name "fetch" is defined by both a.seq.yaml and b.seq.yaml; keeping ...
//	skillbus dev: reverted: SKILLS/pdf was written at revision 12 ...
//
// Errors: the connection or the reader cannot be set up (the EVENTS
// stream is provisioned by the registry at start).
func reportRegistryProblems(ctx context.Context, w io.Writer, url string, since time.Time, opts ...nats.Option) (stop func(), err error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("skillbus dev registry problems")}, opts...)...)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	// No consumer: a client role may not create one (pkg/streamread).
	f, err := streamread.NewFollower(cctx, nc, streamread.FollowConfig{Stream: events.StreamEvents, Filters: registryProblemSubjects, Since: since, Poll: time.Second})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("read the registry's events on %s: %v", events.StreamEvents, err)
	}
	rctx, stopRead := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rctx.Err() == nil {
			msgs, err := f.Read(rctx, time.Minute)
			if err != nil {
				select {
				case <-rctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
				continue
			}
			for _, m := range msgs {
				if strings.HasPrefix(m.Subject, "events.schedule.") {
					fmt.Fprint(w, scheduleProblemText(m.Data))
					continue
				}
				fmt.Fprint(w, registryProblemText(m.Data))
			}
		}
	}()
	return func() {
		stopRead()
		<-done
		f.Close()
		nc.Close()
	}, nil
}

// registryProblemText renders one registry event as `skillbus dev` lines:
// one line per problem of an invalid file ("skillbus dev: invalid
// FILE:LINE: message"; the registry joins a file's problems with
// newlines), the first carrying the note that the last good version is
// kept; "skillbus dev: fixed FILE: sequence NAME loads again" for a file
// valid again; one "skillbus dev: warning FILE:LINE: message" per warning;
// one line for a clash or a reverted write. Other events render as "".
func registryProblemText(data []byte) string {
	var ev events.RegistryEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Sprintf("skillbus dev: unreadable registry event: %s\n", oneLine(string(data), 200))
	}
	var b strings.Builder
	switch ev.Op {
	case events.OpInvalid:
		kept := ""
		if ev.Kept != "" {
			kept = fmt.Sprintf(" (keeping the last good version of %s until %s is fixed)", ev.Name, ev.File)
		}
		for _, l := range strings.Split(strings.TrimSpace(ev.Error), "\n") {
			if l = strings.TrimSpace(l); l == "" {
				continue
			}
			if ev.File != "" && !strings.HasPrefix(l, ev.File) {
				l = ev.File + ": " + l
			}
			fmt.Fprintf(&b, "skillbus dev: invalid %s%s\n", l, kept)
			kept = ""
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "skillbus dev: invalid %s%s\n", ev.File, kept)
		}
		writeWarnings(&b, "skillbus dev: warning ", ev)
	case events.OpFixed:
		fmt.Fprintf(&b, "skillbus dev: fixed %s: %s %q loads again\n", ev.File, ev.Kind, ev.Name)
	case events.OpWarning:
		writeWarnings(&b, "skillbus dev: warning ", ev)
	case events.OpClash:
		msg := ev.Error
		if msg == "" {
			msg = fmt.Sprintf("%s %q is defined by both %s and %s; keeping %s", ev.Kind, ev.Name, ev.Kept, ev.File, ev.Kept)
		}
		fmt.Fprintf(&b, "skillbus dev: clash: %s\n", oneLine(msg, 400))
	case events.OpReverted:
		fmt.Fprintf(&b, "skillbus dev: reverted: %s\n", oneLine(ev.Error, 400))
	}
	return b.String()
}

// writeWarnings writes one line per warning of ev, each after prefix.
func writeWarnings(b *strings.Builder, prefix string, ev events.RegistryEvent) {
	for _, l := range ev.Warnings {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if ev.File != "" && !strings.HasPrefix(l, ev.File) {
			l = ev.File + ": " + l
		}
		fmt.Fprintf(b, "%s%s\n", prefix, oneLine(l, 400))
	}
}

// registryEventDetail is what `skillbus watch` prints under a registry
// event's line: its warnings, one indented "warning: FILE:LINE: message"
// line each ("" when it has none, or for other events).
func registryEventDetail(subject string, data []byte) string {
	if !strings.HasPrefix(subject, "events.registry.") {
		return ""
	}
	var ev events.RegistryEvent
	if json.Unmarshal(data, &ev) != nil || len(ev.Warnings) == 0 {
		return ""
	}
	var b strings.Builder
	writeWarnings(&b, "    warning: ", ev)
	return b.String()
}

// scheduleProblemText renders a refused schedule (a schedule event) as
// "skillbus dev: schedule refused: ..."; a schedule that was set prints
// nothing.
func scheduleProblemText(data []byte) string {
	var ev events.ScheduleEvent
	if err := json.Unmarshal(data, &ev); err != nil || ev.Status != events.ScheduleRefused {
		return ""
	}
	return "skillbus dev: schedule refused: " + scheduleLine(&ev) + "\n"
}

// scheduleLine describes a schedule event on one line.
func scheduleLine(ev *events.ScheduleEvent) string {
	zone := ""
	if ev.TimeZone != "" {
		zone = " in " + ev.TimeZone
	}
	if ev.RunID != "" { // a tick that did not run now (docs/sequences.md, Overlap)
		return fmt.Sprintf("sequence %s/%s: tick %s (%s) %s: %s", ev.Sequence, ev.Entry, ev.TickAt.UTC().Format(time.RFC3339), ev.RunID, ev.Status, oneLine(ev.Error, 200))
	}
	if ev.Entry != "" {
		zone += ", entry " + ev.Entry
	}
	if ev.Status == events.ScheduleRefused {
		return fmt.Sprintf("sequence %s: the NATS server refused its schedule %q%s (%s); it does not run on its own until the schedule is fixed", ev.Sequence, ev.Schedule, zone, oneLine(ev.Error, 200))
	}
	return fmt.Sprintf("sequence %s: schedule %q%s set", ev.Sequence, ev.Schedule, zone)
}

// scheduleState reads what the NATS server last made of the schedule of
// the stored sequence name (the last schedule event on EVENTS) and
// describes it; "" when it cannot be read or there is none.
func scheduleState(ctx context.Context, env Env, name string) string {
	subj, err := events.ScheduleEventSubject(name)
	if err != nil {
		return ""
	}
	nc, err := connect(env, "seqs")
	if err != nil {
		return ""
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return ""
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	s, err := js.Stream(cctx, events.StreamEvents)
	if err != nil {
		return ""
	}
	m, err := s.GetLastMsgForSubject(cctx, subj)
	if err != nil {
		return ""
	}
	var ev events.ScheduleEvent
	if json.Unmarshal(m.Data, &ev) != nil {
		return ""
	}
	return scheduleLine(&ev)
}

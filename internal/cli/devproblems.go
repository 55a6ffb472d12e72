package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
)

// registryProblemSubjects are the registry events `skillbus dev` reports on
// stderr: a file that failed validation and two files defining one name.
var registryProblemSubjects = []string{
	"events.registry.*." + events.OpInvalid,
	"events.registry.*." + events.OpClash,
	events.SubjectScheduleEventsAll, // a schedule the NATS server refused
}

// reportRegistryProblems prints on w, one readable line each, the registry's
// invalid and clash events (DESIGN.md §3) published since since on the
// EVENTS stream of the NATS server at url — those of the first load as well
// as those of later edits — until the returned stop is called:
//
//	skillbus dev: invalid seqs/a.seq.yaml:4: group 1 "g": tool 1 "x": ...
//	skillbus dev: clash: sequence group "fetch" is defined by both a.seq.yaml and b.seq.yaml; keeping ...
//
// Errors: the connection or the consumer cannot be set up (the EVENTS
// stream is provisioned by the registry at start).
func reportRegistryProblems(ctx context.Context, w io.Writer, url string, since time.Time) (stop func(), err error) {
	nc, err := nats.Connect(url, nats.Name("skillbus dev registry problems"))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	cons, err := js.OrderedConsumer(cctx, events.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: registryProblemSubjects,
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &since,
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("read the registry's events on %s: %v", events.StreamEvents, err)
	}
	var mu sync.Mutex
	cc, err := cons.Consume(func(m jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(m.Subject(), "events.schedule.") {
			fmt.Fprint(w, scheduleProblemText(m.Data()))
			return
		}
		fmt.Fprint(w, registryProblemText(m.Data()))
	})
	if err != nil {
		nc.Close()
		return nil, err
	}
	return func() {
		cc.Stop()
		nc.Close()
	}, nil
}

// registryProblemText renders one invalid or clash event as lines
// "skillbus dev: invalid FILE:LINE: message" (one per problem; the registry
// joins a file's problems with newlines) or "skillbus dev: clash: ...".
func registryProblemText(data []byte) string {
	var ev events.RegistryEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Sprintf("skillbus dev: unreadable registry event: %s\n", oneLine(string(data), 200))
	}
	var b strings.Builder
	switch ev.Op {
	case events.OpInvalid:
		lines := strings.Split(strings.TrimSpace(ev.Error), "\n")
		for _, l := range lines {
			if l = strings.TrimSpace(l); l == "" {
				continue
			}
			if ev.File != "" && !strings.HasPrefix(l, ev.File) {
				l = ev.File + ": " + l
			}
			fmt.Fprintf(&b, "skillbus dev: invalid %s\n", l)
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "skillbus dev: invalid %s\n", ev.File)
		}
		if ev.Kept != "" {
			fmt.Fprintf(&b, "skillbus dev: keeping the last good version of %s (%s) until %s is fixed\n", ev.Name, ev.Kept, ev.File)
		}
	case events.OpClash:
		msg := ev.Error
		if msg == "" {
			msg = fmt.Sprintf("%s %q is defined by both %s and %s; keeping %s", ev.Kind, ev.Name, ev.Kept, ev.File, ev.Kept)
		}
		fmt.Fprintf(&b, "skillbus dev: clash: %s\n", oneLine(msg, 400))
	default:
		return ""
	}
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
	if ev.Status == events.ScheduleRefused {
		return fmt.Sprintf("sequence %s: the NATS server refused its schedule %q%s (%s); it does not run on its own until the schedule is fixed", ev.Sequence, ev.Schedule, zone, oneLine(ev.Error, 200))
	}
	return fmt.Sprintf("sequence %s: schedule %q%s set", ev.Sequence, ev.Schedule, zone)
}

// scheduleState reads what the NATS server last made of the schedule of
// the stored sequence name (the last schedule event on EVENTS) and
// describes it; "" when it cannot be read or there is none.
func scheduleState(ctx context.Context, name string) string {
	subj, err := events.ScheduleEventSubject(name)
	if err != nil {
		return ""
	}
	nc, err := connect("seqs")
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

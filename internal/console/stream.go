package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/pkg/events"
)

// Server-sent events (GET /api/stream, docs/console.md "Live updates").
// Each page opens one stream; the events are:
//
//	hello      {"live": bool, "runs_live": bool, "refused": [refusal...]},
//	           first, on every (re)connect: the page reloads what it
//	           shows, so nothing is missed
//	summaries  [RunSummary...]: runs created or changed (from the RUNS
//	           watch), at most one message per 250 ms, each run once
//	run        a RunEvent (started, group, interrupted, resumed,
//	           cancelling, finished) — only on a stream for that run
//	registry   a RegistryEvent (a skill or sequence stored, deleted, invalid…)
//	schedule   a ScheduleEvent (a schedule set or refused by the server)
//	refused    a refusal of the NATS server that no request asked for (the
//	           RUNS watch, the events subscription): its subject, the
//	           credentials' role and what the pages lose (perms.go); sent
//	           to every stream. hello carries those known so far.
//	nats       NATSState: the console's own NATS connection, each time it
//	           goes down or comes back (hello carries it too); while it
//	           is down the page disables its actions and the API answers
//	           them 503 at once
//	refusals   [refusal...]: every refusal still kept, when some were
//	           dropped (the RUNS watch runs after all, after a reconnect)
//
// A stream opened with ?run=ID gets only that run's summaries and events.
// A page that reads too slowly is disconnected (its browser reconnects and
// reloads) rather than slowing the others.

// coalesce is how long summaries are gathered before they are sent.
const coalesce = 250 * time.Millisecond

type sseMsg struct {
	event string
	data  []byte
}

type subscriber struct {
	run  string // "" = every run's summaries and the registry events
	ch   chan sseMsg
	gone chan struct{}
	once sync.Once
}

func (sub *subscriber) drop() { sub.once.Do(func() { close(sub.gone) }) }

// hub fans the live feeds out to the open streams.
type hub struct {
	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	nsub    *nats.Subscription
	closed  bool
	pending map[string]events.RunSummary
	timer   *time.Timer
	// onRegistry, when set, sees every registry event first (the preview's
	// skill cache).
	onRegistry func(*events.RegistryEvent)
	// indexLive, when set, tells whether the RUNS watch runs; when it does
	// not, run events stand in for its summaries (a partial summary each).
	indexLive func() bool
	// refused, when set, tells whether the server refused the events
	// subscription (then the feed is not live).
	refused func() bool
}

func newHub() *hub {
	return &hub{subs: map[*subscriber]struct{}{}, pending: map[string]events.RunSummary{}}
}

// subscribe starts the EVENTS feed: one core subscription to events.>
// (every event published to the EVENTS stream reaches it). Errors: the
// subscription's (a NATS user without subscribe permission on events.>).
func (h *hub) subscribe(nc *nats.Conn) error {
	sub, err := nc.Subscribe(events.SubjectEventsAll, h.event)
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", events.SubjectEventsAll, err)
	}
	_ = sub.SetPendingLimits(64*1024, 64<<20)
	h.mu.Lock()
	h.nsub = sub
	h.mu.Unlock()
	return nil
}

// live reports whether the EVENTS feed is on: subscribed, and the
// subscription not refused by the server.
func (h *hub) live() bool {
	h.mu.Lock()
	on := h.nsub != nil && h.nsub.IsValid()
	h.mu.Unlock()
	return on && (h.refused == nil || !h.refused())
}

// event routes one message of events.> to the streams that want it.
func (h *hub) event(m *nats.Msg) {
	switch {
	case strings.HasPrefix(m.Subject, "events.run."):
		var ev events.RunEvent
		if events.Decode(m.Data, &ev) != nil {
			return
		}
		h.send(ev.RunID, "run", &ev)
		if h.indexLive != nil && !h.indexLive() {
			h.summary(summaryOf(&ev))
		}
	case strings.HasPrefix(m.Subject, "events.registry."):
		var ev events.RegistryEvent
		if events.Decode(m.Data, &ev) != nil {
			return
		}
		if h.onRegistry != nil {
			h.onRegistry(&ev)
		}
		h.send("", "registry", &ev)
	case strings.HasPrefix(m.Subject, "events.schedule."):
		var ev events.ScheduleEvent
		if events.Decode(m.Data, &ev) != nil {
			return
		}
		h.send("", "schedule", &ev)
	}
}

// send delivers v as event to the streams of run (run != "") or to the
// streams that follow everything (run == "").
func (h *hub) send(run, event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	msg := sseMsg{event: event, data: data}
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		if sub.run == run {
			h.offer(sub, msg)
		}
	}
}

// broadcast delivers v as event to every stream.
func (h *hub) broadcast(event string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	msg := sseMsg{event: event, data: data}
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		h.offer(sub, msg)
	}
}

// offer queues msg for sub, dropping sub when its queue is full. Called
// with h.mu held.
func (h *hub) offer(sub *subscriber, msg sseMsg) {
	select {
	case sub.ch <- msg:
	default:
		delete(h.subs, sub)
		sub.drop()
	}
}

// summary records a run's new summary; summaries are sent together after
// coalesce, each run once with its latest summary.
func (h *hub) summary(s events.RunSummary) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.subs) == 0 {
		return
	}
	h.pending[s.RunID] = s
	if h.timer == nil {
		h.timer = time.AfterFunc(coalesce, h.flush)
	}
}

func (h *hub) flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timer = nil
	if len(h.pending) == 0 {
		return
	}
	all := make([]events.RunSummary, 0, len(h.pending))
	for _, s := range h.pending {
		all = append(all, s)
	}
	clear(h.pending)
	sort.Slice(all, func(i, j int) bool { return all[i].CreatedAt.After(all[j].CreatedAt) })
	data, _ := json.Marshal(all)
	msgAll := sseMsg{event: "summaries", data: data}
	for sub := range h.subs {
		if sub.run == "" {
			h.offer(sub, msgAll)
			continue
		}
		for _, s := range all {
			if s.RunID == sub.run {
				one, _ := json.Marshal([]events.RunSummary{s})
				h.offer(sub, sseMsg{event: "summaries", data: one})
			}
		}
	}
}

// summaryOf is what a run event tells of its run's summary, for the
// runs page when the RUNS watch is not running.
func summaryOf(ev *events.RunEvent) events.RunSummary {
	s := events.RunSummary{RunID: ev.RunID, Sequence: ev.Sequence, Status: ev.Status, Worker: ev.Worker, Attempt: ev.Attempt,
		Trigger: ev.Trigger, Groups: ev.Groups, Error: ev.Error, UpdatedAt: ev.At}
	switch ev.Kind {
	case events.RunGroup:
		s.Status, s.FinishedGroups = events.StatusRunning, ev.Group
	case events.RunFinished:
		s.FinishedAt = ev.At
	}
	return s
}

func (h *hub) add(run string) *subscriber {
	sub := &subscriber{run: run, ch: make(chan sseMsg, 256), gone: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		sub.drop()
		return sub
	}
	h.subs[sub] = struct{}{}
	return sub
}

func (h *hub) remove(sub *subscriber) {
	h.mu.Lock()
	delete(h.subs, sub)
	h.mu.Unlock()
	sub.drop()
}

// close ends every stream and the EVENTS feed.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for sub := range h.subs {
		sub.drop()
	}
	clear(h.subs)
	if h.nsub != nil {
		_ = h.nsub.Unsubscribe()
	}
	if h.timer != nil {
		h.timer.Stop()
	}
}

// keepAlive is how often an idle stream gets a comment line, so proxies
// and browsers keep it open.
const keepAlive = 20 * time.Second

// apiStream is GET /api/stream[?run=ID].
func (s *Server) apiStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, http.StatusInternalServerError, "", "streaming is not supported by this server")
		return
	}
	run := r.URL.Query().Get("run")
	if run != "" {
		if err := events.CheckRunID(run); err != nil {
			writeErr(w, http.StatusBadRequest, "400", err.Error())
			return
		}
	}
	if !s.streams.Enter(w) {
		return
	}
	defer s.streams.Leave()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sub := s.hub.add(run)
	defer s.hub.remove(sub)
	hello, _ := json.Marshal(map[string]any{"live": s.hub.live(), "runs_live": s.index.live(), "refused": s.refusals(), "nats": s.natsw.state()})
	fmt.Fprintf(w, "retry: 2000\n\nevent: hello\ndata: %s\n\n", hello)
	fl.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sub.gone:
			return
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		case m := <-sub.ch:
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", m.event, m.data)
			// Send what else is queued in the same write.
			for n := len(sub.ch); n > 0; n-- {
				m := <-sub.ch
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", m.event, m.data)
			}
			fl.Flush()
		}
	}
}

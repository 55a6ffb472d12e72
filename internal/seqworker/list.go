package seqworker

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/skillbus/skillbus/pkg/events"
)

// serveList is skillbus.seq.list (events.SeqListRequest →
// events.SeqListReply): the runs in RUNS, newest first, filtered and paged.
func (w *Worker) serveList(ctx context.Context, req micro.Request) {
	var in events.SeqListRequest
	if err := events.Decode(req.Data(), &in); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	all, err := w.listRuns(ctx)
	if err != nil {
		_ = req.Error("503", "read the "+events.BucketRuns+" bucket: "+err.Error(), nil)
		return
	}
	w.respond(req, pageRuns(all, &in))
}

// listRuns returns the summary of every run in RUNS. It reads the last
// entry of each key with headers only (the summary headers the worker
// writes, events.RunHeader*), through an ordered consumer; an entry
// without them (written by an older worker) is read whole.
func (w *Worker) listRuns(ctx context.Context) ([]events.RunSummary, error) {
	cons, err := w.js.OrderedConsumer(ctx, "KV_"+events.BucketRuns, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.RunsKeySubject(">")},
		DeliverPolicy:  jetstream.DeliverLastPerSubjectPolicy,
		HeadersOnly:    true,
	})
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	pending := info.NumPending
	out := make([]events.RunSummary, 0, pending)
	var legacy []string
	prefix := events.RunsKeySubject("")
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, 2000)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err == nil {
				pending = md.NumPending
			}
			h := m.Headers()
			if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
				continue
			}
			key := strings.TrimPrefix(m.Subject(), prefix)
			if s, ok := events.SummaryFromHeader(key, h); ok {
				out = append(out, s)
			} else {
				legacy = append(legacy, key)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, err
		}
		if got == 0 {
			break
		}
	}
	for _, key := range legacy {
		st, _, err := w.readState(ctx, key)
		if err != nil {
			return nil, err
		}
		if st != nil {
			out = append(out, st.Summary())
		}
	}
	return out, nil
}

// pageRuns filters, sorts (newest first: created time, then run id) and
// pages runs as in asks.
func pageRuns(runs []events.RunSummary, in *events.SeqListRequest) *events.SeqListReply {
	keep := runs[:0:0]
	for _, r := range runs {
		if in.Status != "" && r.Status != in.Status ||
			in.Sequence != "" && r.Sequence != in.Sequence ||
			!in.Since.IsZero() && r.CreatedAt.Before(in.Since) {
			continue
		}
		keep = append(keep, r)
	}
	slices.SortFunc(keep, func(a, b events.RunSummary) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.RunID, a.RunID)
	})
	limit := in.Limit
	if limit == 0 {
		limit = events.DefaultListLimit
	}
	start := 0
	if in.Before != "" {
		start = len(keep)
		for i, r := range keep {
			if cursor(r) < in.Before {
				start = i
				break
			}
		}
	}
	end := min(start+limit, len(keep))
	reply := &events.SeqListReply{V: events.Version, Runs: keep[start:end], Total: len(keep)}
	if reply.Runs == nil {
		reply.Runs = []events.RunSummary{}
	}
	if end < len(keep) && end > start {
		reply.Next = cursor(keep[end-1])
	}
	return reply
}

// cursor is the page cursor of a run: its created time (fixed width, so
// cursors compare as times) and its id.
func cursor(r events.RunSummary) string {
	return events.ListCursor(r.CreatedAt, r.RunID)
}

package streamread

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of FollowConfig.
const (
	DefaultPoll  = 2 * time.Second
	DefaultBatch = 256
)

// rereads are the waits after a wake whose read found nothing new: the
// core message can arrive before the stream has stored it (in a cluster,
// before the replica that answers has it).
var rereads = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond}

// FollowConfig says what a Follower reads.
type FollowConfig struct {
	// Stream is the stream's name (required).
	Stream string
	// Filters are the subject filters (wildcards allowed; at least one).
	// The Follower's connection subscribes to each, so the user must be
	// allowed to subscribe there.
	Filters []string
	// From is the stream sequence to start at (1: the whole history).
	// 0 with Since zero starts after the stream's last message (only new
	// messages).
	From uint64
	// Since, when From is 0, starts at the first message at or after it.
	Since time.Time
	// Direct reads by batch direct gets (the stream allows them: KV
	// buckets, object stores); otherwise by STREAM.MSG.GET, one message a
	// request (EVENTS: see the package doc).
	Direct bool
	// Poll is how often the stream is read without a wake; default
	// DefaultPoll. It covers messages published while the connection was
	// down.
	Poll time.Duration
	// Batch is the most messages one Read returns; default DefaultBatch.
	Batch int
}

// Follower reads the messages of a stream matching its filters in stream
// order, the stored ones first and then each new one as it is stored,
// without a consumer (package doc). It is not safe for concurrent use;
// Close may be called from any goroutine.
type Follower struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	cfg   FollowConfig
	next  uint64    // the stream sequence to read from; 0 until started
	since time.Time // the first read's start time (cfg.Since)
	wake  chan struct{}
	subs  []*nats.Subscription
}

// NewFollower subscribes to cfg's filters and returns a Follower at
// cfg.From (or after the last message stored now). Errors: a bad cfg, a
// subscription or the stream's info that cannot be had.
func NewFollower(ctx context.Context, nc *nats.Conn, cfg FollowConfig) (*Follower, error) {
	if cfg.Stream == "" || len(cfg.Filters) == 0 {
		return nil, errors.New("streamread: FollowConfig needs a Stream and at least one filter")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	f := &Follower{nc: nc, js: js, cfg: cfg, next: cfg.From, since: cfg.Since, wake: make(chan struct{}, 1)}
	for _, filter := range cfg.Filters {
		sub, err := nc.Subscribe(filter, func(*nats.Msg) {
			select {
			case f.wake <- struct{}{}:
			default:
			}
		})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("streamread: subscribe to %s: %w", filter, err)
		}
		f.subs = append(f.subs, sub)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		f.Close()
		return nil, err
	}
	if f.next == 0 && f.since.IsZero() {
		last, err := LastSeq(ctx, js, cfg.Stream)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("streamread: the %s stream: %w", cfg.Stream, err)
		}
		f.next = last + 1
	}
	return f, nil
}

// Cursor returns the stream sequence the next Read starts at (0 while a
// start by time has not read yet).
func (f *Follower) Cursor() uint64 { return f.next }

// Close ends the subscriptions. Safe to call twice.
func (f *Follower) Close() {
	for _, s := range f.subs {
		_ = s.Unsubscribe()
	}
	f.subs = nil
}

// Read returns the next stored messages (at most FollowConfig.Batch, in
// stream order), waiting for one at most wait; nil, nil when none came
// within it. Errors: ctx's, and those of the reads (ErrStream, NATS
// errors), after which Read may be called again: the cursor is kept.
func (f *Follower) Read(ctx context.Context, wait time.Duration) ([]*Msg, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	retry := -1 // index in rereads after a wake; -1: poll
	for {
		msgs, err := f.readNow(ctx)
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
		d := f.cfg.Poll
		if retry >= 0 && retry < len(rereads) {
			d = rereads[retry]
			retry++
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-deadline.C:
			t.Stop()
			return nil, nil
		case <-f.wake:
			retry = 0
		case <-t.C:
		}
		t.Stop()
	}
}

// readNow reads what is stored from the cursor on, at once.
func (f *Follower) readNow(ctx context.Context) ([]*Msg, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if f.cfg.Direct {
		return f.readDirect(rctx)
	}
	var out []*Msg
	for len(out) < f.cfg.Batch {
		var first *Msg
		for _, filter := range f.cfg.Filters {
			m, err := Next(rctx, f.nc, f.cfg.Stream, filter, f.next, f.since)
			if err != nil {
				return out, err
			}
			if m != nil && (first == nil || m.Sequence < first.Sequence) {
				first = m
			}
		}
		if first == nil {
			return out, nil
		}
		out = append(out, first)
		f.next, f.since = first.Sequence+1, time.Time{}
	}
	return out, nil
}

// readFilters reads a batch from start for each filter by batch direct
// gets, merged in stream order and cut where the shortest full batch ends
// (beyond it another filter's messages may not have been read yet) and,
// when up > 0, after sequence up.
func (f *Follower) readFilters(ctx context.Context, start, up uint64) ([]*Msg, error) {
	var all []*Msg
	limit := up // the last sequence every filter has read up to; 0: no limit
	for _, filter := range f.cfg.Filters {
		msgs, err := Batch(ctx, f.js, f.cfg.Stream, filter, start, f.cfg.Batch)
		if err != nil {
			return nil, err
		}
		if len(msgs) == f.cfg.Batch {
			if l := msgs[len(msgs)-1].Sequence; limit == 0 || l < limit {
				limit = l
			}
		}
		all = append(all, msgs...)
	}
	slices.SortFunc(all, func(a, b *Msg) int { return cmp.Compare(a.Sequence, b.Sequence) })
	if limit > 0 {
		all = slices.DeleteFunc(all, func(m *Msg) bool { return m.Sequence > limit })
	}
	return all, nil
}

// readDirect reads by batch direct gets (readFilters), from the cursor.
func (f *Follower) readDirect(ctx context.Context) ([]*Msg, error) {
	start := f.next
	if start == 0 {
		// A start by time: find its sequence with one message get.
		var first *Msg
		for _, filter := range f.cfg.Filters {
			m, err := Next(ctx, f.nc, f.cfg.Stream, filter, 0, f.since)
			if err != nil {
				return nil, err
			}
			if m != nil && (first == nil || m.Sequence < first.Sequence) {
				first = m
			}
		}
		if first == nil {
			return nil, nil
		}
		start = first.Sequence
	}
	all, err := f.readFilters(ctx, start, 0)
	if err != nil {
		return nil, err
	}
	if len(f.cfg.Filters) > 1 && len(all) > 0 {
		// A filter read before another may have missed messages stored
		// between the two reads, with sequences below the other's newest:
		// moving the cursor past them would skip them for good. Every
		// message up to the newest seen (up) is stored by now, so a second
		// read, cut at up, is complete.
		up := all[len(all)-1].Sequence
		if all, err = f.readFilters(ctx, start, up); err != nil {
			return nil, err
		}
	}
	if len(all) == 0 {
		if f.next == 0 {
			f.next = start
		}
		return nil, nil
	}
	f.next, f.since = all[len(all)-1].Sequence+1, time.Time{}
	return all, nil
}

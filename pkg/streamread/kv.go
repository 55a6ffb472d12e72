package streamread

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// entry is a KV entry read from the bucket's stream.
type entry struct {
	bucket, key string
	m           *Msg
	delta       uint64
}

func (e *entry) Bucket() string                  { return e.bucket }
func (e *entry) Key() string                     { return e.key }
func (e *entry) Value() []byte                   { return e.m.Data }
func (e *entry) Revision() uint64                { return e.m.Sequence }
func (e *entry) Created() time.Time              { return e.m.Time }
func (e *entry) Delta() uint64                   { return e.delta }
func (e *entry) Operation() jetstream.KeyValueOp { return opOf(e.m.Header) }

// opOf is the operation of a KV message: its KV-Operation header.
func opOf(h nats.Header) jetstream.KeyValueOp {
	switch h.Get("KV-Operation") {
	case "DEL":
		return jetstream.KeyValueDelete
	case "PURGE":
		return jetstream.KeyValuePurge
	}
	return jetstream.KeyValuePut
}

// kvWatcher is a jetstream.KeyWatcher over a Follower.
type kvWatcher struct {
	updates chan jetstream.KeyValueEntry
	stop    context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

func (w *kvWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.updates }

// Stop ends the watch; Updates is closed once the reader has stopped.
func (w *kvWatcher) Stop() error {
	w.once.Do(w.stop)
	<-w.done
	return nil
}

// WatchKV watches every key of the KV bucket as jetstream's
// KeyValue.WatchAll does — the last entry of each key (delete and purge
// markers included) in revision order, a nil entry, then every later
// change, until ctx ends or Stop — but by batch direct gets and a core
// subscription to $KV.<bucket>.>, without a consumer (package doc). The
// user needs DIRECT.GET and STREAM.INFO on KV_<bucket> and may subscribe
// to $KV.<bucket>.>. Reads that fail are tried again (a second apart) and
// reported to onErr (nil: dropped); the Updates channel closes only when
// the watch is stopped. Errors: the subscription or the bucket's stream
// cannot be had.
func WatchKV(ctx context.Context, nc *nats.Conn, bucket string, onErr func(error)) (jetstream.KeyWatcher, error) {
	stream, prefix := "KV_"+bucket, "$KV."+bucket+"."
	f, err := NewFollower(ctx, nc, FollowConfig{Stream: stream, Filters: []string{prefix + ">"}, From: 1, Direct: true})
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	last, err := LastSeq(ictx, f.js, stream)
	cancel()
	if err != nil {
		f.Close()
		return nil, err
	}
	wctx, stop := context.WithCancel(ctx)
	w := &kvWatcher{updates: make(chan jetstream.KeyValueEntry, 64), stop: stop, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer close(w.updates)
		defer f.Close()
		send := func(e jetstream.KeyValueEntry) bool {
			select {
			case w.updates <- e:
				return true
			case <-wctx.Done():
				return false
			}
		}
		// The initial values: the stream up to last, the last of each key.
		var order []string
		latest := map[string]*Msg{}
		for f.Cursor() <= last {
			msgs, err := f.readNow(wctx)
			if wctx.Err() != nil {
				return
			}
			if err != nil {
				if !pauseAfter(wctx, err, onErr) {
					return
				}
				continue
			}
			if len(msgs) == 0 {
				break // the rest up to last expired or was removed
			}
			for _, m := range msgs {
				key := strings.TrimPrefix(m.Subject, prefix)
				if _, ok := latest[key]; !ok {
					order = append(order, key)
				}
				latest[key] = m
			}
		}
		// Revision order, as a watch delivers them.
		var initial []*entry
		for _, k := range order {
			initial = append(initial, &entry{bucket: bucket, key: k, m: latest[k]})
		}
		sortEntries(initial)
		for i, e := range initial {
			e.delta = uint64(len(initial) - 1 - i)
			if !send(e) {
				return
			}
		}
		if !send(nil) {
			return
		}
		for {
			msgs, err := f.Read(wctx, time.Minute)
			if wctx.Err() != nil {
				return
			}
			if err != nil {
				if !pauseAfter(wctx, err, onErr) {
					return
				}
				continue
			}
			for _, m := range msgs {
				if !send(&entry{bucket: bucket, key: strings.TrimPrefix(m.Subject, prefix), m: m}) {
					return
				}
			}
		}
	}()
	return w, nil
}

// sortEntries orders entries by revision.
func sortEntries(es []*entry) {
	slices.SortFunc(es, func(a, b *entry) int { return cmp.Compare(a.m.Sequence, b.m.Sequence) })
}

// pauseAfter reports a read error to onErr (when set) and waits a second
// before the next read; false when ctx ended meanwhile.
func pauseAfter(ctx context.Context, err error, onErr func(error)) bool {
	if onErr != nil {
		onErr(err)
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Second):
		return true
	}
}

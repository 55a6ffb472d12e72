package kvsession

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/skillface"
)

// Direct gets.
//
// A kv.Get is a JetStream direct get (the bucket allows them, as
// events.Provision creates it) sent through nats.go's request machinery,
// whose answer passes through a goroutine of its own before it reaches the
// caller; a session read was the largest part of skillface's time per turn
// beyond the request's own round trip. With direct gets enabled
// (NewDirect), the Store publishes the same direct get itself — the
// documented JetStream API "$JS.API.DIRECT.GET.<stream>.<subject>", with
// no body, answered with the last message of the subject — and receives
// the answer on a channel subscription that the connection's reader fills
// directly: one hop less, and no goroutine per read. It also lets the
// Assembler start a read and collect it later (StartGet) without a
// goroutine.
//
// Each read borrows a "slot": an inbox subscription with its channel, kept
// in a free list for the next read (so there are as many as reads ever ran
// at once). A slot goes back to the list only once the answer to its read
// has arrived, so it never holds more than one answer: when the caller
// stops waiting (its context ended), a goroutine waits for the answer on
// its behalf and then frees the slot, or after abandonAfter drops it. A
// slot's replies go to <inbox>.<n> with n counting its reads, so a stray
// answer would still be recognised.
//
// When the server answers that nobody serves direct gets for the bucket
// (it does not allow them), the Store falls back to kv.Get for good.

// directPrefix is the subject prefix of a direct get of a bucket's key
// (default JetStream API prefix).
func directPrefix(bucket string) string {
	return "$JS.API.DIRECT.GET.KV_" + bucket + ".$KV." + bucket + "."
}

type directGets struct {
	nc     *nats.Conn
	prefix string
	off    atomic.Bool // set when the server does not serve direct gets

	mu   sync.Mutex
	free []*getSlot
}

type getSlot struct {
	inbox string // ends with "."
	ch    chan *nats.Msg
	sub   *nats.Subscription
	n     uint64 // reads made with this slot
}

// NewDirect returns a Store over kv, the bucket named bucket, that reads
// with direct gets published on nc (see the package documentation). kv
// still serves the writes, and the reads when the bucket does not allow
// direct gets.
func NewDirect(kv KeyValue, nc *nats.Conn, bucket string) *Store {
	s := New(kv)
	s.direct = &directGets{nc: nc, prefix: directPrefix(bucket)}
	return s
}

func (d *directGets) slot() (*getSlot, error) {
	d.mu.Lock()
	if n := len(d.free); n > 0 {
		sl := d.free[n-1]
		d.free = d.free[:n-1]
		d.mu.Unlock()
		return sl, nil
	}
	d.mu.Unlock()
	sl := &getSlot{inbox: d.nc.NewRespInbox() + ".", ch: make(chan *nats.Msg, 2)}
	sub, err := d.nc.ChanSubscribe(sl.inbox+"*", sl.ch)
	if err != nil {
		return nil, err
	}
	sl.sub = sub
	return sl, nil
}

func (d *directGets) release(sl *getSlot) {
	d.mu.Lock()
	d.free = append(d.free, sl)
	d.mu.Unlock()
}

// errNoDirect: the server does not serve direct gets for the bucket.
var errNoDirect = errors.New("kvsession: direct gets are not served for the bucket")

// start publishes a direct get of key and returns the function that waits
// for its answer (the message, or errNoDirect, or an error). The function
// must be called once.
func (d *directGets) start(ctx context.Context, key string) func() (*nats.Msg, error) {
	sl, err := d.slot()
	if err != nil {
		return func() (*nats.Msg, error) { return nil, err }
	}
	sl.n++
	reply := sl.inbox + strconv.FormatUint(sl.n, 10)
	if err := d.nc.PublishRequest(d.prefix+key, reply, nil); err != nil {
		d.release(sl)
		return func() (*nats.Msg, error) { return nil, err }
	}
	return func() (*nats.Msg, error) {
		for {
			select {
			case m := <-sl.ch:
				if m.Subject != reply {
					continue // not the answer to this read
				}
				d.release(sl)
				if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
					d.off.Store(true)
					return nil, errNoDirect
				}
				return m, nil
			case <-ctx.Done():
				go d.reap(sl, reply)
				return nil, ctx.Err()
			}
		}
	}
}

// abandonAfter bounds how long an answer nobody waits for is awaited
// before its slot is dropped.
const abandonAfter = 30 * time.Second

// reap waits for the answer of a read its caller gave up, then frees the
// slot; if none comes, it drops the slot.
func (d *directGets) reap(sl *getSlot, reply string) {
	t := time.NewTimer(abandonAfter)
	defer t.Stop()
	for {
		select {
		case m := <-sl.ch:
			if m.Subject != reply {
				continue
			}
			d.release(sl)
			return
		case <-t.C:
			_ = sl.sub.Unsubscribe()
			return
		}
	}
}

// StartGet implements skillface.SessionReadStarter: it sends the read of
// session id now and returns the function that waits for its result, as
// Get returns it. Without direct gets (New, or a bucket that does not allow
// them) the read runs in a goroutine of its own.
func (s *Store) StartGet(ctx context.Context, id string) func() ([]byte, uint64, error) {
	key, err := Key(id)
	if err != nil {
		return func() ([]byte, uint64, error) { return nil, 0, err }
	}
	if s.direct == nil || s.direct.off.Load() {
		return s.goGet(ctx, id)
	}
	if err := ctx.Err(); err != nil {
		return func() ([]byte, uint64, error) { return nil, 0, err }
	}
	wait := s.direct.start(ctx, key)
	return func() ([]byte, uint64, error) {
		m, err := wait()
		switch {
		case errors.Is(err, errNoDirect):
			return s.kvGet(ctx, id, key)
		case err != nil:
			return nil, 0, wrap(ctx, "read", id, err)
		}
		return directEntry(id, m)
	}
}

// goGet reads session id in a goroutine and returns the function that
// waits for the result.
func (s *Store) goGet(ctx context.Context, id string) func() ([]byte, uint64, error) {
	type result struct {
		v   []byte
		rev uint64
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var r result
		r.v, r.rev, r.err = s.Get(ctx, id)
		ch <- r
	}()
	return func() ([]byte, uint64, error) {
		r := <-ch
		return r.v, r.rev, r.err
	}
}

// directEntry reads a direct get's answer as Get's result: the value and
// its revision, or ErrSessionNotFound for no message, a delete or purge
// marker (as jetstream's kv.Get decides).
func directEntry(id string, m *nats.Msg) ([]byte, uint64, error) {
	if len(m.Data) == 0 {
		switch st := m.Header.Get("Status"); st {
		case "":
		case "404":
			return nil, 0, fmt.Errorf("%w: %q", skillface.ErrSessionNotFound, id)
		default:
			return nil, 0, fmt.Errorf("kvsession: read session %q: direct get answered %s %s", id, st, m.Header.Get("Description"))
		}
	}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		return nil, 0, fmt.Errorf("%w: %q", skillface.ErrSessionNotFound, id)
	}
	if m.Header.Get(jetstream.MarkerReasonHeader) != "" {
		return nil, 0, fmt.Errorf("%w: %q", skillface.ErrSessionNotFound, id)
	}
	rev, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil || rev == 0 {
		return nil, 0, fmt.Errorf("kvsession: read session %q: the direct get answer has no valid %s header (%q)",
			id, jetstream.SequenceHeader, m.Header.Get(jetstream.SequenceHeader))
	}
	return m.Data, rev, nil
}

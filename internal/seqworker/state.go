package seqworker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/skillbus/skillbus/pkg/events"
)

// errConflict: a compare-and-set write of a RUNS key found another
// revision.
var errConflict = errors.New("seqworker: RUNS revision conflict")

// errStateTooLarge: a run state does not fit in a RUNS entry even with its
// large slots in the object store.
var errStateTooLarge = errors.New("seqworker: run state too large for a RUNS entry")

// readState returns the RUNS state of runID (normalised: pending reads as
// queued) and its revision; nil, 0 when there is none.
func (w *Worker) readState(ctx context.Context, runID string) (*events.RunState, uint64, error) {
	e, err := w.runs.Get(ctx, runID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var st events.RunState
	if err := events.Decode(e.Value(), &st); err != nil {
		// Unreadable: treat as absent but keep the revision so the next
		// write replaces it.
		w.log.Warn("unreadable run state replaced", "run", runID, "err", err)
		return nil, e.Revision(), nil
	}
	st.Normalize()
	return &st, e.Revision(), nil
}

// requestedRun reads the state of the run a service request names (the
// rerun, retry and signal endpoints). When it cannot be read
// it answers req with 503, when there is none with 404 (noRun), and
// returns false; else the state and its revision, and true.
func (w *Worker) requestedRun(ctx context.Context, req micro.Request, runID string) (*events.RunState, uint64, bool) {
	st, rev, err := w.readState(ctx, runID)
	switch {
	case err != nil:
		_ = req.Error("503", err.Error(), nil)
		return nil, 0, false
	case st == nil:
		_ = req.Error("404", noRun(runID), nil)
		return nil, 0, false
	}
	return st, rev, true
}

// noRun is the 404 text of a request for a run RUNS does not hold.
func noRun(runID string) string {
	return fmt.Sprintf("no run %q in the %s bucket (unknown, or expired after its retention)", runID, events.BucketRuns)
}

// readStateLeader is readState answered by the leader of the RUNS
// stream (the STREAM.MSG.GET API, which only the leader answers), for a
// decision that must not rest on a stale read: a KV get is a direct get
// that any replica answers, and a replica catching up after its node
// restarted answers with an older revision of the key (a waiting run
// read as queued). nil, 0 when the key has no value (none, deleted or
// purged). Errors: NATS errors, the API's error, a state that does not
// decode.
func (w *Worker) readStateLeader(ctx context.Context, runID string) (*events.RunState, uint64, error) {
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + events.BucketRuns + "." + runID})
	m, err := w.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+events.BucketRuns, req)
	if err != nil {
		return nil, 0, err
	}
	var resp struct {
		Message *struct {
			Seq  uint64 `json:"seq"`
			Hdrs []byte `json:"hdrs"`
			Data []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, 0, fmt.Errorf("read the run state from the RUNS leader: %w", err)
	}
	if resp.Error != nil {
		if resp.Error.Code == 10037 { // no message found
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("read the run state from the RUNS leader: %s (%d)", resp.Error.Description, resp.Error.Code)
	}
	if resp.Message == nil {
		return nil, 0, fmt.Errorf("read the run state from the RUNS leader: an answer without a message")
	}
	if bytes.Contains(resp.Message.Hdrs, []byte("KV-Operation")) {
		return nil, 0, nil // a delete or purge marker
	}
	var st events.RunState
	if err := events.Decode(resp.Message.Data, &st); err != nil {
		return nil, 0, fmt.Errorf("read the run state from the RUNS leader: %w", err)
	}
	st.Normalize()
	return &st, resp.Message.Seq, nil
}

// writeState stores st under its run id, compare-and-set: rev 0 creates
// the key, any other rev must be the key's current revision. The entry
// carries the run's summary in the events.RunHeader* headers (what `runs
// ls` reads). Errors: errConflict, errStateTooLarge, an encoding error,
// NATS errors.
func (w *Worker) writeState(ctx context.Context, st *events.RunState, rev uint64) (uint64, error) {
	b, err := encodeState(st)
	if err != nil {
		return 0, err
	}
	if max := w.stateLimit(st.Status); max > 0 && len(b) > max {
		why := "the RUNS bucket's value size, or the server's max_payload"
		if !events.Finished(st.Status) {
			why += fmt.Sprintf(", less %d bytes kept free for the run's final state", stateReserve)
		}
		return 0, fmt.Errorf("%w: %d bytes; the limit is %d bytes (%s)", errStateTooLarge, len(b), max, why)
	}
	m := &nats.Msg{Subject: events.RunsKeySubject(st.RunID), Data: b, Header: make(nats.Header, 12)}
	st.Summary().SetHeader(m.Header)
	m.Header[jetstream.ExpectedLastSubjSeqHeader] = []string{strconv.FormatUint(rev, 10)}
	seq, err := w.jsPublish(ctx, m)
	if err == nil {
		return seq, nil
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		if rev == 0 {
			// A key deleted or purged before has a marker: create it
			// over the marker as kv.Create does (without the summary
			// headers; the listing reads such an entry whole).
			nrev, cerr := w.runs.Create(ctx, st.RunID, b)
			if cerr == nil {
				return nrev, nil
			}
			if errors.Is(cerr, jetstream.ErrKeyExists) {
				return 0, fmt.Errorf("%w: %v", errConflict, cerr)
			}
			return 0, cerr
		}
		return 0, fmt.Errorf("%w: %v", errConflict, err)
	}
	if errors.Is(err, nats.ErrMaxPayload) || (err != nil && strings.Contains(err.Error(), "maximum")) {
		return 0, fmt.Errorf("%w: %d bytes: %v", errStateTooLarge, len(b), err)
	}
	return 0, err
}

// jsPublish publishes m to JetStream and returns the stream sequence that
// acknowledges it: what jetstream.PublishMsg does (errors:
// jetstream.ErrNoStreamResponse, *jetstream.APIError wrapped, NATS
// errors), with a plain request whose acknowledgement is read without
// encoding/json when it is a success (parsePubAck). A context without a
// deadline gets jetstream's default of 5 s.
func (w *Worker) jsPublish(ctx context.Context, m *nats.Msg) (uint64, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	resp, err := w.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return 0, jetstream.ErrNoStreamResponse
		}
		return 0, err
	}
	if seq, ok := parsePubAck(resp.Data); ok {
		return seq, nil
	}
	var ack struct {
		Error  *jetstream.APIError `json:"error"`
		Stream string              `json:"stream"`
		Seq    uint64              `json:"seq"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, jetstream.ErrInvalidJSAck
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("nats: %w", ack.Error)
	}
	if ack.Stream == "" {
		return 0, jetstream.ErrInvalidJSAck
	}
	return ack.Seq, nil
}

// parsePubAck reads the stream sequence of a JetStream publish
// acknowledgement of the plain form the server writes for a success,
// {"stream":"NAME","seq":N}; ok is false for anything else (an error, a
// duplicate, a domain), which the caller decodes with encoding/json.
func parsePubAck(b []byte) (seq uint64, ok bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"stream":"`))
	if !ok {
		return 0, false
	}
	name := bytes.IndexByte(rest, '"')
	if name <= 0 {
		return 0, false
	}
	for _, c := range rest[:name] { // stream names: letters, digits, '-', '_'
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return 0, false
		}
	}
	digits, ok := bytes.CutPrefix(rest[name:], []byte(`","seq":`))
	if !ok || len(digits) < 2 || digits[len(digits)-1] != '}' {
		return 0, false
	}
	digits = digits[:len(digits)-1]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(string(digits), 10, 64)
	if err != nil || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	return n, true
}

// failRun stores a failed final state for runID (unless it finished, or a
// later delivery owns it) and announces it. Best effort: errors are logged.
func (w *Worker) failRun(ctx context.Context, runID, sequence string, attempt int, reason string) {
	if events.CheckRunID(runID) != nil {
		return // no key can be derived from it; the caller logged it
	}
	for range 3 {
		var cur *events.RunState
		var rev uint64
		err := w.persist(ctx, "read run state", func(octx context.Context) (err error) {
			cur, rev, err = w.readState(octx, runID)
			return err
		})
		if err != nil {
			w.log.Error("record failed run", "run", runID, "err", err)
			return
		}
		now := time.Now().UTC()
		st := &events.RunState{RunID: runID, Sequence: sequence, Status: events.StatusFailed, Error: reason, Attempt: attempt,
			Worker: w.cfg.WorkerID, CreatedAt: now, StartedAt: now, UpdatedAt: now, FinishedAt: now}
		if cur != nil {
			if events.Finished(cur.Status) || cur.Attempt > attempt {
				return
			}
			keep := *cur
			keep.Status, keep.Error, keep.Attempt, keep.Worker = st.Status, reason, max(attempt, cur.Attempt), w.cfg.WorkerID
			keep.UpdatedAt, keep.FinishedAt = now, now
			if keep.StartedAt.IsZero() {
				keep.StartedAt = now
			}
			if keep.Sequence == "" {
				keep.Sequence = sequence
			}
			st = &keep
		}
		err = w.persist(ctx, "store run state", func(octx context.Context) error {
			_, err := w.writeState(octx, st, rev)
			return err
		})
		if errors.Is(err, errConflict) {
			continue
		}
		if errors.Is(err, errStateTooLarge) {
			// The last checkpoint left room for a final state
			// (stateReserve): keep its groups and a shorter error.
			clipped := *st
			clipped.Error = clip(reason, maxFinalError)
			_, err = w.writeState(ctx, &clipped, rev)
		}
		if errors.Is(err, errStateTooLarge) {
			// A state written before that rule: keep the outcome and the
			// finished-group count, and say why the detail is missing.
			small := *st
			small.Result = nil
			small.Slots = nil
			small.Error = clip(reason, maxFinalError) + " (the groups' results were too large to store with it: " + err.Error() + ")"
			_, err = w.writeState(ctx, &small, rev)
		}
		if err != nil {
			w.log.Error("record failed run", "run", runID, "err", err)
			return
		}
		w.emit(ctx, &events.RunEvent{RunID: runID, Kind: events.RunFinished, Sequence: st.Sequence, Status: events.StatusFailed, Error: reason, Worker: w.cfg.WorkerID, Attempt: attempt})
		w.runFinished(ctx, st)
		w.entryRunEnded(ctx, st) // entries.go
		return
	}
}

// emit publishes a run event with a plain NATS publish: the EVENTS stream
// stores it all the same, and no acknowledgement comes back (none was
// awaited: events are informational, the RUNS state is the truth), which
// saves a message and the asynchronous-publish bookkeeping per event.
func (w *Worker) emit(ctx context.Context, ev *events.RunEvent) {
	ev.At = time.Now().UTC()
	subj, err := events.RunEventSubject(ev.RunID, ev.Kind)
	if err != nil {
		w.log.Warn("run event not published", "run", ev.RunID, "err", err)
		return
	}
	b, err := encodeEvent(ev)
	if err != nil {
		w.log.Warn("run event not published", "run", ev.RunID, "err", err)
		return
	}
	m := &nats.Msg{Subject: subj, Data: b, Header: nats.Header{}}
	events.Inject(ctx, m.Header)
	if err := w.nc.PublishMsg(m); err != nil {
		w.log.Warn("run event not published", "run", ev.RunID, "err", err)
	}
}

package seqworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// serveRetry answers seq.retry (docs/runs.md, "Retry"): a new run that
// continues a failed or cancelled run from its first group that did not
// finish, or (From) re-runs a failed, cancelled or succeeded run from an
// earlier group (retryfrom.go). The new run's queued state carries the original's checkpoint —
// its finished groups, their slots (large ones by reference to the same
// objects) and, unless Latest, the definition it ran — so the worker that
// claims it resumes there as after a failover, and no tool of a finished
// group is called again.
func (w *Worker) serveRetry(ctx context.Context, mreq micro.Request) {
	var in events.SeqRetryRequest
	if err := events.Decode(mreq.Data(), &in); err != nil {
		_ = mreq.Error("400", err.Error(), nil)
		return
	}
	req := prefixErrors(mreq, fmt.Sprintf("retry of run %q: ", in.RunID))
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	orig, origRev, ok := w.requestedRun(ctx, req, in.RunID)
	if !ok {
		return
	}
	switch {
	case orig.Status == events.StatusSucceeded && in.From == "":
		_ = req.Error("409", "the run is succeeded; without a group to start from only a failed or cancelled run can be retried: a run that succeeded has no group that did not finish; run groups of it again with `skillbus runs retry RUN_ID --from GROUP`, or start it again from the start with `skillbus runs rerun`", nil)
		return
	case orig.Status != events.StatusFailed && orig.Status != events.StatusCancelled && orig.Status != events.StatusSucceeded:
		what := "only a failed or cancelled run can be retried"
		if in.From != "" {
			what = "only a failed, cancelled or succeeded run can be retried"
		}
		_ = req.Error("409", fmt.Sprintf("the run is %s; %s: wait for it to end, or cancel it first (`skillbus runs cancel`)", orig.Status, what), nil)
		return
	case orig.Sequence == "" && len(orig.Inline) == 0:
		_ = req.Error("404", "the run does not record its sequence (stored by an older worker); start it again with `skillbus run`", nil)
		return
	case in.Latest && len(orig.Inline) > 0:
		_ = req.Error("400", "the run ran an inline sequence, which has no stored definition: --latest applies to stored sequences only; retry without it", nil)
		return
	}
	var res seq.Result
	if len(orig.Result) > 0 {
		if err := json.Unmarshal(orig.Result, &res); err != nil {
			_ = req.Error("409", "its stored result does not decode, so its finished groups are unknown: "+err.Error()+"; rerun it from the start with `skillbus runs rerun`", nil)
			return
		}
	}
	from := 0 // the first group that did not finish
	for from < len(res.Groups) && res.Groups[from].Status.Finished() {
		from++
	}
	if in.From != "" { // or an earlier one (retryfrom.go)
		var msg, code string
		if from, msg, code = retryStart(in.From, w.retryGroupNames(ctx, orig, &res), from); msg != "" {
			_ = req.Error(code, msg, nil)
			return
		}
	}
	// A request names a stored sequence or carries an inline one, never
	// both; the state of an inline run records its name as well, for
	// display.
	r := &events.RunRequest{RunID: in.NewRunID, Sequence: orig.Sequence, Inline: orig.Inline, Args: orig.Args, Trigger: events.TriggerManual,
		RequestedAt: time.Now().UTC(), RetryOf: in.RunID}
	if len(r.Inline) > 0 {
		r.Sequence = ""
	}
	if r.RunID == "" {
		r.RunID = "run-" + nuid.Next()
	}
	def := orig.Definition
	if in.Latest {
		if msg, code := w.sameUpTo(ctx, orig, from); msg != "" {
			_ = req.Error(code, msg, nil)
			return
		}
		def = nil // the claim takes the stored definition
	}
	now := time.Now().UTC()
	st := &events.RunState{RunID: r.RunID, Sequence: orig.Sequence, Status: events.StatusQueued, Trigger: events.TriggerManual, Request: events.RequestDigest(r),
		Args: orig.Args, Inline: orig.Inline, Groups: orig.Groups, Definition: def, RetryOf: in.RunID, CreatedAt: now, UpdatedAt: now}
	if from > 0 {
		st.FinishedGroups = from
		st.Slots, st.SlotRefs = maps.Clone(orig.Slots), maps.Clone(orig.SlotRefs)
		// The groups from on run again: the slots they wrote in the
		// original (groups that finished, retried with From) are not
		// the new run's — it starts with the reused groups' slots only.
		for k := range w.laterSlots(ctx, orig, &res, from, in.From != "") {
			delete(st.Slots, k)
			delete(st.SlotRefs, k)
		}
		cp := res
		cp.Status, cp.Error, cp.Duration = seq.StatusRunning, "", 0
		cp.Slots = nil // kept in Slots and SlotRefs
		cp.Groups = slices.Clone(res.Groups)
		for i := range from {
			if cp.Groups[i].ReusedFrom == "" { // a retry of a retry names the run that ran it
				cp.Groups[i].ReusedFrom = in.RunID
			}
		}
		for i := from; i < len(cp.Groups); i++ {
			g := &cp.Groups[i]
			calls := make([]seq.CallResult, len(g.Calls))
			for ci, c := range g.Calls {
				calls[ci] = seq.CallResult{Tool: c.Tool, As: c.As, Status: seq.CallPending}
			}
			*g = seq.GroupResult{Name: g.Name, Status: seq.GroupPending, Calls: calls}
		}
		var err error
		if st.Result, err = json.Marshal(&cp); err != nil {
			_ = req.Error("500", err.Error(), nil)
			return
		}
	}
	rev, err := w.writeState(ctx, st, 0)
	if errors.Is(err, errConflict) {
		cur, _, rerr := w.readState(ctx, r.RunID)
		if rerr == nil && cur != nil && cur.RetryOf == in.RunID && cur.Request == st.Request && reusedGroups(cur.Result) == from {
			w.respond(req, &events.SeqRunReply{V: events.Version, RunID: r.RunID, Existing: true})
			return
		}
		taken := ""
		if rerr == nil && cur != nil {
			taken = ": it is " + cur.Origin()
			if cur.RetryOf == in.RunID && cur.Request == st.Request {
				taken += fmt.Sprintf(" starting at group %d, and this retry starts at group %d", reusedGroups(cur.Result)+1, from+1)
			}
		}
		_ = req.Error("409", fmt.Sprintf("run id %q was already used for another run%s; omit the run id to get a new one, or choose an unused one", r.RunID, taken), nil)
		return
	}
	if err != nil {
		_ = req.Error("503", "the retry could not be stored: "+err.Error(), nil)
		return
	}
	w.rememberQueued(st, rev)
	subjName := r.Sequence
	if len(r.Inline) > 0 {
		subjName = events.InlineRunToken
	}
	subj, err := events.RunSubject(subjName)
	if err == nil {
		var b []byte
		if b, err = events.Encode(r); err == nil {
			m := &nats.Msg{Subject: subj, Data: b, Header: nats.Header{}}
			m.Header.Set(events.HeaderPendingRevision, strconv.FormatUint(rev, 10))
			_, err = events.Publish(ctx, w.js, m, jetstream.WithMsgID(r.RunID))
		}
	}
	if err != nil {
		// The queued state must not stay behind as a run that never
		// starts: it records the failure instead.
		st.Status, st.Error, st.UpdatedAt = events.StatusFailed, "the retry could not be queued: "+err.Error(), time.Now().UTC()
		st.FinishedAt = st.UpdatedAt
		if _, werr := w.writeState(ctx, st, rev); werr != nil {
			w.log.Warn("a retry that could not be queued is left queued", "run", r.RunID, "err", werr)
		}
		_ = req.Error("503", "the retry could not be queued: "+err.Error(), nil)
		return
	}
	// The original names its retries (runs show prints the chain both
	// ways); a lost race here is retried, a failure only logged.
	for range 3 {
		orig.RetriedBy = append(orig.RetriedBy, r.RunID)
		if _, err = w.writeState(ctx, orig, origRev); !errors.Is(err, errConflict) {
			break
		}
		if orig, origRev, err = w.readState(ctx, in.RunID); err != nil || orig == nil {
			break
		}
	}
	if err != nil {
		w.log.Warn("retry queued, but the original run does not name it", "run", in.RunID, "retry", r.RunID, "err", err)
	}
	w.respond(req, &events.SeqRunReply{V: events.Version, RunID: r.RunID})
}

// sameUpTo checks, for seq.retry --latest, that the stored definition of
// orig's sequence has the signature of the definition orig ran and the
// same groups before group from (0-based). It returns what differs and
// the error code ("409", or "404"/"503" when a definition cannot be read),
// or "" when they agree.
func (w *Worker) sameUpTo(ctx context.Context, orig *events.RunState, from int) (string, string) {
	stored, _, err := w.cat.get(ctx, orig.Sequence) // the bucket, not the cache: what is stored now
	if err != nil {
		if errors.Is(err, errNoSequence) {
			return "the sequence " + strconv.Quote(orig.Sequence) + " is no longer stored, so there is no latest definition; retry without --latest", "404"
		}
		return "the stored sequence could not be read: " + err.Error(), "503"
	}
	if orig.Definition == nil {
		return "the run does not record the definition it ran (stored by an older worker), so the stored one cannot be compared with it; retry without --latest", "409"
	}
	raw, err := w.readDefinition(ctx, orig.Sequence, *orig.Definition)
	if err != nil {
		return "the definition the run ran cannot be read back to compare: " + err.Error(), "503"
	}
	ran, err := seq.Decode(raw)
	if err != nil {
		return "the definition the run ran does not decode: " + err.Error(), "409"
	}
	var diffs []string
	if a, b := ran.Signature.String(), stored.Signature.String(); a != b {
		diffs = append(diffs, fmt.Sprintf("the signature was %s and is now %s", a, b))
	}
	for i := 0; i < from; i++ {
		if i >= len(stored.Groups) {
			diffs = append(diffs, fmt.Sprintf("group %d %q is gone", i+1, ran.Groups[i].Name))
			break
		}
		a, _ := json.Marshal(ran.Groups[i])
		b, _ := json.Marshal(stored.Groups[i])
		if string(a) != string(b) {
			diffs = append(diffs, fmt.Sprintf("group %d %q differs", i+1, ran.Groups[i].Name))
		}
	}
	if len(stored.Groups) < len(ran.Groups) && from < len(ran.Groups) && from >= len(stored.Groups) {
		diffs = append(diffs, fmt.Sprintf("it has %d groups, and the retry would start at group %d", len(stored.Groups), from+1))
	}
	if len(diffs) > 0 {
		return fmt.Sprintf("definition changed: the stored definition of %q (revision %d ran) is not the same up to group %d, where the retry starts: %s; retry without --latest to use the definition the run ran, or start a new run",
			orig.Sequence, orig.Definition.Revision, from+1, strings.Join(diffs, "; ")), "409"
	}
	return "", ""
}

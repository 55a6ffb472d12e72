package seqworker

import (
	"context"
	"errors"
	"fmt"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// A run's state is one RUNS entry (docs/runs.md, Large state). Three rules
// keep a run that outgrows it from looping or becoming impossible to stop:
//
//   - the states a run goes on from (queued, running, interrupted) must
//     leave stateReserve bytes free below the entry limit, so that its final
//     state — the last checkpoint plus a cancel, or an error of at most
//     maxFinalError bytes — always fits;
//   - a checkpoint over the limit is permanent: the run fails at once with
//     an error naming the group, the size and the limit (failTooLarge), and
//     is never redelivered (it would re-run its last group each time);
//   - a final state that does not fit with the result of the groups after
//     the last checkpoint is stored over that checkpoint instead
//     (finalOverCheckpoint): cancel and fail always work.
//
// seq.MaxGroups keeps realistic sequences well inside the limit.

// stateReserve is the room a non-final state leaves below the RUNS entry
// limit for its final state's additions.
const stateReserve = 8 << 10

// maxFinalError bounds the error text a final state adds.
const maxFinalError = 2 << 10

// stateLimit returns the largest encoded state of status st that may be
// written: the entry limit, less stateReserve for a state the run goes on
// from. 0 means no limit is known.
func (w *Worker) stateLimit(status string) int {
	if w.maxValue <= 0 {
		return 0
	}
	if events.Finished(status) {
		return w.maxValue
	}
	return w.maxValue - stateReserve
}

// tooLargeText is the error of a run whose checkpoint does not fit.
func tooLargeText(s *seq.Sequence, runErr error) string {
	where := ""
	var se *seq.Error
	if errors.As(runErr, &se) && se.Group > 0 {
		where = fmt.Sprintf("after group %d %q ", se.Group, se.GroupName)
	}
	cause := runErr
	if se != nil && se.Err != nil {
		cause = se.Err // the checkpoint's own error, without the observer wording
	}
	return clip(fmt.Sprintf("the run's state %sdoes not fit in its RUNS entry (%v); the run stops here instead of running the group again on every delivery. "+
		"Sequence %q has %d groups: split it into smaller sequences, make its tools return less (large values go to the object store, but every call's status and error stay in the state), "+
		"or raise the server's max_payload (docs/runs.md, Large state)", where, cause, s.Name, len(s.Groups)), maxFinalError)
}

// failTooLarge ends a run whose checkpoint did not fit: failed at once,
// over its last stored checkpoint, and its request terminated.
func (r *run) failTooLarge(ctx context.Context, s *seq.Sequence, runErr error) error {
	reason := tooLargeText(s, runErr)
	r.log.Error("run failed: state too large", "err", reason)
	r.w.failRun(ctx, r.req.RunID, s.Name, r.attempt, reason)
	_ = r.msg.TermWithReason(clip(reason, 200))
	return runErr
}

// finalOverCheckpoint stores a final state over the run's last stored
// checkpoint (its groups and slots as of then), changed by final, when the
// final state with the newer result did not fit.
func (r *run) finalOverCheckpoint(ctx context.Context, final func(st *events.RunState)) error {
	return r.store(ctx, func(st *events.RunState) error {
		final(st)
		st.Error = clip(st.Error, maxFinalError)
		return nil
	})
}

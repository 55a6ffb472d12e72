package seq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"

	"github.com/skillbus/skillbus/internal/suggest"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// Observer watches a run. The seqworker checkpoints the Result given to
// GroupFinished into the RUNS bucket and publishes progress events.
//
// Both methods are called from the goroutine that called Run, never under
// a lock and never concurrently. r is a copy owned by the observer. group is
// the 0-based index into r.Groups.
type Observer interface {
	// GroupStarted is called when a group is about to start (before its
	// input checks and `when`).
	GroupStarted(ctx context.Context, r *Result, group int)
	// GroupFinished is called after every group that ended: succeeded,
	// partial, skipped or failed (not when the run was interrupted inside
	// the group). A non-nil error stops the run: Run returns an error
	// wrapping ErrObserver and the Result is interrupted, so that the run
	// can be resumed from the last checkpoint that was written.
	GroupFinished(ctx context.Context, r *Result, group int) error
}

// ObserverFuncs adapts two functions to Observer; nil fields do nothing.
type ObserverFuncs struct {
	Started  func(ctx context.Context, r *Result, group int)
	Finished func(ctx context.Context, r *Result, group int) error
}

// GroupStarted calls o.Started when set.
func (o ObserverFuncs) GroupStarted(ctx context.Context, r *Result, group int) {
	if o.Started != nil {
		o.Started(ctx, r, group)
	}
}

// GroupFinished calls o.Finished when set.
func (o ObserverFuncs) GroupFinished(ctx context.Context, r *Result, group int) error {
	if o.Finished != nil {
		return o.Finished(ctx, r, group)
	}
	return nil
}

// Default retry backoff (docs/sequences.md, "Failure policies"): the
// waits start at DefaultRetryInitial ±50% and double, and no wait is ever
// longer than DefaultRetryMax (the cap applies after the jitter).
const (
	DefaultRetryInitial = 250 * time.Millisecond
	DefaultRetryMax     = 10 * time.Second
)

type runConfig struct {
	maxItems  int
	progress  func(group, call int, fan FanOut)
	progEvery time.Duration
	observer  Observer
	resume    *Result
	retryInit time.Duration
	retryMax  time.Duration
	clock     Clock        // WithClock; realClock{} by default (clock.go)
	outcome   *WaitOutcome // WithWaitOutcome (waitfor.go)
}

// RunOption configures Run and RunGroup.
type RunOption func(*runConfig)

// WithObserver sets the observer of the run (see Observer).
func WithObserver(o Observer) RunOption { return func(c *runConfig) { c.observer = o } }

// WithResume resumes a run from a checkpoint: a Result previously handed to
// an observer (or returned by an interrupted Run) for the same sequence.
// Groups that the checkpoint shows as finished are not run again; their
// results and the checkpoint's slots are kept. When Run's args are nil the
// checkpoint's args are used. A checkpoint of another sequence, or of a
// sequence whose groups have changed, makes Run fail with ErrCheckpoint.
//
// Runs are at-least-once (docs/sequences.md): a tool of the group that was
// running when the checkpoint was taken may be called a second time.
func WithResume(checkpoint *Result) RunOption { return func(c *runConfig) { c.resume = checkpoint } }

// WithMaxItems sets the bound on the items of one for_each call
// (default MaxItemsDefault, 10,000): a longer list fails its group with
// ErrArgument before any item is called. n <= 0 keeps the default.
func WithMaxItems(n int) RunOption {
	return func(c *runConfig) {
		if n > 0 {
			c.maxItems = n
		}
	}
}

// WithItemProgress makes every for_each call report its items in flight
// every interval while they run: f gets the 0-based group and call and a
// snapshot: Items, MaxParallel and the items succeeded, failed and in
// flight (Running) so far — no other counts, no Details. f is called from
// a goroutine of its own, possibly while other calls of the run report
// too, so it must be safe for concurrent use; it is not called after the
// call's group has ended. Progress is informational: the group's result
// is what counts. An interval <= 0 means one second.
func WithItemProgress(interval time.Duration, f func(group, call int, fan FanOut)) RunOption {
	return func(c *runConfig) {
		if interval <= 0 {
			interval = time.Second
		}
		c.progress, c.progEvery = f, interval
	}
}

// WithRetryBackoff sets the retry waits: the first initial ±50%, then
// doubling; no wait is longer than max. Zero values keep the defaults.
func WithRetryBackoff(initial, max time.Duration) RunOption {
	return func(c *runConfig) {
		if initial > 0 {
			c.retryInit = initial
		}
		if max > 0 {
			c.retryMax = max
		}
	}
}

// Run runs s with the run arguments args (key → JSON value) against caller,
// following the execution rules of docs/sequences.md:
//
//   - Before the first group, args are checked against s.Signature: a
//     missing, unknown or mistyped argument fails the run (ErrArgument),
//     naming the first group that reads it. JSON null passes every type.
//   - Groups run strictly in order. Before a group starts, each `in` value
//     (a run argument or an earlier group's slot) is checked against its
//     type; then `when` is evaluated and a false one skips the group,
//     setting its out slots to null.
//   - The calls of a group start together (in order when parallel is
//     false), all within the group's timeout, retries and backoff waits
//     included. Arguments are substituted (an exact "$args.k" keeps the
//     JSON type; inside longer text the value is interpolated).
//   - A missing tool (ErrToolMissing) is never retried: missing: fail fails
//     the run at once, skip leaves the slot null, degrade writes the fallback.
//   - A failed call under on_error: abort fails the run and cancels its
//     sibling calls; continue records the error and leaves the slot null;
//     retry makes up to `retries` further attempts with exponential backoff
//     and jitter while the group's time remains, then aborts. An attempt that
//     timed out on its own is retried like any failure; when the group's
//     deadline ends the attempts the error wraps ErrGroupTimeout, says so,
//     and keeps the last tool error.
//   - A slot written by one call holds its result; an array slot written by
//     several calls holds their results in declaration order.
//   - A for_each call is made once per item of its list (none for an
//     empty or null list, which writes []), each item a call with the
//     policies above, at most max_parallel at once; its slot holds the
//     items' results in item order. A list over WithMaxItems fails the
//     group (ErrArgument) before any item is called.
//   - A wait_for group stops the run: Run returns the Result waiting
//     (StatusWaiting, the group GroupWaiting with its Wait) and an error
//     wrapping ErrWaiting. Resumed WithResume and WithWaitOutcome, the
//     group ends as the outcome says: a signal's values become its slots;
//     a rejection or a timeout fails it (ErrRejected, ErrWaitTimeout)
//     under its on_error (continue: slots null, group partial).
//
// Run always returns a Result (never nil). The error is nil when the run
// succeeded; otherwise an *Error (wrapping ErrArgument, ErrExpression,
// ErrToolMissing, ErrToolFailed, ErrGroupTimeout, ErrCheckpoint or
// ErrObserver, and the tool's own error) or, when ctx ended, an error
// wrapping ctx.Err() with the result interrupted.
func Run(ctx context.Context, s *Sequence, caller Caller, args map[string]json.RawMessage, opts ...RunOption) (*Result, error) {
	if s == nil || caller == nil {
		return &Result{Status: StatusFailed, Error: "seq: Run needs a sequence and a caller"}, &Error{Kind: ErrInvalidValue, Message: "seq: Run needs a sequence and a caller"}
	}
	cfg := runConfig{retryInit: DefaultRetryInitial, retryMax: DefaultRetryMax, clock: realClock{}, maxItems: MaxItemsDefault}
	for _, o := range opts {
		o(&cfg)
	}
	start := cfg.clock.Now()
	r := &Result{Sequence: s.Name, Status: StatusRunning, Args: args, Slots: map[string]json.RawMessage{}, Groups: make([]GroupResult, len(s.Groups))}
	for i := range s.Groups {
		r.Groups[i] = pendingGroup(&s.Groups[i])
	}
	finish := func(err error) (*Result, error) {
		r.Duration = Duration(since(cfg.clock, start))
		switch {
		case err == nil:
			r.Status = StatusSucceeded
		case errors.Is(err, ErrObserver) || ctx.Err() != nil && errors.Is(err, ctx.Err()):
			r.Status, r.Error = StatusInterrupted, err.Error()
		default:
			r.Status, r.Error = StatusFailed, err.Error()
		}
		return r, err
	}
	first := 0
	if cp := cfg.resume; cp != nil {
		n, err := resumeFrom(s, cp, r)
		if err != nil {
			return finish(err)
		}
		first = n
		if args == nil {
			r.Args = cp.Args
		}
		r.ArgsNotKept = cp.ArgsNotKept
	}
	if err := checkRunArgs(s, r.Args); err != nil {
		return finish(err)
	}
	e := &engine{s: s, caller: caller, cfg: &cfg, argsLeft: MaxRunArgs - argsCost(r.Groups[:first]), argsNotKept: r.ArgsNotKept}
	for gi := first; gi < len(s.Groups); gi++ {
		if err := ctx.Err(); err != nil {
			return finish(fmt.Errorf("seq: run interrupted before group %d %q: %w", gi+1, s.Groups[gi].Name, err))
		}
		r.Groups[gi].Status = GroupRunning
		if cfg.observer != nil {
			cfg.observer.GroupStarted(ctx, r.Clone(), gi)
		}
		scope, err := e.scope(gi, r.Args, r.Slots)
		var gr GroupResult
		if err == nil {
			gr, err = e.runGroup(ctx, gi, scope, r.Slots)
		} else {
			gr = r.Groups[gi]
			gr.Status, gr.Error = GroupFailed, err.Error()
		}
		r.Groups[gi] = gr
		if gr.Status == GroupInterrupted {
			return finish(err)
		}
		if gr.Status == GroupWaiting {
			r.Duration, r.Status, r.Error = Duration(since(cfg.clock, start)), StatusWaiting, err.Error()
			return r, err
		}
		// Counted for the groups that ended: a resume runs an interrupted
		// group again.
		r.ArgsNotKept = e.argsNotKept
		if cfg.observer != nil {
			snap := r.Clone()
			if err != nil {
				snap.Status, snap.Error = StatusFailed, err.Error()
			}
			if oerr := cfg.observer.GroupFinished(ctx, snap, gi); oerr != nil && err == nil {
				return finish(&Error{Kind: ErrObserver, Group: gi + 1, GroupName: s.Groups[gi].Name, Message: "the observer failed after the group finished: " + oerr.Error(), Err: oerr})
			}
		}
		if err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// RunGroup runs the single group called name of s (the seq_call endpoint):
// args must hold exactly the group's `in` keys (null allowed). It returns
// the group's out slots and its result. Errors are as for Run, plus
// ErrNoGroup for an unknown name.
func RunGroup(ctx context.Context, s *Sequence, name string, caller Caller, args map[string]json.RawMessage, opts ...RunOption) (map[string]json.RawMessage, *GroupResult, error) {
	cfg := runConfig{retryInit: DefaultRetryInitial, retryMax: DefaultRetryMax, clock: realClock{}, maxItems: MaxItemsDefault}
	for _, o := range opts {
		o(&cfg)
	}
	if s == nil || caller == nil {
		return nil, nil, &Error{Kind: ErrInvalidValue, Message: "seq: RunGroup needs a sequence and a caller"}
	}
	g, gi := s.Group(name)
	if g == nil {
		names := make([]string, len(s.Groups))
		for i := range s.Groups {
			names[i] = s.Groups[i].Name
		}
		return nil, nil, &Error{Kind: ErrNoGroup, Message: fmt.Sprintf("sequence %q has no group %q; its groups are %s", s.Name, name, strings.Join(names, ", "))}
	}
	if g.WaitFor != nil {
		return nil, nil, &Error{Kind: ErrInvalidValue, Group: gi + 1, GroupName: g.Name, Message: fmt.Sprintf("group %q is a wait (wait_for), which only a run can do; run the sequence instead of calling the group", g.Name)}
	}
	sig := Signature(g.In)
	if sig == nil {
		sig = Signature{}
	}
	one := &Sequence{Name: s.Name, Groups: []Group{*g}, Signature: sig}
	if err := checkRunArgs(one, args); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Group, e.GroupName = gi+1, g.Name
		}
		return nil, nil, err
	}
	e := &engine{s: s, caller: caller, cfg: &cfg, argsLeft: MaxRunArgs}
	scope := make(map[string]json.RawMessage, len(g.In))
	for k := range g.In {
		scope[k] = args[k]
	}
	slots := map[string]json.RawMessage{}
	gr, err := e.runGroup(ctx, gi, scope, slots)
	return slots, &gr, err
}

func pendingGroup(g *Group) GroupResult {
	gr := GroupResult{Name: g.Name, Status: GroupPending, Calls: make([]CallResult, len(g.Tools))}
	for i, c := range g.Tools {
		gr.Calls[i] = CallResult{Tool: c.Tool, As: c.As, Status: CallPending}
	}
	return gr
}

// resumeFrom copies the finished groups of cp into r and returns the index
// of the first group to run.
func resumeFrom(s *Sequence, cp *Result, r *Result) (int, error) {
	bad := func(format string, a ...any) (int, error) {
		return 0, &Error{Kind: ErrCheckpoint, Message: fmt.Sprintf(format, a...) + "; start a new run instead of resuming"}
	}
	if cp.Sequence != s.Name {
		return bad("the checkpoint is of sequence %q, not %q", cp.Sequence, s.Name)
	}
	if len(cp.Groups) != len(s.Groups) {
		return bad("the checkpoint has %d groups, the sequence now has %d", len(cp.Groups), len(s.Groups))
	}
	for i := range s.Groups {
		if cp.Groups[i].Name != s.Groups[i].Name {
			return bad("group %d is %q in the checkpoint but %q in the sequence", i+1, cp.Groups[i].Name, s.Groups[i].Name)
		}
	}
	n := 0
	for n < len(cp.Groups) && cp.Groups[n].Status.Finished() {
		r.Groups[n] = cp.Groups[n]
		r.Groups[n].Calls = append([]CallResult(nil), cp.Groups[n].Calls...)
		n++
	}
	for k, v := range cp.Slots {
		r.Slots[k] = v
	}
	return n, nil
}

// checkRunArgs checks args against the signature before the first group.
func checkRunArgs(s *Sequence, args map[string]json.RawMessage) error {
	firstReader := func(k string) (int, string) {
		for i := range s.Groups {
			if _, ok := s.Groups[i].In[k]; ok {
				return i + 1, s.Groups[i].Name
			}
		}
		return 0, ""
	}
	for _, k := range s.Signature.Keys() {
		t := s.Signature[k]
		gi, gn := firstReader(k)
		raw, ok := args[k]
		if !ok {
			return &Error{Kind: ErrArgument, Group: gi, GroupName: gn, Field: "in." + k, Message: fmt.Sprintf("the run argument %q (%s) is missing; the sequence takes %s — pass every argument (null is allowed)", k, t, s.Signature)}
		}
		if !json.Valid(raw) {
			return &Error{Kind: ErrArgument, Group: gi, GroupName: gn, Field: "in." + k, Message: fmt.Sprintf("the run argument %q is not valid JSON (%q); pass a JSON value of type %s", k, clip(string(raw), 40), t)}
		}
		if ok, got := checkType(t, raw); !ok {
			return &Error{Kind: ErrArgument, Group: gi, GroupName: gn, Field: "in." + k, Message: fmt.Sprintf("the run argument %q must be %s, got %s (%s); pass a value of type %s", k, t, got, clip(string(raw), 40), t)}
		}
	}
	for k := range args {
		if _, ok := s.Signature[k]; !ok {
			hint := ""
			if sg := suggest.Closest(k, s.Signature.Keys()); sg != "" {
				hint = fmt.Sprintf(" Did you mean %q?", sg)
			}
			return &Error{Kind: ErrArgument, Field: k, Message: fmt.Sprintf("unknown run argument %q; the sequence takes %s.%s", k, s.Signature, hint)}
		}
	}
	return nil
}

// engine runs the groups of one sequence.
type engine struct {
	s      *Sequence
	caller Caller
	cfg    *runConfig
	// argsLeft is what remains of the run's MaxRunArgs budget for the
	// arguments recorded in its CallResults (SentArgs), and argsNotKept
	// counts the calls it could not keep; runGroup, called from Run's
	// goroutine only, spends and counts them.
	argsLeft, argsNotKept int
}

// scope builds and type-checks a group's `in` values.
func (e *engine) scope(gi int, args, slots map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	g := &e.s.Groups[gi]
	scope := make(map[string]json.RawMessage, len(g.In))
	for k, t := range g.In {
		raw, ok := slots[k]
		from := "the slot written by an earlier group"
		if st, isArg := e.s.Signature[k]; isArg {
			raw, ok = args[k]
			from = "the run argument"
			if ok && st == t {
				// Checked against this very type before the first group
				// (checkRunArgs, on the same arguments): a list of many
				// items is not walked again for every group that reads it.
				scope[k] = raw
				continue
			}
		}
		if !ok {
			raw = json.RawMessage("null")
		}
		if ok, got := checkType(t, raw); !ok {
			return nil, &Error{Kind: ErrArgument, Group: gi + 1, GroupName: g.Name, Field: "in." + k, Message: fmt.Sprintf("$args.%s (%s) must be %s, got %s (%s); the group did not start", k, from, t, got, clip(string(raw), 60))}
		}
		scope[k] = raw
	}
	return scope, nil
}

// errAborted is the cancel cause when a call failed the group.
var errAborted = errors.New("another call of the group failed")

// callOutcome is what one call left behind.
type callOutcome struct {
	res   CallResult
	value json.RawMessage // nil = null
	fatal error           // non-nil: this call fails the group
}

func (e *engine) runGroup(ctx context.Context, gi int, scope map[string]json.RawMessage, slots map[string]json.RawMessage) (res GroupResult, _ error) {
	g := &e.s.Groups[gi]
	gr := pendingGroup(g)
	gr.Status, gr.Started = GroupRunning, e.cfg.clock.Now()
	// res, not gr: a deferred write to gr would come after the return
	// value was copied and be lost.
	defer func() { res.Duration = Duration(since(e.cfg.clock, gr.Started)) }()
	fail := func(err error) (GroupResult, error) {
		gr.Status, gr.Error = GroupFailed, err.Error()
		gr.Duration = Duration(since(e.cfg.clock, gr.Started))
		// A call the failed group never started (its `when` could not be
		// evaluated) is not_run, not pending: the group is over.
		for i := range gr.Calls {
			if gr.Calls[i].Status == CallPending {
				gr.Calls[i].Status = CallNotRun
			}
		}
		return gr, err
	}
	// The group's timeout starts now: it bounds the `when` evaluation too.
	gctx, cancelTimeout := e.cfg.clock.WithTimeout(ctx, time.Duration(g.Timeout))
	defer cancelTimeout()
	if g.When != "" {
		prog := g.when
		if prog == nil { // a Sequence not built by Parse
			p, msg, cause := compileWhen(g.When, g.In)
			if msg != "" {
				return fail(&Error{Kind: ErrExpression, Group: gi + 1, GroupName: g.Name, Field: "when", Message: msg, Err: cause})
			}
			prog = p
		}
		ok, err := prog.eval(gctx, scope)
		if err != nil && ctx.Err() != nil {
			gr.Status, gr.Error = GroupInterrupted, "the run was interrupted: "+ctx.Err().Error()
			for i := range gr.Calls {
				gr.Calls[i].Status = CallNotRun
			}
			return gr, fmt.Errorf("seq: run interrupted in group %d %q: %w", gi+1, g.Name, ctx.Err())
		}
		if errors.Is(err, ErrTooCostly) {
			return fail(&Error{Kind: ErrExpression, Group: gi + 1, GroupName: g.Name, Field: "when", Message: fmt.Sprintf("%q could not be evaluated: %v", clip(g.When, 120), err), Err: err})
		}
		if err != nil {
			return fail(&Error{Kind: ErrExpression, Group: gi + 1, GroupName: g.Name, Field: "when", Message: fmt.Sprintf("%q could not be evaluated: %v; guard values that may be null, e.g. \"$args.x != null && $args.x > 0\"", clip(g.When, 120), err), Err: err})
		}
		if !ok {
			gr.Status, gr.Reason = GroupSkipped, "when is false"
			for i := range gr.Calls {
				gr.Calls[i].Status = CallSkipped
			}
			for k := range g.Out {
				slots[k] = json.RawMessage("null")
			}
			gr.Duration = Duration(since(e.cfg.clock, gr.Started))
			return gr, nil
		}
	}

	if g.WaitFor != nil {
		return e.waitGroup(gi, scope, slots, gr) // waitfor.go
	}
	cctx, cancel := context.WithCancelCause(gctx)
	defer cancel(nil)

	// Render every call's arguments up front, in this goroutine: the scope
	// is the same for all calls of the group.
	sc := &argScope{raw: scope}
	rendered := make([]json.RawMessage, len(g.Tools))
	renderErrs := make([]error, len(g.Tools))
	for ci := range g.Tools {
		if g.Tools[ci].ForEach == "" { // a for_each call renders per item
			rendered[ci], renderErrs[ci] = sc.render(g.Tools[ci].Args)
		}
	}
	abort := func() { cancel(errAborted) }
	outs := make([]callOutcome, len(g.Tools))
	// callOne makes call ci and stores its outcome in outs[ci]; a fatal
	// outcome cancels the group's other calls.
	callOne := func(ci int) {
		if g.Tools[ci].ForEach != "" {
			outs[ci] = e.forEach(ctx, cctx, gi, ci, scope, abort)
		} else {
			outs[ci] = e.call(ctx, cctx, gi, ci, -1, rendered[ci], renderErrs[ci])
		}
		if outs[ci].fatal != nil {
			cancel(errAborted)
		}
	}
	if g.Parallel && len(g.Tools) > 1 {
		// The last call runs on this goroutine: one goroutine fewer to
		// start per group, and this one's stack has grown already (a new
		// goroutine's grows, and is copied, as its call goes deeper).
		var wg sync.WaitGroup
		last := len(g.Tools) - 1
		for ci := range last {
			wg.Add(1)
			go func() {
				defer wg.Done()
				callOne(ci)
			}()
		}
		callOne(last)
		wg.Wait()
	} else {
		for ci := range g.Tools {
			if cctx.Err() != nil {
				outs[ci] = callOutcome{res: CallResult{Tool: g.Tools[ci].Tool, As: g.Tools[ci].As, Status: CallNotRun}}
				continue
			}
			callOne(ci)
		}
	}
	var fatal error
	partial := false
	for ci := range outs {
		gr.Calls[ci] = outs[ci].res
		e.clipArgs(&gr.Calls[ci])
		if outs[ci].fatal != nil && fatal == nil {
			fatal = outs[ci].fatal
		}
		if outs[ci].res.Status == CallFailed {
			partial = true
		}
	}
	if ctx.Err() != nil {
		gr.Status, gr.Error = GroupInterrupted, "the run was interrupted: "+ctx.Err().Error()
		return gr, fmt.Errorf("seq: run interrupted in group %d %q: %w", gi+1, g.Name, ctx.Err())
	}
	if fatal != nil {
		return fail(fatal)
	}
	// Write slots: one writer → its value; several → array in declaration order.
	writers := map[string][]int{}
	for ci, c := range g.Tools {
		if c.As != "" {
			writers[c.As] = append(writers[c.As], ci)
		}
	}
	for k, w := range writers {
		if len(w) == 1 {
			slots[k] = orNull(outs[w[0]].value)
			continue
		}
		var b bytes.Buffer
		b.WriteByte('[')
		for i, ci := range w {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(orNull(outs[ci].value))
		}
		b.WriteByte(']')
		slots[k] = b.Bytes()
	}
	gr.Status = GroupSucceeded
	if partial {
		gr.Status = GroupPartial
	}
	return gr, nil
}

// clipArgs bounds the arguments c holds as its call sent them (for a
// for_each call, its first item's) and those of its items in Details,
// spending the run's budget in call and item order (SentArgs).
func (e *engine) clipArgs(c *CallResult) {
	if !c.SentArgs.clip(&e.argsLeft) {
		e.argsNotKept++
	}
	if c.ForEach == nil {
		return
	}
	for i := range c.ForEach.Details {
		if !c.ForEach.Details[i].SentArgs.clip(&e.argsLeft) {
			e.argsNotKept++
		}
	}
}

func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return json.RawMessage("null")
	}
	return v
}

// call runs one tool call with the group's policies. runCtx is the run's
// context (to tell interruption from the group's own deadline), cctx the
// group's (deadline and sibling-abort cancellation); item is the for_each
// item's index, -1 without for_each (CallPosition).
func (e *engine) call(runCtx, cctx context.Context, gi, ci, item int, args json.RawMessage, err error) (out callOutcome) {
	g := &e.s.Groups[gi]
	c := &g.Tools[ci]
	out = callOutcome{res: CallResult{Tool: c.Tool, As: c.As, Status: CallPending}}
	start := e.cfg.clock.Now()
	defer func() { out.res.Duration = Duration(since(e.cfg.clock, start)) }()
	if err != nil {
		out.res.Status, out.res.Error = CallFailed, err.Error()
		out.fatal = e.callErr(gi, ci, ErrArgument, err.Error(), err)
		return out
	}
	var bo backoff.BackOff
	if g.OnError == OnErrorRetry {
		rb := newRetryBackoff(e.cfg.retryInit, e.cfg.retryMax, rand.Float64)
		rb.exp.Clock = backoffClock{e.cfg.clock}
		bo = backoff.WithMaxRetries(rb, uint64(g.Retries))
	}
	var lastErr error
	permanent := ""
	// The arguments as sent, the same for every attempt; runGroup bounds
	// them (clipArgs).
	out.res.Args = args
	for {
		out.res.Attempts++
		res, err := e.caller.Call(withPosition(cctx, CallPosition{Group: gi, Call: ci, Item: item, Attempt: out.res.Attempts}), c.Tool, args)
		if err == nil {
			if len(bytes.TrimSpace(res)) == 0 {
				res = nil
			} else if !json.Valid(res) {
				err = fmt.Errorf("tool %q returned text that is not JSON: %q", c.Tool, clip(string(res), 60))
			}
		}
		if err == nil {
			out.res.Status, out.value = CallSucceeded, res
			return out
		}
		if errors.Is(err, ErrToolMissing) {
			e.missing(gi, ci, &out, err)
			return out
		}
		lastErr = err
		if cctx.Err() != nil {
			break
		}
		if bo == nil {
			break
		}
		if code, ok := permanentCode(err); ok {
			permanent = code // retrying would send the same arguments again and fail the same way
			break
		}
		wait := bo.NextBackOff()
		if wait == backoff.Stop {
			break
		}
		tc, stop := e.cfg.clock.NewTimer(wait)
		select {
		case <-tc:
		case <-cctx.Done():
			stop()
		}
		if cctx.Err() != nil {
			break
		}
	}
	e.failed(runCtx, cctx, gi, ci, &out, lastErr, permanent)
	return out
}

// callErr is the *Error of call ci (0-based) of group gi: kind, msg and
// its cause, with the group and tool named (1-based, as users count).
func (e *engine) callErr(gi, ci int, kind error, msg string, cause error) *Error {
	g := &e.s.Groups[gi]
	return &Error{Kind: kind, Group: gi + 1, GroupName: g.Name, Tool: ci + 1, ToolName: g.Tools[ci].Tool, Message: msg, Err: cause}
}

// missing settles call ci of group gi, whose tool no provider serves
// (err), by the group's missing policy (docs/sequences.md, "Failure
// policies"): skipped, degraded (with the call's fallback value), or
// failed. It and failed are kept out of call so that call's frame, on
// the path of every tool call, stays small.
func (e *engine) missing(gi, ci int, out *callOutcome, err error) {
	g := &e.s.Groups[gi]
	c := &g.Tools[ci]
	switch g.Missing {
	case MissingSkip:
		out.res.Status, out.res.Error = CallSkipped, err.Error()
	case MissingDegrade:
		out.res.Status, out.res.Error = CallDegraded, err.Error()
		if c.Fallback != "" {
			out.value = json.RawMessage(c.Fallback)
		}
	default:
		out.res.Status, out.res.Error = CallFailed, err.Error()
		out.fatal = e.callErr(gi, ci, ErrToolMissing, fmt.Sprintf("no provider serves the tool %q and the group has missing: fail; start a provider for it, or set missing: skip or degrade", c.Tool), err)
	}
}

// failed settles call ci of group gi whose attempts ended with lastErr:
// canceled (the run interrupted, or another call of the group failed) or
// failed, saying why the attempts ended (the group's deadline, a
// permanent error code, the retries used up); a failed call is fatal to
// the group unless on_error is continue.
func (e *engine) failed(runCtx, cctx context.Context, gi, ci int, out *callOutcome, lastErr error, permanent string) {
	g := &e.s.Groups[gi]
	// The call failed. Why did the attempts end?
	switch {
	case runCtx.Err() != nil:
		out.res.Status, out.res.Error = CallCanceled, "the run was interrupted: "+lastErr.Error()
		return
	case errors.Is(context.Cause(cctx), errAborted):
		out.res.Status, out.res.Error = CallCanceled, "canceled because another call of the group failed (last error: "+lastErr.Error()+")"
		return
	}
	var fe *Error
	if cctx.Err() != nil { // the group's deadline
		fe = e.callErr(gi, ci, ErrGroupTimeout, fmt.Sprintf("the group timeout of %s ended the attempts after %d attempt(s); last tool error: %v. Raise the group's timeout or make the tool faster", g.Timeout, out.res.Attempts, lastErr), lastErr)
	} else if permanent != "" {
		fe = e.callErr(gi, ci, ErrToolFailed, fmt.Sprintf("failed after %d attempt(s), not retried: permanent error %s (a 4xx code other than 408 and 429 fails the same way again); last tool error: %v", out.res.Attempts, permanent, lastErr), lastErr)
	} else if g.OnError == OnErrorRetry {
		fe = e.callErr(gi, ci, ErrToolFailed, fmt.Sprintf("failed after %d attempts (1 + retries: %d); last tool error: %v", out.res.Attempts, g.Retries, lastErr), lastErr)
	} else {
		fe = e.callErr(gi, ci, ErrToolFailed, fmt.Sprintf("failed: %v", lastErr), lastErr)
	}
	out.res.Status, out.res.Error = CallFailed, fe.Message
	if g.OnError != OnErrorContinue {
		out.fatal = fe
	}
}

// permanentCode reports whether err is a tool's error whose code means
// that calling again with the same arguments cannot succeed — a 4xx code
// other than 408 and 429 (toolcall.Permanent; docs/sequences.md, "Failure
// policies") — and returns the code.
func permanentCode(err error) (string, bool) {
	var te *toolcall.Error
	if errors.As(err, &te) && te.Permanent() {
		return te.CodeOrDefault(), true
	}
	return "", false
}

// retryBackoff is the wait before each retry: an interval that starts at
// initial and doubles up to max, with ±50% jitter, and never more than
// max — the cap applies after the jitter. Each wait is drawn uniformly
// from [interval/2, min(interval×1.5, max)], so once the interval reaches
// max the waits spread over [max/2, max] instead of piling up at max.
type retryBackoff struct {
	exp  *backoff.ExponentialBackOff // the interval, without jitter
	max  time.Duration
	rand func() float64 // uniform in [0, 1)
}

func newRetryBackoff(initial, max time.Duration, rnd func() float64) *retryBackoff {
	exp := &backoff.ExponentialBackOff{
		InitialInterval:     initial,
		RandomizationFactor: 0,
		Multiplier:          2,
		MaxInterval:         max,
		Stop:                backoff.Stop,
		Clock:               backoff.SystemClock,
	}
	exp.Reset()
	return &retryBackoff{exp: exp, max: max, rand: rnd}
}

// NextBackOff returns the next wait (backoff.BackOff).
func (b *retryBackoff) NextBackOff() time.Duration {
	i := b.exp.NextBackOff()
	if i == backoff.Stop {
		return backoff.Stop
	}
	lo, hi := i/2, min(i+i/2, b.max)
	if hi < lo {
		lo = hi
	}
	return lo + time.Duration(b.rand()*float64(hi-lo))
}

// Reset starts the intervals again (backoff.BackOff).
func (b *retryBackoff) Reset() { b.exp.Reset() }

// argScope is a group's `in` values, with their interpolation text
// (strings unquoted, other values as compact JSON) computed once per key.
type argScope struct {
	raw  map[string]json.RawMessage
	text map[string]string
	// item is the current item of a for_each call (hasItem set), and
	// index its 0-based position; fields caches item's fields when it is
	// an object and $item.FIELD is read.
	item    json.RawMessage
	index   int
	hasItem bool
	fields  map[string]json.RawMessage
}

// render substitutes $args references in a call's args and returns the
// JSON object to send ("{}" when there are none).
func (sc *argScope) render(args map[string]any) (json.RawMessage, error) {
	if len(args) == 0 {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	buf.Grow(64)
	if err := sc.write(&buf, args); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// write writes v as compact JSON (keys sorted), substituting references.
func (sc *argScope) write(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, refPrefix) && (!sc.hasItem || !strings.Contains(x, "$i")) {
			appendJSONString(b, x)
			return nil
		}
		r, err := sc.substitute(x)
		if err != nil {
			return err
		}
		return appendJSON(b, r)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := sc.write(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case map[string]any:
		var arr [16]string
		keys := arr[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			appendJSONString(b, k)
			b.WriteByte(':')
			if err := sc.write(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
	return appendJSON(b, v)
}

// appendJSON writes v (a value built by the parser and substitute) as
// compact JSON with object keys sorted, as encoding/json would, without
// reflection.
func appendJSON(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		appendJSONString(b, x)
	case json.Number:
		b.WriteString(string(x))
	case json.RawMessage:
		return json.Compact(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := appendJSON(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			appendJSONString(b, k)
			b.WriteByte(':')
			if err := appendJSON(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		enc, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(enc)
	}
	return nil
}

// appendJSONString writes s as a JSON string (control characters escaped,
// invalid UTF-8 replaced by U+FFFD as encoding/json does).
func appendJSONString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			b.WriteByte(hex[r>>12&0xf])
			b.WriteByte(hex[r>>8&0xf])
			b.WriteByte(hex[r>>4&0xf])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// interp returns the text that $args.k stands for inside a longer string.
func (sc *argScope) interp(k string) (string, error) {
	if t, ok := sc.text[k]; ok {
		return t, nil
	}
	t, err := interpText(sc.raw[k])
	if err != nil {
		return "", fmt.Errorf("$args.%s %v", k, err)
	}
	if sc.text == nil {
		sc.text = map[string]string{}
	}
	sc.text[k] = t
	return t, nil
}

// interpText is the text a JSON value stands for inside a longer string:
// a string without its quotes, any other value as compact JSON.
func interpText(raw json.RawMessage) (string, error) {
	raw = orNull(trimSpace(raw))
	var t string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", fmt.Errorf("is not valid JSON: %v", err)
		}
	} else {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", fmt.Errorf("is not valid JSON: %v", err)
		}
		t = b.String()
		// A whole number written with an exponent (1e3, 9.007199254740993e15)
		// reads as its digits inside text: 1000, 9007199254740993.
		if c := t[0]; (c == '-' || c >= '0' && c <= '9') && strings.ContainsAny(t, "eE") {
			if i, ok := exactInt(t); ok {
				t = i.String()
			}
		}
	}
	return t, nil
}

// itemValue returns the value of an $item / $index reference of a
// for_each call: the item, one field of it, or the index.
func (sc *argScope) itemValue(r itemRef) (json.RawMessage, error) {
	if r.name == "index" {
		return json.RawMessage(strconv.Itoa(sc.index)), nil
	}
	if !r.dot {
		return orNull(sc.item), nil
	}
	it := orNull(trimSpace(sc.item))
	if string(it) == "null" {
		return it, nil // a null item has null fields, as a null slot reads null
	}
	if sc.fields == nil {
		if err := json.Unmarshal(it, &sc.fields); err != nil || sc.fields == nil {
			return nil, fmt.Errorf("%s: the item is %s, not an object, so it has no field %q; write $item for the whole item", r.text, JSONKind(it), r.field)
		}
	}
	v, ok := sc.fields[r.field]
	if !ok {
		names := make([]string, 0, len(sc.fields))
		for k := range sc.fields {
			names = append(names, k)
		}
		slices.Sort(names)
		hint := ""
		if sg := suggest.Closest(r.field, names); sg != "" {
			hint = fmt.Sprintf(" Did you mean %q?", sg)
		}
		return nil, fmt.Errorf("%s: the item has no field %q (its fields: %s).%s Fix the field name, or give every item the field (null is allowed)", r.text, r.field, clip(strings.Join(names, ", "), 200), hint)
	}
	return orNull(v), nil
}

// nextRef finds the next reference in x from its start: $args.KEY always,
// $item, $item.FIELD and $index when the scope has an item. It returns
// the reference's start and end, and for an item reference the reference;
// i < 0 when there is none.
func (sc *argScope) nextRef(x string) (i, end int, ir *itemRef) {
	i = strings.Index(x, refPrefix)
	if sc.hasItem {
		if loc, ok := findItemRef(x); ok && (i < 0 || loc[0] < i) {
			r := itemRef{text: x[loc[0]:loc[1]], name: x[loc[2]:loc[3]]}
			if loc[4] >= 0 {
				r.dot, r.field = true, x[loc[4]+1:loc[5]]
			}
			return loc[0], loc[1], &r
		}
	}
	if i < 0 {
		return -1, -1, nil
	}
	k := i + len(refPrefix)
	for k < len(x) && isIdent(x[k]) {
		k++
	}
	return i, k, nil
}

const refPrefix = "$args."

func (sc *argScope) substitute(v any) (any, error) {
	switch x := v.(type) {
	case string:
		i, k, ir := sc.nextRef(x)
		if i < 0 {
			return x, nil
		}
		if i == 0 && k == len(x) { // exactly one reference: keep the JSON type
			if ir != nil {
				v, err := sc.itemValue(*ir)
				if err != nil {
					return nil, err
				}
				return v, nil
			}
			if key := x[len(refPrefix):]; keyRE.MatchString(key) {
				return orNull(sc.raw[key]), nil
			}
		}
		var b strings.Builder
		for i >= 0 {
			b.WriteString(x[:i])
			j := i + len(refPrefix)
			switch {
			case ir != nil:
				v, err := sc.itemValue(*ir)
				if err != nil {
					return nil, err
				}
				t, err := interpText(v)
				if err != nil {
					return nil, fmt.Errorf("%s %v", ir.text, err)
				}
				b.WriteString(t)
			case k == j: // not a reference (parse rejects these; keep the text)
				b.WriteString(refPrefix)
			default:
				t, err := sc.interp(x[j:k])
				if err != nil {
					return nil, err
				}
				b.WriteString(t)
			}
			x = x[k:]
			i, k, ir = sc.nextRef(x)
		}
		b.WriteString(x)
		return b.String(), nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			r, err := sc.substitute(e)
			if err != nil {
				return nil, err
			}
			m[k] = r
		}
		return m, nil
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			r, err := sc.substitute(e)
			if err != nil {
				return nil, err
			}
			a[i] = r
		}
		return a, nil
	}
	return v, nil
}

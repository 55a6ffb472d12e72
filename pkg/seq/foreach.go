package seq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// itemRE finds $item, $item.FIELD and $index references (docs/sequences.md,
// "for_each"); the field part may be empty or invalid, which is reported.
// `$items` and `$indexes` are not references (the name must end there).
var itemRE = regexp.MustCompile(`\$(item|index)\b(\.[A-Za-z0-9_]*)?`)

// findItemRef returns the position of the first $item, $item.FIELD or
// $index reference in x as itemRE.FindStringSubmatchIndex gives it
// ([start, end, name start, name end, field start, field end], the field
// part -1, -1 when absent) and true, or false when there is none. It is that regular
// expression written out: the engine renders a for_each call's arguments
// once per item, where the regular expression was half the cost of a
// rendering (BENCHMARKS.md, "for_each").
func findItemRef(x string) (loc [6]int, found bool) {
	for off := 0; ; {
		j := strings.IndexByte(x[off:], '$')
		if j < 0 {
			return loc, false
		}
		i := off + j
		n := 0
		switch rest := x[i+1:]; {
		case strings.HasPrefix(rest, "item"):
			n = len("item")
		case strings.HasPrefix(rest, "index"):
			n = len("index")
		}
		if e := i + 1 + n; n > 0 && (e == len(x) || !isIdent(x[e])) {
			if e < len(x) && x[e] == '.' {
				f := e + 1
				for f < len(x) && isIdent(x[f]) {
					f++
				}
				return [6]int{i, f, i + 1, e, e, f}, true
			}
			return [6]int{i, e, i + 1, e, -1, -1}, true
		}
		off = i + 1
	}
}

// itemRef is one $item / $index reference found in a string.
type itemRef struct {
	text  string // as written: "$item.path"
	name  string // "item" or "index"
	field string // "path"; "" for $item and $index
	dot   bool   // a "." followed the name
}

// itemRefsIn calls found for every $item / $index reference in the strings
// of v (map keys are not searched), in a stable order.
func itemRefsIn(v any, found func(r itemRef)) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "$i") {
			return
		}
		for _, m := range itemRE.FindAllStringSubmatch(x, -1) {
			r := itemRef{text: m[0], name: m[1]}
			if m[2] != "" {
				r.dot, r.field = true, m[2][1:]
			}
			found(r)
		}
	case map[string]any:
		for _, k := range sortedAnyKeys(x) {
			itemRefsIn(x[k], found)
		}
	case []any:
		for _, e := range x {
			itemRefsIn(e, found)
		}
	}
}

// checkForEach checks call ci of group g (0-based gi): its for_each names an
// `in` value of type array<T>, and its $item / $index references fit T.
func (d *decoder) checkForEach(s *Sequence, g *Group, gi, ci int, ca at, provided map[string]int, provType map[string]Type) {
	c := &g.Tools[ci]
	var elem Type // T of the list; "" when unknown (no or a bad for_each)
	if c.ForEach != "" {
		k := c.ForEachKey()
		t, ok := g.In[k]
		switch {
		case !ok && provided[k] == gi+1:
			d.errf(ErrDataflow, ca, "for_each", nil, "reads $args.%s, but %q is an out slot of this same group (written by %s); the list must exist before the group starts: move this call to a later group and declare \"%s\": %s in that group's `in`", k, k, writerOf(g, k), k, provType[k])
		case !ok:
			d.errf(ErrDataflow, ca, "for_each", nil, "reads $args.%s, but %q is not declared in the group's `in`; add \"%s\": array<TYPE> to `in` (%s)", k, k, k, scopeHint(gi, provided, provType))
		case !t.IsArray():
			d.errf(ErrDataflow, ca, "for_each", nil, "reads $args.%s, which the group's `in` declares as %s; for_each needs a list: declare \"%s\": array<TYPE> (for example array<string>), or call the tool once without for_each", k, t, k)
		case t.elem() == "":
			d.errf(ErrDataflow, ca, "for_each", nil, "reads $args.%s, declared as array without an item type, so the type of $item is unknown; declare the items' type: \"%s\": array<object> (or array<string>, array<integer>, ...)", k, k)
		default:
			elem = t.elem()
		}
	}
	for _, ak := range sortedAnyKeys(c.Args) {
		line := d.fieldLines[fieldAt{gi + 1, ci + 1, "args." + ak}]
		itemRefsIn(c.Args[ak], func(r itemRef) {
			switch {
			case c.ForEach == "":
				d.errfLine(ErrDataflow, ca, "args", line, "reads %s, but this call has no for_each, so there is no item; add for_each: $args.LIST (a list declared in `in` as array<TYPE>) to call the tool once per item, or read a value as $args.KEY", r.text)
			case r.name == "index" && r.dot:
				d.errfLine(ErrDataflow, ca, "args", line, "reads %s, but $index is an integer (the item's 0-based position) and has no fields; write $index", r.text)
			case r.dot && !keyRE.MatchString(r.field):
				d.errfLine(ErrDataflow, ca, "args", line, "%q is not a valid reference; write $item, or $item.FIELD with FIELD %s", r.text, keyRule)
			case r.dot && elem != "" && elem != "object":
				d.errfLine(ErrDataflow, ca, "args", line, "reads %s, but the items of $args.%s are %s, which has no fields; write $item for the whole item, or declare \"%s\": array<object> if its items are objects", r.text, c.ForEachKey(), elem, c.ForEachKey())
			}
		})
	}
}

// forEach runs call ci of group gi once per item of its for_each list
// (docs/sequences.md, "for_each"): each item is a call of its own through
// e.call, with the group's missing, on_error, retries and timeout, at most
// the call's max_parallel at once. The outcome's value is the list of the
// items' results in item order (null for an item that failed under
// continue or was skipped); an item that fails the group calls abort,
// which cancels the group's other calls and items.
func (e *engine) forEach(runCtx, cctx context.Context, gi, ci int, scope map[string]json.RawMessage, abort func()) (out callOutcome) {
	g := &e.s.Groups[gi]
	c := &g.Tools[ci]
	out = callOutcome{res: CallResult{Tool: c.Tool, As: c.As, Status: CallPending}}
	start := time.Now()
	defer func() { out.res.Duration = Duration(time.Since(start)) }()
	key := c.ForEachKey()
	where := func(msg string) *Error {
		return &Error{Kind: ErrArgument, Group: gi + 1, GroupName: g.Name, Tool: ci + 1, ToolName: c.Tool, Field: "for_each", Message: msg}
	}
	refuse := func(msg string) callOutcome {
		out.res.Status, out.res.Error = CallFailed, msg
		out.fatal = where(msg)
		return out
	}
	var items []json.RawMessage
	if raw := orNull(trimSpace(scope[key])); string(raw) != "null" { // null: no items
		if err := json.Unmarshal(raw, &items); err != nil {
			return refuse(fmt.Sprintf("$args.%s is %s, not a list (%s); for_each needs a list", key, JSONKind(raw), clip(string(raw), 60)))
		}
	}
	if len(items) > e.cfg.maxItems {
		return refuse(fmt.Sprintf("$args.%s holds %d items, over the limit of %d items per for_each call (seq.WithMaxItems, the seqworker's --max-items or SKILLBUS_MAX_ITEMS); no item was called. Split the list across runs or groups, or raise the limit", key, len(items), e.cfg.maxItems))
	}
	limit := c.MaxParallel
	if limit == 0 {
		limit = len(items) // the group's own limit: every call at once
		if !g.Parallel {
			limit = 1
		}
	}
	limit = max(min(limit, len(items)), 1)
	fan := &FanOut{Items: len(items), MaxParallel: limit}
	out.res.ForEach = fan
	outs := make([]callOutcome, len(items))
	var next atomic.Int64
	var wg sync.WaitGroup
	var running, ok, failed atomic.Int64 // for WithItemProgress
	if f := e.cfg.progress; f != nil && len(items) > 0 {
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			t := time.NewTicker(e.cfg.progEvery)
			defer t.Stop()
			for {
				select {
				case <-t.C:
					f(gi, ci, FanOut{Items: len(items), MaxParallel: limit, Succeeded: int(ok.Load()), Failed: int(failed.Load()), Running: int(running.Load())})
				case <-stop:
					return
				}
			}
		}()
		defer func() { close(stop); <-stopped }()
	}
	for range min(limit, len(items)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(items) {
					return
				}
				if cctx.Err() != nil {
					outs[i] = callOutcome{res: CallResult{Tool: c.Tool, As: c.As, Status: CallNotRun}}
					continue
				}
				isc := &argScope{raw: scope, item: items[i], index: i, hasItem: true}
				args, err := isc.render(c.Args)
				if err != nil {
					outs[i] = callOutcome{res: CallResult{Tool: c.Tool, As: c.As, Status: CallFailed, Error: err.Error()}}
					if g.OnError != OnErrorContinue {
						outs[i].fatal = &Error{Kind: ErrArgument, Group: gi + 1, GroupName: g.Name, Tool: ci + 1, ToolName: c.Tool, Field: "args", Message: err.Error(), Err: err}
						abort()
					}
					continue
				}
				running.Add(1)
				outs[i] = e.call(runCtx, cctx, gi, ci, i, args, nil)
				running.Add(-1)
				switch outs[i].res.Status {
				case CallSucceeded:
					ok.Add(1)
				case CallFailed:
					failed.Add(1)
				}
				if outs[i].fatal != nil {
					abort()
				}
			}
		}()
	}
	wg.Wait()

	var b bytes.Buffer
	b.Grow(2 + 8*len(items))
	b.WriteByte('[')
	var firstErr string
	for i := range outs {
		o := &outs[i]
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(orNull(o.value))
		out.res.Attempts += o.res.Attempts
		switch o.res.Status {
		case CallSucceeded:
			fan.Succeeded++
		case CallFailed:
			fan.Failed++
			fan.FailedItems = append(fan.FailedItems, i)
		case CallSkipped:
			fan.Skipped++
		case CallDegraded:
			fan.Degraded++
		case CallCanceled:
			fan.Canceled++
		default:
			fan.NotRun++
		}
		if o.res.Status != CallSucceeded || o.res.Attempts > 1 {
			if len(fan.Details) < MaxItemDetails {
				// The item's arguments as sent; runGroup bounds them (clipArgs).
				fan.Details = append(fan.Details, ItemResult{Index: i, Status: o.res.Status, Attempts: o.res.Attempts, Duration: o.res.Duration, Error: clip(o.res.Error, 300), SentArgs: SentArgs{Args: o.res.Args}})
			} else {
				fan.Omitted++
			}
		}
		if o.res.Status == CallFailed && firstErr == "" {
			firstErr = ItemOf(i, len(items)) + ": " + o.res.Error
		}
		if o.fatal != nil && out.fatal == nil {
			out.fatal = itemError(o.fatal, i, len(items))
		}
	}
	b.WriteByte(']')
	out.value = b.Bytes()
	if len(outs) > 0 {
		out.res.Args = outs[0].res.Args // the call records its first item's arguments
	}
	switch {
	case fan.Failed > 0:
		out.res.Status, out.res.Error = CallFailed, firstErr
		if fan.Failed > 1 {
			out.res.Error += fmt.Sprintf(" (and %d more failed)", fan.Failed-1)
		}
	case fan.Canceled > 0 || fan.NotRun > 0:
		out.res.Status = CallCanceled
		for _, o := range outs {
			if o.res.Error != "" {
				out.res.Error = o.res.Error
				break
			}
		}
	case fan.Skipped > 0 && fan.Skipped == fan.Items:
		out.res.Status = CallSkipped
	case fan.Degraded > 0:
		out.res.Status = CallDegraded
	default:
		out.res.Status = CallSucceeded
	}
	return out
}

// itemError is the error of an item that failed its group: err with the
// item named in its message.
func itemError(err error, i, n int) error {
	var e *Error
	if !errors.As(err, &e) {
		return fmt.Errorf("%s: %w", ItemOf(i, n), err)
	}
	c := *e
	c.Message = ItemOf(i, n) + ": " + e.Message
	return &c
}

// ItemOf names the for_each item at 0-based index i of a list of n items
// in a message: "item 5 of 100 ($index 4)". Messages count items from 1,
// as they count groups and calls ("group 1", "tool 2"), and give the
// item's $index (from 0, as failed_items and details[].index are) beside
// it: docs/sequences.md, "for_each".
func ItemOf(i, n int) string {
	return fmt.Sprintf("item %d of %d ($index %d)", i+1, n, i)
}

// ItemLabel is ItemOf without the list's length: "item 5 ($index 4)",
// for a line of a table that already says how many items there are.
func ItemLabel(i int) string {
	return fmt.Sprintf("item %d ($index %d)", i+1, i)
}

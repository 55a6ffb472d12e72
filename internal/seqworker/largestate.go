package seqworker

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// Large state (docs/runs.md): a slot value larger than
// Config.InlineSlotBytes — or, while the slots of the RUNS entry add up to
// more than Config.InlineStateBytes, the largest ones — is written once to
// the RUN_SLOTS object store, and the checkpoint refers to it
// (RunState.SlotRefs). A resume reads the values back, so a finished group
// never runs again because its output was large. Config.SlotMaxBytes and
// Config.RunSlotsMaxBytes bound what a run may write: a group over a limit
// fails the run with a slotLimitError naming the group, the call and the
// size.

// slotLimitError: a group wrote a slot (or slots) over a limit.
type slotLimitError struct {
	msg   string
	slots []string // the slots over the limit (left out of the state)
}

func (e *slotLimitError) Error() string { return e.msg }

// checkSlotLimits checks the slots written by group g of res against the
// per-slot and per-run limits.
func (w *Worker) checkSlotLimits(s *seq.Sequence, res *seq.Result, g int) error {
	grp := &s.Groups[g]
	var total int64
	for _, v := range res.Slots {
		total += int64(len(v))
	}
	var bad []string
	var msgs []string
	for _, k := range slices.Sorted(maps.Keys(grp.Out)) {
		size := int64(len(res.Slots[k]))
		if size <= w.cfg.SlotMaxBytes {
			continue
		}
		bad = append(bad, k)
		msgs = append(msgs, fmt.Sprintf("group %d %q: %s wrote slot %q of %s; the limit per slot is %s (seqworker --slot-max-bytes)",
			g+1, grp.Name, writers(grp, k), k, sizeText(size), sizeText(w.cfg.SlotMaxBytes)))
	}
	if len(bad) == 0 && total > w.cfg.RunSlotsMaxBytes {
		var largest string
		for _, k := range slices.Sorted(maps.Keys(grp.Out)) {
			if largest == "" || len(res.Slots[k]) > len(res.Slots[largest]) {
				largest = k
			}
		}
		if largest != "" {
			bad = append(bad, largest)
			msgs = append(msgs, fmt.Sprintf("group %d %q: %s wrote slot %q of %s, which brings the run's slots to %s; the limit per run is %s (seqworker --run-slots-max-bytes)",
				g+1, grp.Name, writers(grp, largest), largest, sizeText(int64(len(res.Slots[largest]))), sizeText(total), sizeText(w.cfg.RunSlotsMaxBytes)))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &slotLimitError{msg: strings.Join(msgs, "; ") + "; the run fails instead of dropping data: write smaller results (a path or a summary instead of whole files) or raise the limit", slots: bad}
}

// writers names the calls of grp that write slot k: `call 2 "fs.read"`.
func writers(grp *seq.Group, k string) string {
	var ws []string
	for i, c := range grp.Tools {
		if c.As == k {
			ws = append(ws, fmt.Sprintf("call %d %q", i+1, c.Tool))
		}
	}
	if len(ws) == 0 {
		return "no call"
	}
	return strings.Join(ws, " and ")
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// spill splits slots into those kept in the RUNS entry and references to
// the object store, writing each large value once per run (values never
// change once their group finished). Callers hold r.mu (store).
func (r *run) spill(ctx context.Context, slots map[string]json.RawMessage) (map[string]json.RawMessage, map[string]events.SlotRef, error) {
	w := r.w
	inline := make(map[string]json.RawMessage, len(slots))
	refs := map[string]events.SlotRef{}
	total := 0
	for k, v := range slots {
		if _, ok := r.refs[k]; ok || len(v) > w.cfg.InlineSlotBytes {
			refs[k] = events.SlotRef{}
			continue
		}
		inline[k] = v
		total += len(v)
	}
	for total > w.cfg.InlineStateBytes {
		var largest string
		for k, v := range inline {
			if largest == "" || len(v) > len(inline[largest]) {
				largest = k
			}
		}
		total -= len(inline[largest])
		delete(inline, largest)
		refs[largest] = events.SlotRef{}
	}
	for k := range refs {
		if ref, ok := r.refs[k]; ok {
			refs[k] = ref
			continue
		}
		if w.slots == nil {
			return nil, nil, fmt.Errorf("slot %q is %s, too large for a RUNS entry, and the %s object store is not available", k, sizeText(int64(len(slots[k]))), events.BucketRunSlots)
		}
		name := events.RunSlotObject(r.req.RunID, k)
		info, err := w.slots.PutBytes(ctx, name, slots[k])
		if err != nil {
			return nil, nil, fmt.Errorf("store slot %q (%s) in the %s object store: %w", k, sizeText(int64(len(slots[k]))), events.BucketRunSlots, err)
		}
		ref := events.SlotRef{Object: name, Size: int64(len(slots[k])), Digest: info.Digest}
		if r.refs == nil {
			r.refs = map[string]events.SlotRef{}
		}
		r.refs[k], refs[k] = ref, ref
	}
	if len(refs) == 0 {
		refs = nil
	}
	return inline, refs, nil
}

// checkpoint rebuilds the pkg/seq checkpoint of a stored state: its result
// with every slot, the large ones read back from the object store (and
// checked against their digests).
func (r *run) checkpoint(ctx context.Context, cur *events.RunState) (*seq.Result, error) {
	var cp seq.Result
	if err := json.Unmarshal(cur.Result, &cp); err != nil {
		return nil, &terminalError{fmt.Errorf("the stored checkpoint does not decode: %w", err)}
	}
	if cp.Slots == nil {
		cp.Slots = map[string]json.RawMessage{}
	}
	maps.Copy(cp.Slots, cur.Slots)
	for k, ref := range cur.SlotRefs {
		v, err := r.w.readSlot(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("slot %q: %w", k, err)
		}
		cp.Slots[k] = v
		if r.refs == nil {
			r.refs = map[string]events.SlotRef{}
		}
		r.refs[k] = ref
	}
	return &cp, nil
}

// readSlot reads a slot value from the object store and checks its digest.
func (w *Worker) readSlot(ctx context.Context, ref events.SlotRef) (json.RawMessage, error) {
	if w.slots == nil {
		return nil, fmt.Errorf("the %s object store is not available", events.BucketRunSlots)
	}
	b, err := w.slots.GetBytes(ctx, ref.Object)
	if err != nil {
		return nil, fmt.Errorf("read %s/%s: %w", events.BucketRunSlots, ref.Object, err)
	}
	if ref.Digest != "" {
		sum := sha256.Sum256(b)
		if d := "SHA-256=" + base64.URLEncoding.EncodeToString(sum[:]); d != ref.Digest {
			return nil, &terminalError{fmt.Errorf("%s/%s: digest %s, want %s", events.BucketRunSlots, ref.Object, d, ref.Digest)}
		}
	}
	return b, nil
}

package seqworker

import (
	"encoding/json"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// JSON encoding is the worker's largest CPU cost per group on the run's
// critical path (BenchmarkCheckpointEncode): every checkpoint stores the
// whole result so far, and encoding/json validates and compacts every
// json.RawMessage and every custom marshaller's output once more. The
// helpers below produce the same documents (same members and values; the
// order of members may differ) with less work.

// resultCoder encodes the results of one run — its checkpoints, its final
// state and its group events — marshalling each finished group once: a
// group whose status is finished (succeeded, partial, skipped) never
// changes again within a run (pkg/seq runs a group once and only reads a
// resumed one). A pending group (not started yet) does not change either
// until it starts, so its JSON is kept while it stays pending. Not safe for
// concurrent use; one run uses it from its observer and then after seq.Run
// returned.
type resultCoder struct {
	groups  []json.RawMessage // by group index; nil until finished
	pending []json.RawMessage // by group index; JSON while pending
}

// resultWire is seq.Result without its groups: the outer, always empty
// Groups field hides the embedded one; the groups are added by appendMember.
type resultWire struct {
	*seq.Result
	Groups []seq.GroupResult `json:"groups,omitempty"`
}

// group returns the JSON of r.Groups[i].
func (c *resultCoder) group(r *seq.Result, i int) (json.RawMessage, error) {
	if c.groups == nil {
		c.groups = make([]json.RawMessage, len(r.Groups))
		c.pending = make([]json.RawMessage, len(r.Groups))
	}
	st := r.Groups[i].Status
	if i < len(c.groups) && c.groups[i] != nil {
		return c.groups[i], nil
	}
	if st == seq.GroupPending && i < len(c.pending) && c.pending[i] != nil {
		return c.pending[i], nil
	}
	b, err := marshalGroup(&r.Groups[i])
	if err != nil {
		return nil, err
	}
	switch {
	case i >= len(c.groups):
	case st.Finished():
		c.groups[i], c.pending[i] = b, nil
	case st == seq.GroupPending:
		c.pending[i] = b
	}
	return b, nil
}

// result returns the JSON of r, reusing the finished groups' JSON.
func (c *resultCoder) result(r *seq.Result) (json.RawMessage, error) {
	b, err := json.Marshal(&resultWire{Result: r})
	if err != nil {
		return nil, err
	}
	arr := make([]byte, 0, 1024)
	arr = append(arr, '[')
	for i := range r.Groups {
		g, err := c.group(r, i)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = append(arr, g...)
	}
	arr = append(arr, ']')
	return appendMember(b, "groups", arr), nil
}

// appendMember returns the JSON object obj (non-empty, as encoding/json
// writes it) with the member name: raw added last. raw must be valid JSON
// and name must need no escaping.
func appendMember(obj []byte, name string, raw []byte) []byte {
	out := make([]byte, 0, len(obj)+len(name)+len(raw)+4)
	out = append(out, obj[:len(obj)-1]...) // obj ends with its '}'
	out = append(out, ',', '"')
	out = append(out, name...)
	out = append(out, '"', ':')
	out = append(out, raw...)
	return append(out, '}')
}

// stateFrom builds a RunState from a run result, on top of base. A nil
// coder encodes the result from scratch.
func stateFrom(base *events.RunState, r *seq.Result, c *resultCoder) *events.RunState {
	st := *base
	st.UpdatedAt = time.Now().UTC()
	st.FinishedGroups = 0
	for _, g := range r.Groups {
		if g.Status.Finished() {
			st.FinishedGroups++
		}
	}
	st.Slots = r.Slots
	if c == nil {
		c = &resultCoder{}
	}
	st.Result, _ = c.result(r)
	return &st
}

// encodeState encodes st as events.Encode does, but adds the result — JSON
// that json.Marshal produced or json.Unmarshal accepted, so valid — as the
// object's last member instead of letting encoding/json scan it again.
// Errors: those of events.Encode.
func encodeState(st *events.RunState) ([]byte, error) {
	if len(st.Result) == 0 {
		return events.Encode(st)
	}
	bare := *st
	bare.Result = nil // omitempty: no "result" member
	b, err := events.Encode(&bare)
	if err != nil {
		return nil, err
	}
	return appendMember(b, "result", st.Result), nil
}

// encodeEvent encodes ev as events.Encode does, adding its result (JSON
// from json.Marshal) as the last member without scanning it again.
// Errors: those of events.Encode.
func encodeEvent(ev *events.RunEvent) ([]byte, error) {
	if len(ev.Result) == 0 {
		return events.Encode(ev)
	}
	bare := *ev
	bare.Result = nil
	b, err := events.Encode(&bare)
	if err != nil {
		return nil, err
	}
	return appendMember(b, "result", ev.Result), nil
}

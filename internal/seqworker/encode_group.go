package seqworker

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/skillbus/skillbus/pkg/jsonenc"
	"github.com/skillbus/skillbus/pkg/seq"
)

// appendGroupJSON appends the JSON of g to dst, byte for byte what
// json.Marshal(g) writes (TestAppendGroupJSONMatchesMarshal,
// FuzzAppendGroupJSON), without reflection and without the round trip
// through seq.Duration's and time.Time's MarshalJSON that encoding/json
// then validates and compacts: encoding the finished groups was the
// largest JSON cost of a checkpoint. ok is false when g holds a value
// json.Marshal refuses (a time outside years 0–9999): the caller then
// uses json.Marshal, which returns the error.
func appendGroupJSON(dst []byte, g *seq.GroupResult) (_ []byte, ok bool) {
	ok = true
	dst = append(dst, `{"name":`...)
	dst = jsonenc.AppendString(dst, g.Name)
	dst = append(dst, `,"status":`...)
	dst = jsonenc.AppendString(dst, string(g.Status))
	if g.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = jsonenc.AppendString(dst, g.Reason)
	}
	if g.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = jsonenc.AppendString(dst, g.Error)
	}
	if !g.Started.IsZero() {
		b, err := g.Started.MarshalJSON()
		if err != nil {
			return dst, false
		}
		dst = append(dst, `,"started":`...)
		dst = append(dst, b...)
	}
	dst = append(dst, `,"duration":`...)
	dst = appendDuration(dst, g.Duration)
	dst = append(dst, `,"calls":`...)
	if g.Calls == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range g.Calls {
			c := &g.Calls[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"tool":`...)
			dst = jsonenc.AppendString(dst, c.Tool)
			if c.As != "" {
				dst = append(dst, `,"as":`...)
				dst = jsonenc.AppendString(dst, c.As)
			}
			dst = append(dst, `,"status":`...)
			dst = jsonenc.AppendString(dst, string(c.Status))
			dst = append(dst, `,"attempts":`...)
			dst = strconv.AppendInt(dst, int64(c.Attempts), 10)
			dst = append(dst, `,"duration":`...)
			dst = appendDuration(dst, c.Duration)
			if c.Error != "" {
				dst = append(dst, `,"error":`...)
				dst = jsonenc.AppendString(dst, c.Error)
			}
			if c.ForEach != nil { // a fan-out: rare, and json.Marshal's bytes
				b, err := json.Marshal(c.ForEach)
				if err != nil {
					return dst, false
				}
				dst = append(dst, `,"for_each":`...)
				dst = append(dst, b...)
			}
			if dst, ok = appendSentArgs(dst, &c.SentArgs); !ok {
				return dst, false
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if g.ReusedFrom != "" {
		dst = append(dst, `,"reused_from":`...)
		dst = jsonenc.AppendString(dst, g.ReusedFrom)
	}
	if g.Wait != nil { // a wait_for group: rare, and json.Marshal's bytes
		b, err := json.Marshal(g.Wait)
		if err != nil {
			return dst, false
		}
		dst = append(dst, `,"wait":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), true
}

// appendSentArgs appends the members of a call's seq.SentArgs as
// json.Marshal writes them: the arguments compact, with <, >, & and
// U+2028/U+2029 escaped (json.Marshal's own bytes then, as those are
// rare). ok is false when a.Args is not valid JSON.
func appendSentArgs(dst []byte, a *seq.SentArgs) (_ []byte, ok bool) {
	if len(a.Args) > 0 {
		dst = append(dst, `,"args":`...)
		if bytes.ContainsAny(a.Args, "<>&\u2028\u2029") {
			b, err := json.Marshal(a.Args)
			if err != nil {
				return dst, false
			}
			dst = append(dst, b...)
		} else {
			buf := bytes.NewBuffer(dst)
			if err := json.Compact(buf, a.Args); err != nil {
				return dst, false
			}
			dst = buf.Bytes()
		}
	}
	if c := a.ArgsClipped; c != nil {
		dst = append(dst, `,"args_clipped":{"size":`...)
		dst = strconv.AppendInt(dst, int64(c.Size), 10)
		if c.Head != "" {
			dst = append(dst, `,"head":`...)
			dst = jsonenc.AppendString(dst, c.Head)
		}
		dst = append(dst, '}')
	}
	return dst, true
}

// marshalGroup returns the JSON of g (json.Marshal's bytes).
func marshalGroup(g *seq.GroupResult) (json.RawMessage, error) {
	b, ok := appendGroupJSON(make([]byte, 0, 128+96*len(g.Calls)), g)
	if !ok {
		return json.Marshal(g)
	}
	return b, nil
}

// appendDuration appends d as seq.Duration marshals it: its Go duration
// string, quoted (the string needs no escaping: digits, '.', '-', ASCII
// letters and 'µ').
func appendDuration(dst []byte, d seq.Duration) []byte {
	dst = append(dst, '"')
	dst = append(dst, time.Duration(d).String()...)
	return append(dst, '"')
}

package seqworker

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

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
	dst = append(dst, `{"name":`...)
	dst = appendJSONString(dst, g.Name)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, string(g.Status))
	if g.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = appendJSONString(dst, g.Reason)
	}
	if g.Error != "" {
		dst = append(dst, `,"error":`...)
		dst = appendJSONString(dst, g.Error)
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
			dst = appendJSONString(dst, c.Tool)
			if c.As != "" {
				dst = append(dst, `,"as":`...)
				dst = appendJSONString(dst, c.As)
			}
			dst = append(dst, `,"status":`...)
			dst = appendJSONString(dst, string(c.Status))
			dst = append(dst, `,"attempts":`...)
			dst = strconv.AppendInt(dst, int64(c.Attempts), 10)
			dst = append(dst, `,"duration":`...)
			dst = appendDuration(dst, c.Duration)
			if c.Error != "" {
				dst = append(dst, `,"error":`...)
				dst = appendJSONString(dst, c.Error)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), true
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

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it (HTML-safe: <, > and & escaped; control characters, invalid
// UTF-8 and U+2028/U+2029 too).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

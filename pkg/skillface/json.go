package skillface

import (
	"strconv"
	"unicode/utf8"
)

// AppendResponseJSON appends the JSON encoding of resp to dst and returns
// the extended slice: byte for byte what json.Marshal(resp) gives (same
// field order, same omitted empty fields, same string escaping, HTML
// characters included), only faster for a response of this Assembler: the
// listing and the skill bodies, which come back on every call of a
// session, are escaped once per skill set and per rendering, then copied.
// Any other Response is encoded correctly too (its strings are escaped as
// they come).
func (a *Assembler) AppendResponseJSON(dst []byte, resp *Response) []byte {
	// The pre-escaped texts this response may hold: the current listing
	// and the cached bodies of its active skills. A message uses one only
	// when its content is that very string (== on equal pointers is O(1)).
	var known []escaped
	if sn := a.snap.Load(); sn != nil && sn.listing != "" {
		known = append(known, escaped{sn.listing, sn.listingJSON})
	}
	if len(resp.Active) > 0 {
		a.cacheMu.RLock()
		for _, name := range resp.Active {
			if rb, ok := a.cache[name]; ok && rb.json != nil {
				known = append(known, escaped{rb.text, rb.json})
			}
		}
		a.cacheMu.RUnlock()
	}

	dst = append(dst, `{"messages":`...)
	if resp.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, m := range resp.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"role":`...)
			dst = appendJSONString(dst, m.Role)
			dst = append(dst, `,"content":`...)
			dst = appendKnownString(dst, m.Content, known)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"tools":`...)
	dst = appendJSONStrings(dst, resp.Tools)
	if len(resp.ToolLimits) > 0 {
		dst = append(dst, `,"tool_limits":[`...)
		for i, l := range resp.ToolLimits {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"tool":`...)
			dst = appendJSONString(dst, l.Tool)
			if len(l.Allow) > 0 {
				dst = append(dst, `,"allow":`...)
				dst = appendJSONStrings(dst, l.Allow)
			}
			if len(l.Deny) > 0 {
				dst = append(dst, `,"deny":`...)
				dst = appendJSONStrings(dst, l.Deny)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	for _, f := range [...]struct {
		key  string
		vals []string
	}{
		{`,"activated":`, resp.Activated},
		{`,"triggered":`, resp.Triggered},
		{`,"active":`, resp.Active},
		{`,"dropped":`, resp.Dropped},
	} {
		if len(f.vals) > 0 {
			dst = append(dst, f.key...)
			dst = appendJSONStrings(dst, f.vals)
		}
	}
	c := resp.Counts
	dst = append(dst, `,"counts":{"entries_truncated":`...)
	dst = strconv.AppendInt(dst, int64(c.EntriesTruncated), 10)
	dst = append(dst, `,"entries_dropped":`...)
	dst = strconv.AppendInt(dst, int64(c.EntriesDropped), 10)
	dst = append(dst, `,"bodies_truncated":`...)
	dst = strconv.AppendInt(dst, int64(c.BodiesTruncated), 10)
	dst = append(dst, `,"bodies_dropped":`...)
	dst = strconv.AppendInt(dst, int64(c.BodiesDropped), 10)
	dst = append(dst, `,"session_overflow":`...)
	dst = strconv.AppendInt(dst, int64(c.SessionOverflow), 10)
	return append(dst, "}}"...)
}

// escaped is a text and its JSON string encoding.
type escaped struct {
	text string
	json []byte
}

func appendKnownString(dst []byte, s string, known []escaped) []byte {
	for _, k := range known {
		if len(k.text) == len(s) && k.text == s {
			return append(dst, k.json...)
		}
	}
	return appendJSONString(dst, s)
}

// appendJSONStrings appends a JSON array of strings, or null for nil.
func appendJSONStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// jsonSafe marks the ASCII bytes that encoding/json writes as they are
// (with HTML escaping on: not <, > and &).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		switch c {
		case '"', '\\', '<', '>', '&':
		default:
			t[c] = true
		}
	}
	return t
}()

// appendJSONString appends s as a JSON string exactly as encoding/json
// encodes a Go string: ", \ and control characters escaped (\b \f \n \r \t
// short), <, > and & as \u003c \u003e \u0026, invalid UTF-8 bytes as
// \ufffd, U+2028 and U+2029 as \u2028 and \u2029.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
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
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
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
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

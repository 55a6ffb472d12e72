package skillface

import (
	"strconv"

	"github.com/skillbus/skillbus/pkg/jsonenc"
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
			dst = jsonenc.AppendString(dst, m.Role)
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
			dst = jsonenc.AppendString(dst, l.Tool)
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
	return jsonenc.AppendString(dst, s)
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
		dst = jsonenc.AppendString(dst, s)
	}
	return append(dst, ']')
}

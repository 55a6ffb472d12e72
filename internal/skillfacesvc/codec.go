package skillfacesvc

import (
	"strconv"
	"unicode/utf8"

	"github.com/skillbus/skillbus/pkg/skillface"
)

// decodeRequest reads an assemble request: the fast decoder below when the
// body is a plain, well-formed request, else decodeStrict, which also
// produces every error message. Both give the same Request for every body
// the fast one accepts (FuzzDecodeRequestFast checks it against
// encoding/json). onSession, when not nil, is called with the session id
// as soon as the fast decoder has read it (so the session can be read
// while the rest is decoded); it may be called for a body that then fails
// to decode.
func decodeRequest(data []byte, req *skillface.Request, onSession func(string)) error {
	if fastDecodeRequest(data, req, onSession) {
		return nil
	}
	*req = skillface.Request{}
	return decodeStrict(data, req, assembleFields)
}

// fastDecodeRequest decodes data into req, which must be zero, in one pass
// and reports whether it could. It accepts only what encoding/json (with
// unknown fields disallowed) decodes without error and without any of its
// lenient corners, and gives up — returning false, with req possibly half
// filled — on anything else: an unknown, repeated, escaped or differently
// cased key, a null, a number that is not a plain integer, a string with
// invalid UTF-8 or a \u escape of a surrogate, trailing data, a syntax
// error. Strings are unescaped as encoding/json does. onSession: see
// decodeRequest.
func fastDecodeRequest(data []byte, req *skillface.Request, onSession func(string)) bool {
	d := fastDec{b: data}
	d.ws()
	if !d.eat('{') {
		return false
	}
	var seen uint8
	d.ws()
	if !d.eat('}') {
		for {
			d.ws()
			key, ok := d.key()
			if !ok {
				return false
			}
			d.ws()
			if !d.eat(':') {
				return false
			}
			d.ws()
			var bit uint8
			switch string(key) {
			case "session_id":
				bit = 1
				req.SessionID, ok = d.str()
				if ok && onSession != nil && seen&bit == 0 {
					onSession(req.SessionID)
				}
			case "round":
				bit = 2
				req.Round, ok = d.int64()
			case "restricted":
				bit = 4
				req.Restricted, ok = d.boolean()
			case "messages":
				bit = 8
				req.Messages, ok = d.messages()
			case "work_files":
				bit = 16
				req.WorkFiles, ok = d.strs()
			case "tools":
				bit = 32
				req.Tools, ok = d.strs()
			case "mounts":
				bit = 64
				req.Mounts, ok = d.strs()
			default:
				return false
			}
			if !ok || seen&bit != 0 {
				return false
			}
			seen |= bit
			d.ws()
			if d.eat(',') {
				continue
			}
			if d.eat('}') {
				break
			}
			return false
		}
	}
	d.ws()
	return d.i == len(d.b)
}

// fastDec is a cursor over a JSON text.
type fastDec struct {
	b []byte
	i int
}

func (d *fastDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDec) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// key reads an object key written without escapes; the result aliases the
// input.
func (d *fastDec) key() ([]byte, bool) {
	if !d.eat('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			k := d.b[start:d.i]
			d.i++
			return k, true
		}
		if c == '\\' || c < 0x20 {
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// str reads a JSON string (not null).
func (d *fastDec) str() (string, bool) {
	if !d.eat('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			raw := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(raw) {
				return "", false // encoding/json replaces invalid bytes; leave that to it
			}
			return string(raw), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// escaped finishes a string that starts at start (after its quote) and has
// an escape at d.i.
func (d *fastDec) escaped(start int) (string, bool) {
	out := make([]byte, 0, d.i-start+16)
	out = append(out, d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if d.i+4 > len(d.b) {
				return "", false
			}
			v, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 16)
			if err != nil || (v >= 0xD800 && v < 0xE000) {
				return "", false // surrogates: left to encoding/json
			}
			d.i += 4
			out = utf8.AppendRune(out, rune(v))
		default:
			return "", false
		}
	}
	return "", false
}

// int64 reads a JSON integer without fraction or exponent that fits in an
// int64.
func (d *fastDec) int64() (int64, bool) {
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || (n > 1 && d.b[digits] == '0') {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	return v, err == nil
}

func (d *fastDec) boolean() (bool, bool) {
	rest := d.b[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.i += 5
		return false, true
	}
	return false, false
}

// strs reads an array of strings (not null); [] gives an empty, non-nil
// slice, as encoding/json does.
func (d *fastDec) strs() ([]string, bool) {
	if !d.eat('[') {
		return nil, false
	}
	out := []string{}
	d.ws()
	if d.eat(']') {
		return out, true
	}
	for {
		d.ws()
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		d.ws()
		if d.eat(',') {
			continue
		}
		if d.eat(']') {
			return out, true
		}
		return nil, false
	}
}

// messages reads an array of {"role": …, "content": …} objects (not
// null); either key may be missing, neither repeated.
func (d *fastDec) messages() ([]skillface.Message, bool) {
	if !d.eat('[') {
		return nil, false
	}
	out := make([]skillface.Message, 0, 16)
	d.ws()
	if d.eat(']') {
		return out, true
	}
	for {
		d.ws()
		if !d.eat('{') {
			return nil, false
		}
		var m skillface.Message
		var seen uint8
		d.ws()
		if !d.eat('}') {
			for {
				d.ws()
				key, ok := d.key()
				if !ok {
					return nil, false
				}
				d.ws()
				if !d.eat(':') {
					return nil, false
				}
				d.ws()
				var bit uint8
				switch string(key) {
				case "role":
					bit = 1
					m.Role, ok = d.str()
				case "content":
					bit = 2
					m.Content, ok = d.str()
				default:
					return nil, false
				}
				if !ok || seen&bit != 0 {
					return nil, false
				}
				seen |= bit
				d.ws()
				if d.eat(',') {
					continue
				}
				if d.eat('}') {
					break
				}
				return nil, false
			}
		}
		out = append(out, m)
		d.ws()
		if d.eat(',') {
			continue
		}
		if d.eat(']') {
			return out, true
		}
		return nil, false
	}
}

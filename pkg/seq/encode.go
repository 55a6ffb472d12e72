package seq

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Encode returns the canonical JSON of a parsed sequence: the value stored
// in the SEQUENCES bucket (see package events). It is compact, with object keys in
// a fixed order (struct fields in declaration order, map keys sorted), every
// default written out, `tools` as a list of objects, fallback as compact JSON
// text and the derived signature included. Parse (or Decode) of the result
// gives a Sequence equal to s, and Encode of that gives the same bytes.
//
// Encode returns an error only for a nil sequence or one holding a value
// JSON cannot represent (possible only for a hand-built Sequence).
func Encode(s *Sequence) ([]byte, error) {
	if s == nil {
		return nil, errors.New("seq: Encode of a nil sequence")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

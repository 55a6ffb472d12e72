package seqworker

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestDecodeArgsWords: run arguments that are not a JSON object are
// refused for good (terminal) in JSON's words, not encoding/json's Go
// types. (pkg/events refuses most of them first; this is the worker's
// own check for what reaches it.)
func TestDecodeArgsWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[7]`, `run arguments must be a JSON object of name → value, such as {"root": "."}; got array`},
		{`"x"`, `; got string`},
		{`{"a":`, `; not valid JSON`},
	} {
		_, err := decodeArgs(json.RawMessage(tc.in))
		var te *terminalError
		if err == nil || !errors.As(err, &te) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Go value") {
			t.Errorf("decodeArgs(%s) = %v; want a terminal error saying %q", tc.in, err, tc.want)
		}
	}
	if args, err := decodeArgs(json.RawMessage(`{"n": 1}`)); err != nil || string(args["n"]) != "1" {
		t.Errorf("decodeArgs(object) = %v, %v", args, err)
	}
}

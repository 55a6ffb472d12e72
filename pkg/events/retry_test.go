package events

import (
	"errors"
	"strings"
	"testing"
)

// TestSeqRetryRequestFrom: seq.retry's from is optional on the wire (an
// older client's request decodes with From "", and Encode leaves it out
// when empty), kept as sent otherwise, and refused when longer than a
// group's name can be.
func TestSeqRetryRequestFrom(t *testing.T) {
	var old SeqRetryRequest
	if err := Decode([]byte(`{"v":1,"run_id":"run-1"}`), &old); err != nil || old.From != "" {
		t.Fatalf("Decode(an older request) = %+v, %v; want From \"\"", old, err)
	}
	b, err := Encode(&SeqRetryRequest{RunID: "run-1"})
	if err != nil || strings.Contains(string(b), "from") {
		t.Errorf("Encode(no from) = %s, %v; want no from field", b, err)
	}
	b, err = Encode(&SeqRetryRequest{RunID: "run-1", From: "transform"})
	var got SeqRetryRequest
	if err != nil || Decode(b, &got) != nil || got.From != "transform" {
		t.Errorf("round trip of from: %s, %v → %+v", b, err, got)
	}
	long := &SeqRetryRequest{V: Version, RunID: "run-1", From: strings.Repeat("g", MaxNameLength+1)}
	if err := long.check(); !errors.Is(err, ErrBadMessage) || !strings.Contains(err.Error(), "from is 257 bytes") {
		t.Errorf("check(from of %d bytes) = %v; want ErrBadMessage naming its length", len(long.From), err)
	}
}

package events_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestNameLimitOneRule: a sequence, group or agent name has one limit,
// stated in one way everywhere — 64 characters, at most 256 bytes in UTF-8
// (docs/sequences.md, "Names"). pkg/seq (characters, the whole name rule)
// and pkg/events (bytes, checked at every entry point before a subject is
// built) agree on it: a longest name of 4-byte characters passes both, one
// character more fails both, and both messages state the same limit.
// Before, pkg/events allowed 512 bytes ("the limit is 512") while pkg/seq
// said "over the limit of 64".
func TestNameLimitOneRule(t *testing.T) {
	if seq.MaxNameLength != events.MaxNameChars || seq.MaxNameBytes != events.MaxNameLength || events.MaxNameLength != 4*events.MaxNameChars {
		t.Fatalf("seq.MaxNameLength %d, seq.MaxNameBytes %d, events.MaxNameChars %d, events.MaxNameLength %d: one rule, want 64 characters and 256 bytes",
			seq.MaxNameLength, seq.MaxNameBytes, events.MaxNameChars, events.MaxNameLength)
	}
	const wide = "\U00020000" // 𠀀, a CJK letter of 4 bytes in UTF-8
	longest := strings.Repeat(wide, events.MaxNameChars)
	if len(longest) != events.MaxNameLength {
		t.Fatalf("the longest name has %d bytes; want %d", len(longest), events.MaxNameLength)
	}
	if err := seq.CheckName(longest); err != nil {
		t.Errorf("seq.CheckName(64 four-byte characters) = %v; want it allowed", err)
	}
	subj, err := events.RunSubject(longest)
	if err != nil {
		t.Errorf("events.RunSubject(64 four-byte characters) = %v", err)
	}
	if tok := strings.TrimPrefix(subj, "seq.run."); len(tok) != events.MaxNameTokenLength {
		t.Errorf("the longest name's token has %d bytes; MaxNameTokenLength is %d", len(tok), events.MaxNameTokenLength)
	}

	const limit = "the name limit is 64 characters, at most 256 bytes in UTF-8"
	over := longest + wide
	errs := map[string]error{"seq.CheckName": seq.CheckName(over)}
	_, errs["events.RunSubject"] = events.RunSubject(over)
	_, errs["events.AgentReadySubject"] = events.AgentReadySubject(over)
	errs["events.CheckNameLength"] = events.CheckNameLength("agent name", over)
	req, _ := json.Marshal(events.SeqCallRequest{V: 1, Group: over})
	var call events.SeqCallRequest
	errs["events.Decode(SeqCallRequest)"] = events.Decode(req, &call)
	for where, err := range errs {
		if err == nil || !strings.Contains(err.Error(), limit) {
			t.Errorf("%s of a 65-character, 260-byte name = %v; want an error stating %q", where, err, limit)
		}
	}
}

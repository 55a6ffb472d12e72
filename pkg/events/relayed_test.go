package events

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// TestRelayed: only a request replying to an inbox (or not at all), not
// relayed from a stream, may be answered (docs/security.md, "Reply
// subjects are not permissions").
func TestRelayed(t *testing.T) {
	stored := nats.Header{"Nats-Stream": []string{"KV_RUNS"}}
	for _, c := range []struct {
		reply string
		h     nats.Header
		drop  bool
	}{
		{"_INBOX.abc.1", nil, false},
		{"_INBOX.reader.abc.1", nil, false},
		{"", nil, false},
		{"$KV.RUNS.run-1", nil, true},
		{"seq.run.big-read", nil, true},
		{"_INBOXES.x", nil, true},
		{"$JS.ACK.EVENTS.c.1.1.1.1.0", nil, true},
		{"_INBOX.abc.1", stored, true},
	} {
		if why := Relayed(c.reply, c.h); (why != "") != c.drop {
			t.Errorf("Relayed(%q, %v) = %q; want dropped %v", c.reply, c.h, why, c.drop)
		}
	}
}

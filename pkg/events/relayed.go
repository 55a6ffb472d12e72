package events

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// InboxPrefix is how every reply subject a service answers begins: the
// clients' inboxes (nats.go's default _INBOX., a role's _INBOX.<role>,
// internal/natsconn.InboxPrefixOf). docs/security.md, "Reply subjects are
// not permissions".
const InboxPrefix = "_INBOX."

// Relayed says why a message that reached an endpoint is not a request
// the endpoint may answer; "" when it is one. Such a message is
//   - published by the NATS server from a stream: it carries the
//     Nats-Stream header of a direct get's reply (whose reply subject the
//     requester chose: no permission checks it), or its reply subject is
//     a push consumer's ack subject ($JS.ACK.…) — a stored message
//     replayed onto the endpoint;
//   - or a request whose reply subject is not an inbox (does not start
//     with InboxPrefix): answering it would publish the answer onto a
//     subject the requester chose, a stream's included ($KV.RUNS.<id>,
//     seq.run.<seq>), where it would be stored as if its owner wrote it.
//
// A message without a reply subject passes (nothing is answered). The
// services and tool servers drop such messages unanswered
// (docs/security.md, "Reply subjects are not permissions").
func Relayed(reply string, h nats.Header) string {
	if s := h.Get("Nats-Stream"); s != "" {
		return "a stored message of the " + s + " stream (a direct get's reply)"
	}
	if strings.HasPrefix(reply, "$JS.ACK.") {
		return "a consumer's delivery (reply " + reply + ")"
	}
	if reply != "" && !strings.HasPrefix(reply, InboxPrefix) {
		return "its reply subject " + reply + " is not an inbox (" + InboxPrefix + "…)"
	}
	return ""
}

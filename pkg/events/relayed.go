package events

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// Relayed says why a message that reached an endpoint was published by the
// NATS server from a stream rather than sent by a client: it carries the
// Nats-Stream header of a direct get's reply (whose reply subject the
// requester chose: no permission checks it), or its reply subject is a
// push consumer's ack subject ($JS.ACK.…). "" when it is neither. Such a
// message is a stored message replayed onto the endpoint, never a
// request: the services and tool servers drop it unanswered
// (docs/security.md, "Reply subjects are not permissions").
func Relayed(reply string, h nats.Header) string {
	if s := h.Get("Nats-Stream"); s != "" {
		return "a stored message of the " + s + " stream (a direct get's reply)"
	}
	if strings.HasPrefix(reply, "$JS.ACK.") {
		return "a consumer's delivery (reply " + reply + ")"
	}
	return ""
}

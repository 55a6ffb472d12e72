package events

import "errors"

// Errors returned by this package. Wrapped with context; test with
// errors.Is.
var (
	// ErrBadToken: a name used inside a subject is empty or holds a
	// character NATS reserves ('.', '*', '>', whitespace). Terminal.
	ErrBadToken = errors.New("events: invalid subject token")
	// ErrBadKey: a KV key could not be decoded by NameForKey.
	ErrBadKey = errors.New("events: invalid key")
	// ErrVersion: a message's "v" field is missing or newer than Version.
	// Terminal for that message: a newer reader must handle it.
	ErrVersion = errors.New("events: unsupported message version")
	// ErrBadMessage: a message is not valid JSON for its type or misses a
	// required field. Terminal for that message.
	ErrBadMessage = errors.New("events: malformed message")
	// ErrOptions: a provisioning option is out of range.
	ErrOptions = errors.New("events: invalid provisioning option")
	// ErrProvision: creating or updating a stream, consumer or bucket
	// failed (for example a storage type change the server refuses).
	ErrProvision = errors.New("events: provisioning failed")
)

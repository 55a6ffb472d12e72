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
	// ErrIncompatible: a stream or bucket exists in a way the server will
	// not change to what Provision asks for (its storage, its retention,
	// more replicas than a lone server can hold, subjects another stream
	// holds). Retrying cannot help: a person must change the settings or
	// the existing resource. Always with ErrProvision, in an
	// *IncompatibleError.
	ErrIncompatible = errors.New("events: an existing stream or bucket cannot take these settings")
)

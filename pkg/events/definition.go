package events

import "strings"

// DefinitionRef records the definition a run started with (docs/runs.md,
// "The definition a run uses"), so that a run resumed by another worker —
// after a crash, a hand-back or a NATS restart — finishes with it even if
// the stored sequence was edited meanwhile (RunState.Definition).
type DefinitionRef struct {
	// Revision is the SEQUENCES revision of a stored sequence (0 for an
	// inline run, whose request carries its definition).
	Revision uint64 `json:"revision,omitempty"`
	// Digest is "sha256:" + the hex SHA-256 of the sequence's canonical
	// JSON (pkg/seq Encode, as stored in SEQUENCES).
	Digest string `json:"digest"`
	// Object names the copy of that JSON in the BucketRunSlots object store
	// (DefinitionObject(Digest)); "" for an inline run.
	Object string `json:"object,omitempty"`
	// Size is the length of that JSON in bytes.
	Size int64 `json:"size,omitempty"`
}

// DefinitionObject returns the name of the BucketRunSlots object holding
// the definition whose digest is given ("sha256:<hex>"): "defs/<hex>". One
// object serves every run of that definition.
func DefinitionObject(digest string) string {
	return "defs/" + strings.TrimPrefix(digest, "sha256:")
}

package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// Version is the current version of every message type of this package,
// carried in the "v" field. A reader accepts messages with 1 ≤ v ≤ Version.
const Version = 1

// Message is implemented by every message type of this package; Decode and
// Encode use it to check the version and the required fields.
type Message interface {
	// version returns the message's "v" field.
	version() int
	// check reports a missing or malformed required field.
	check() error
}

// Encode returns the JSON encoding of m with "v" set to Version when it was
// zero. Errors: ErrBadMessage when a required field is missing.
func Encode(m Message) ([]byte, error) {
	// Every message type (including ones added in other files) is a
	// pointer to a struct with an int field V: default it to Version.
	if v := reflect.ValueOf(m); v.Kind() == reflect.Pointer && !v.IsNil() {
		if f := v.Elem().FieldByName("V"); f.IsValid() && f.CanSet() && f.Kind() == reflect.Int && f.Int() == 0 {
			f.SetInt(Version)
		}
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	return b, nil
}

// Decode parses data into m (a pointer to a message type) and checks its
// version and required fields. Unknown fields are ignored, so an older
// reader accepts messages that a newer writer extended with optional
// fields. Errors: ErrBadMessage (not JSON, wrong shape, required field
// missing), ErrVersion (v missing, below 1, or above Version).
func Decode(data []byte, m Message) error {
	if err := json.Unmarshal(data, m); err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	if v := m.version(); v < 1 || v > Version {
		if v == 0 {
			return fmt.Errorf("%w: the \"v\" field is missing or 0; this reader understands versions 1 to %d", ErrVersion, Version)
		}
		return fmt.Errorf("%w: v=%d; this reader understands versions 1 to %d — upgrade it", ErrVersion, v, Version)
	}
	return m.check()
}

// AgentReady announces that an agent (re)started, on
// AgentReadySubject(agent). Each sequence with boot: true runs once per
// (Agent, BootID) (docs/sequences.md, Boot).
type AgentReady struct {
	V int `json:"v"`
	// Agent names the agent; required, a single subject token.
	Agent string `json:"agent"`
	// BootID is unique per boot of the agent; required.
	BootID string `json:"boot_id"`
	// At is when the agent became ready (UTC), informational.
	At time.Time `json:"at,omitzero"`
}

func (m *AgentReady) version() int { return m.V }

func (m *AgentReady) check() error {
	if err := checkToken("agent", m.Agent); err != nil {
		return fmt.Errorf("%w: agent_ready: %v", ErrBadMessage, err)
	}
	if err := CheckNameLength("agent", m.Agent); err != nil {
		return fmt.Errorf("%w: agent_ready: %v", ErrBadMessage, err)
	}
	if m.BootID == "" {
		return fmt.Errorf("%w: agent_ready for %q without boot_id", ErrBadMessage, m.Agent)
	}
	if err := checkLen("boot_id", m.BootID, MaxIDLength); err != nil {
		return fmt.Errorf("%w: agent_ready for %q: %v", ErrBadMessage, m.Agent, err)
	}
	return nil
}

// RegistryEvent reports a change or a problem in the registry, on
// RegistryEventSubject(kind, op).
type RegistryEvent struct {
	V int `json:"v"`
	// Kind is KindSkill, KindSequence or KindTree; Op is OpPut, OpDelete,
	// OpInvalid, OpFixed, OpClash, OpWarning, OpReverted or OpDiffers.
	Kind string `json:"kind"`
	Op   string `json:"op"`
	// Name is the skill or sequence name (empty for an invalid file whose
	// name could not be read).
	Name string `json:"name,omitempty"`
	// File is the source file (relative to the registry root; "" for a
	// definition created over NATS) and Line the 1-based line of the
	// problem (0 when unknown).
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Error is the validation error (OpInvalid), clash description
	// (OpClash) or what was undone (OpReverted).
	Error string `json:"error,omitempty"`
	// Warnings are the file's warnings, one "FILE:LINE: message" line
	// each (OpWarning, and OpInvalid when the file has any).
	Warnings []string `json:"warnings,omitempty"`
	// Other is the other file of a clash; Kept the file whose definition
	// stays in the bucket.
	Other string `json:"other,omitempty"`
	Kept  string `json:"kept,omitempty"`
	// Fingerprint identifies the stored content (OpPut).
	Fingerprint string    `json:"fingerprint,omitempty"`
	At          time.Time `json:"at,omitzero"`
}

func (m *RegistryEvent) version() int { return m.V }

func (m *RegistryEvent) check() error {
	if _, err := RegistryEventSubject(m.Kind, m.Op); err != nil {
		return fmt.Errorf("%w: registry event: %v", ErrBadMessage, err)
	}
	return nil
}

// Subject returns the subject the event is published on.
func (m *RegistryEvent) Subject() (string, error) { return RegistryEventSubject(m.Kind, m.Op) }

func isJSONObject(b json.RawMessage) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			var m map[string]json.RawMessage
			return json.Unmarshal(b, &m) == nil
		default:
			return false
		}
	}
	return false
}

// RequestDigest returns "sha256:" + hex of what identifies a run request:
// its sequence name, inline AST and arguments, with the arguments in a
// canonical JSON form (object keys sorted, insignificant space removed), so
// the same request spelt differently has the same digest. Run id, trigger
// and timestamps are not part of it.
func RequestDigest(r *RunRequest) string {
	h := sha256.New()
	h.Write([]byte(r.Sequence))
	h.Write([]byte{0})
	h.Write(canonicalJSON(r.Inline))
	h.Write([]byte{0})
	h.Write(canonicalJSON(r.Args))
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes b with sorted keys and no insignificant space;
// "null", empty and invalid input are returned as they are ("null" and
// empty arguments both mean none).
func canonicalJSON(b json.RawMessage) []byte {
	if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null" || string(bytes.TrimSpace(b)) == "{}" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

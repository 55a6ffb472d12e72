package events

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on the identifiers that reach skillbus from outside. Every entry
// point (seq.run, seq.status, seq.cancel, seq_call, a queued run request
// and its Nats-Msg-Id, events.agent_ready.*) checks them before it derives
// a subject, a header or a KV key: a NATS server closes the connection of a
// client that sends a subject over its control-line limit (4 KiB), so an
// unchecked 5,000-character run id would take the service off the bus.
// docs/runs.md lists them.
const (
	// MaxRunIDLength bounds a run id, in bytes.
	MaxRunIDLength = 128
	// MaxIDLength bounds other ids (a boot id), in bytes.
	MaxIDLength = 128
	// MaxNameChars is the longest sequence, group or agent name, in
	// characters (Unicode code points, after NFC normalisation): the one
	// name rule of docs/sequences.md ("Names"). pkg/seq enforces the whole
	// rule with the same number (seq.MaxNameLength; pkg/seq has no NATS
	// dependency and pkg/events none on the sequence language, so the two
	// cannot share one constant: a test pins them equal).
	MaxNameChars = 64
	// MaxNameLength bounds a sequence, group or agent name in bytes, as
	// every entry point checks it before it derives a subject, a header or
	// a key: MaxNameChars characters of at most utf8.UTFMax (4) bytes each
	// in UTF-8, 256 bytes. A name within it may still break the name rule
	// (more than MaxNameChars characters, a character not allowed), which
	// the services check where they use the name (seq.CheckName).
	MaxNameLength = utf8.UTFMax * MaxNameChars
	// MaxNameTokenLength is the longest subject token or KV key a name
	// becomes (TokenFor, KeyFor): "=" and the unpadded base64url of
	// MaxNameLength bytes, 343 bytes.
	MaxNameTokenLength = 1 + (4*MaxNameLength+2)/3
	// MaxReasonLength bounds free text such as a cancel reason or the
	// "by" of a cancel, in bytes.
	MaxReasonLength = 1024
)

// CheckRunID reports whether id can be a run id: 1 to MaxRunIDLength bytes
// of ASCII letters, digits, '-' and '_' (so it is one subject token and its
// own KV key). Errors: ErrBadToken saying which rule failed.
func CheckRunID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: run id is empty", ErrBadToken)
	}
	if len(id) > MaxRunIDLength {
		return fmt.Errorf("%w: run id is %d bytes long; the limit is %d", ErrBadToken, len(id), MaxRunIDLength)
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return fmt.Errorf("%w: run id %q contains %q; use only letters, digits, '-' and '_'", ErrBadToken, id, rune(id[i]))
		}
	}
	return nil
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// CheckNameLength refuses a sequence, group or agent name (what says
// which: "agent name") longer than MaxNameLength bytes, stating the name
// rule's limit in both units: `agent name is 300 bytes long; the name
// limit is 64 characters, at most 256 bytes in UTF-8 (docs/sequences.md,
// "Names")`.
// An empty name passes (callers that need one say so). Errors: a plain
// error (the entry points answer 400 with it).
func CheckNameLength(what, name string) error {
	if len(name) > MaxNameLength {
		return fmt.Errorf("%s is %d bytes long; %s", what, len(name), nameLimit)
	}
	return nil
}

// nameLimit states the name limit as every message of this package does.
var nameLimit = fmt.Sprintf("the name limit is %d characters, at most %d bytes in UTF-8 (docs/sequences.md, \"Names\")", MaxNameChars, MaxNameLength)

// checkLen refuses a value longer than limit bytes, naming what and the
// limit.
func checkLen(what, v string, limit int) error {
	if len(v) > limit {
		return fmt.Errorf("%s is %d bytes long; the limit is %d", what, len(v), limit)
	}
	return nil
}

// IDPart returns a name as a part of a run id, in CheckRunID's bytes: the
// name itself when it is ASCII letters, digits, '-' and '_' starting with
// a letter (a name of docs/sequences.md, "Names", written in ASCII); any
// other name as "_" and the unpadded base64url of its UTF-8 — TokenFor's
// encoding with '_' for its '=', which no such name starts with — so no
// two names give one part, and NameForIDPart reverses it:
//
//	IDPart("bot-1") == "bot-1"
//	IDPart("机器人") == "_5py65Zmo5Lq6"
//
// A name of MaxNameLength bytes gives a part of up to MaxNameTokenLength
// bytes: a run id made of parts must be cut to MaxRunIDLength (as
// BoundedID does), after which the part no longer decodes.
func IDPart(name string) string {
	if name != "" && plainIDPart(name) {
		return name
	}
	return "_" + base64.RawURLEncoding.EncodeToString([]byte(name))
}

// NameForIDPart reverses IDPart: NameForIDPart(IDPart(n)) == n for every
// n. Errors: ErrBadToken for a part IDPart does not make (a cut one, other
// bytes, non-canonical base64url).
func NameForIDPart(part string) (string, error) {
	rest, encoded := strings.CutPrefix(part, "_")
	if !encoded {
		if part == "" || !plainIDPart(part) {
			return "", fmt.Errorf("%w: %q is not a run id part (letters, digits, '-', '_' starting with a letter, or '_' and base64url)", ErrBadToken, clipToken(part))
		}
		return part, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil || IDPart(string(b)) != part {
		return "", fmt.Errorf("%w: %q starts with '_' but is not the base64url of a name (cut to fit a run id?)", ErrBadToken, clipToken(part))
	}
	return string(b), nil
}

// plainIDPart: ASCII letters, digits, '-' and '_', starting with a letter.
func plainIDPart(s string) bool {
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !idByte(s[i]) {
			return false
		}
	}
	return true
}

// BoundedID joins prefix and parts into a run id ("prefix-part1-part2"),
// each part reduced to letters, digits, '-' and '_' (anything else becomes
// '_'), followed by "-" and 16 hex digits of a SHA-256 of the unreduced
// parts — so different inputs give different ids. When the result would
// exceed MaxRunIDLength the readable parts are cut so it fits. The same
// input always gives the same id.
func BoundedID(prefix string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	sum := hex.EncodeToString(h[:8])
	var b strings.Builder
	b.WriteString(prefix)
	for _, p := range parts {
		b.WriteByte('-')
		for i := 0; i < len(p); i++ {
			if idByte(p[i]) {
				b.WriteByte(p[i])
			} else {
				b.WriteByte('_')
			}
		}
	}
	s := b.String()
	if room := MaxRunIDLength - len(sum) - 1; len(s) > room {
		s = s[:room]
	}
	return s + "-" + sum
}

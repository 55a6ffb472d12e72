package events

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// encodedKeyPrefix marks a KV key holding base64url(name) because the name
// itself is not a valid key.
const encodedKeyPrefix = "="

// KeyFor returns the KV key for a skill or sequence name (a name that is
// not a valid key is encoded; docs/sequences.md, "Names"). A name made only
// of ASCII letters, digits and - _ / = . (not starting or ending with '.',
// no "..", not starting with '=') is its own key; any other name becomes
// "=" + base64url(name) without padding:
//
//	KeyFor("repo-survey") == "repo-survey"
//	KeyFor("开机自检")     == "=5byA5py66Ieq5qOA"
//
// KeyFor and NameForKey are inverse: NameForKey(KeyFor(n)) == n for every
// non-empty n. For a valid sequence, group or agent name (pkg/seq's
// CheckName) KeyFor(n) == TokenFor(n).
func KeyFor(name string) string {
	if validKey(name) && !strings.HasPrefix(name, encodedKeyPrefix) {
		return name
	}
	return encodedKeyPrefix + base64.RawURLEncoding.EncodeToString([]byte(name))
}

// NameForKey reverses KeyFor. Errors: ErrBadKey when key starts with "="
// but is not valid base64url.
func NameForKey(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, encodedKeyPrefix)
	if !ok {
		return key, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return "", fmt.Errorf("%w: %q starts with %q but is not base64url: %v", ErrBadKey, key, encodedKeyPrefix, err)
	}
	return string(b), nil
}

// validKey mirrors the server's KV key rule: [-/_=.a-zA-Z0-9]+, not
// starting or ending with '.', and no empty token ("..").
func validKey(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '/', c == '_', c == '=', c == '.':
		default:
			return false
		}
	}
	return true
}

// TokenFor returns the NATS subject token for a name — a sequence, group or
// agent name, which may be written in any script (docs/sequences.md,
// "Names") — reversibly, so that it is always exactly one valid token and
// also a valid KV key:
//
//   - a name made only of ASCII letters, digits, '-' and '_' is its own
//     token: TokenFor("repo-survey") == "repo-survey";
//   - any other name becomes "=" + base64url(UTF-8 name) without padding:
//     TokenFor("开机自检") == "=5byA5py66Ieq5qOA", TokenFor("机器人") ==
//     "=5py65Zmo5Lq6", TokenFor("a.b") == "=YS5i".
//
// The subject builders of this package (RunSubject, ScheduleSubject,
// AgentReadySubject, ScheduleEventSubject, RunEventSubject) apply it, so
// seq.run.=5byA5py66Ieq5qOA carries a run of 开机自检. Whoever shows a
// subject to a person decodes its token with NameForToken (or
// NameOfSubject). The token of a name of at most MaxNameLength bytes is at
// most MaxNameTokenLength (1 + ⌈4·MaxNameLength/3⌉) bytes. TokenFor("") is
// "=": not a name.
func TokenFor(name string) string {
	if name != "" && plainToken(name) {
		return name
	}
	return encodedKeyPrefix + base64.RawURLEncoding.EncodeToString([]byte(name))
}

// NameForToken reverses TokenFor: NameForToken(TokenFor(n)) == n for every
// n. Only the tokens TokenFor produces are accepted, so one name has one
// token: NameForToken("=YWJj") is an error, since TokenFor("abc") is "abc".
// Errors: ErrBadToken for an empty token, a token with other characters
// than TokenFor writes, or an "=" token that is not canonical base64url.
func NameForToken(token string) (string, error) {
	rest, encoded := strings.CutPrefix(token, encodedKeyPrefix)
	if !encoded {
		if token == "" || !plainToken(token) {
			return "", fmt.Errorf("%w: %q is not a token made by TokenFor (letters, digits, '-', '_', or \"=\" and base64url)", ErrBadToken, clipToken(token))
		}
		return token, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil {
		return "", fmt.Errorf("%w: %q starts with %q but the rest is not base64url: %v", ErrBadToken, clipToken(token), encodedKeyPrefix, err)
	}
	if name := string(b); name != "" && TokenFor(name) == token {
		return name, nil
	}
	return "", fmt.Errorf("%w: %q is not the token TokenFor makes for the name it holds", ErrBadToken, clipToken(token))
}

// NameOfSubject returns the name a subject built by RunSubject,
// ScheduleSubject, ScheduleEventSubject or AgentReadySubject is about —
// the decoded last token:
//
//	NameOfSubject("seq.schedule.=5byA5py66Ieq5qOA") == "开机自检"
//	NameOfSubject("events.agent_ready.bot-1") == "bot-1"
//
// Errors: ErrBadToken for any other subject or an undecodable token.
func NameOfSubject(subject string) (string, error) {
	for _, prefix := range []string{"seq.run.", "seq.schedule.", "events.schedule.", "events.agent_ready."} {
		if tok, ok := strings.CutPrefix(subject, prefix); ok && !strings.Contains(tok, ".") {
			return NameForToken(tok)
		}
	}
	return "", fmt.Errorf("%w: %q is not a seq.run, seq.schedule, events.schedule or events.agent_ready subject with one name token", ErrBadToken, clipToken(subject))
}

// nameToken checks a name for a subject builder and returns its token.
// Errors: ErrBadToken when the name is empty or longer than MaxNameLength
// bytes (CheckNameLength's message).
func nameToken(what, name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrBadToken, what)
	}
	if err := CheckNameLength(what, name); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	return TokenFor(name), nil
}

// plainToken reports whether s is made only of ASCII letters, digits, '-'
// and '_'.
func plainToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !idByte(s[i]) {
			return false
		}
	}
	return true
}

func clipToken(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

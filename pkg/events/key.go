package events

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// encodedKeyPrefix marks a KV key holding base64url(name) because the name
// itself is not a valid key.
const encodedKeyPrefix = "="

// KeyFor returns the KV key for a skill or sequence name (DESIGN.md §3:
// "encoded if not a valid key"). A name made only of letters, digits and
// - _ / = . (not starting or ending with '.', no "..", not starting
// with '=') is its
// own key; any other name becomes "=" + base64url(name) without padding.
// KeyFor and NameForKey are inverse: NameForKey(KeyFor(n)) == n for every
// non-empty n.
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

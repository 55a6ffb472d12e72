package natsconn

import (
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/jwt/v2"
)

// InboxPrefixOf returns the inbox prefix that the user of a creds file
// must use: when its subscribe permissions allow exactly one private inbox
// pattern _INBOX.<name>.> (as the users `skillbus auth` generates do, so
// that no other user can read its replies: docs/security.md), it returns
// "_INBOX.<name>"; otherwise "" (the default _INBOX prefix). Errors: a file
// that cannot be read or holds no user JWT.
func InboxPrefixOf(creds string) (string, error) {
	uc, err := userClaims(creds)
	if err != nil {
		return "", err
	}
	var prefix string
	for _, s := range uc.Permissions.Sub.Allow {
		rest, ok := strings.CutPrefix(s, "_INBOX.")
		if !ok {
			continue
		}
		name, ok := strings.CutSuffix(rest, ".>")
		if !ok || name == "" || strings.ContainsAny(name, "*>") {
			continue
		}
		if prefix != "" {
			return "", nil // several: leave the choice to the context
		}
		prefix = "_INBOX." + name
	}
	return prefix, nil
}

// RoleTag is the tag `skillbus auth` puts on a user JWT: RoleTag + the
// role's name (docs/security.md).
const RoleTag = "skillbus-role:"

// RoleOf returns the skillbus role of the user of a creds file (its
// RoleTag tag), or "" when it has none. Errors: a file that cannot be read
// or holds no user JWT.
func RoleOf(creds string) (string, error) {
	uc, err := userClaims(creds)
	if err != nil {
		return "", err
	}
	for _, t := range uc.Tags {
		if r, ok := strings.CutPrefix(t, RoleTag); ok {
			return r, nil
		}
	}
	return "", nil
}

// userClaims decodes the user JWT of a creds file.
func userClaims(creds string) (*jwt.UserClaims, error) {
	b, err := os.ReadFile(creds)
	if err != nil {
		return nil, err
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return nil, fmt.Errorf("no user JWT in %s: %v", creds, err)
	}
	uc, err := jwt.DecodeUserClaims(strings.TrimSpace(tok))
	if err != nil {
		return nil, fmt.Errorf("no user JWT in %s: %v", creds, err)
	}
	return uc, nil
}

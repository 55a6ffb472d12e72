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
	b, err := os.ReadFile(creds)
	if err != nil {
		return "", err
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return "", fmt.Errorf("no user JWT in %s: %v", creds, err)
	}
	uc, err := jwt.DecodeUserClaims(strings.TrimSpace(tok))
	if err != nil {
		return "", fmt.Errorf("no user JWT in %s: %v", creds, err)
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

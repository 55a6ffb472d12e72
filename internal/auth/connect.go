package auth

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsconn"
)

// ConnectOptions returns the nats.go options that connect as the user of
// the creds file creds: the credentials and the user's private inbox
// prefix (natsconn.InboxPrefixOf). Errors: a creds file that cannot be
// read or holds no user JWT.
func ConnectOptions(creds string) ([]nats.Option, error) {
	inbox, err := natsconn.InboxPrefixOf(creds)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	opts := []nats.Option{nats.UserCredentials(creds)}
	if inbox != "" {
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	return opts, nil
}

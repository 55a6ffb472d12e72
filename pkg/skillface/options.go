package skillface

import (
	"fmt"
	"time"
)

// The default budgets (docs/skills.md, "How skillface uses skills").
const (
	// DefaultEntryChars: a listing entry is at most this many characters
	// (Unicode code points), the ".truncated" mark included.
	DefaultEntryChars = 1536
	// DefaultListingEntries: the listing shows at most this many skills.
	DefaultListingEntries = 64
	// DefaultSessionBodies: a session holds at most this many skill bodies.
	DefaultSessionBodies = 4
	// DefaultBodyBytes: an injected body is at most this many bytes (16 KiB)
	// before the ".truncated:" line.
	DefaultBodyBytes = 16 << 10
	// DefaultMaxAttempts: Assemble tries the session's compare-and-set at
	// most this many times before ErrContention.
	DefaultMaxAttempts = 100
	// DefaultSessionTTL: the TTL of the in-memory store New makes when no
	// WithSessionStore is given (the SKILLFACE_SESSIONS default, §3).
	DefaultSessionTTL = 24 * time.Hour
	// MinEntryChars: the smallest entry budget WithEntryChars accepts —
	// room for a 64-character skill name and the ".truncated" mark.
	MinEntryChars = 80
)

type config struct {
	entryChars     int
	listingEntries int
	sessionBodies  int
	bodyBytes      int
	maxAttempts    int
	store          SessionStore
	now            func() time.Time // the clock of sessionState.Written; tests replace it
}

// Option configures an Assembler. An option given an out-of-range value
// makes New return an error wrapping ErrInvalidOption that names it.
type Option func(*config) error

// WithEntryChars sets the listing entry budget in characters (Unicode code
// points); at least MinEntryChars. Default DefaultEntryChars.
func WithEntryChars(n int) Option {
	return func(c *config) error {
		if n < MinEntryChars {
			return fmt.Errorf("%w: entry budget %d characters is below the minimum %d (a skill name and the .truncated mark must fit)", ErrInvalidOption, n, MinEntryChars)
		}
		c.entryChars = n
		return nil
	}
}

// WithListingEntries sets how many skills the listing shows; at least 1.
// Default DefaultListingEntries.
func WithListingEntries(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: listing budget %d entries: must be 1 or more", ErrInvalidOption, n)
		}
		c.listingEntries = n
		return nil
	}
}

// WithSessionBodies sets how many skill bodies a session holds; at least 1.
// Default DefaultSessionBodies.
func WithSessionBodies(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: session budget %d bodies: must be 1 or more", ErrInvalidOption, n)
		}
		c.sessionBodies = n
		return nil
	}
}

// WithBodyBytes sets the body budget in bytes; at least 1. Default
// DefaultBodyBytes (16 KiB).
func WithBodyBytes(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: body budget %d bytes: must be 1 or more", ErrInvalidOption, n)
		}
		c.bodyBytes = n
		return nil
	}
}

// WithMaxAttempts sets how often Assemble retries a lost compare-and-set on
// one session before returning ErrContention; at least 1. Default
// DefaultMaxAttempts.
func WithMaxAttempts(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: max attempts %d: must be 1 or more", ErrInvalidOption, n)
		}
		c.maxAttempts = n
		return nil
	}
}

// WithSessionStore sets where session state lives. Default: a MemoryStore
// with DefaultSessionTTL.
func WithSessionStore(s SessionStore) Option {
	return func(c *config) error {
		if s == nil {
			return fmt.Errorf("%w: session store is nil", ErrInvalidOption)
		}
		c.store = s
		return nil
	}
}

package natsconn

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Config is a resolved set of connection settings: the layers of Settings
// merged with the named context, every file checked. Options turns it into
// nats.go options.
type Config struct {
	// URL is the server list to connect to (never empty); URLSource says
	// where it came from ("--nats", "NATS_URL", "context prod", "default").
	URL, URLSource string
	// User, Password and Token come from the context (a URL carries its
	// own).
	User, Password, Token string
	// Creds, NKey, TLSCert, TLSKey and TLSCA are files, with their sources.
	Creds, NKey, TLSCert, TLSKey, TLSCA Value
	// InboxPrefix and TLSFirst come from the context.
	InboxPrefix string
	TLSFirst    bool
	// Context is the context used, or nil.
	Context *Context
}

// Resolve merges s with the context it names (LoadContext) and checks that
// every file it refers to is a readable regular file. Errors: ErrConfig,
// naming the setting (flag, variable or context) and the file.
func (s Settings) Resolve() (*Config, error) {
	c := &Config{Creds: s.Creds, NKey: s.NKey, TLSCert: s.TLSCert, TLSKey: s.TLSKey, TLSCA: s.TLSCA}
	if s.Context.set() {
		ctx, err := LoadContext(s.Context.V)
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, s.Context.Source)
		}
		c.Context = ctx
		src := "context " + ctx.Name
		from := func(v string) Value {
			if v == "" {
				return Value{}
			}
			return Value{V: v, Source: src}
		}
		if ctx.URL != "" {
			c.URL, c.URLSource = ctx.URL, src
		}
		// Authentication is taken whole from one layer.
		if !s.Creds.set() && !s.NKey.set() {
			switch {
			case ctx.User != "":
				c.User, c.Password = ctx.User, ctx.Password
			case ctx.Creds != "":
				c.Creds = from(ctx.Creds)
			case ctx.NKey != "":
				c.NKey = from(ctx.NKey)
			}
			c.Token = ctx.Token
		}
		if !s.TLSCert.set() && !s.TLSKey.set() {
			c.TLSCert, c.TLSKey = from(ctx.Cert), from(ctx.Key)
		}
		if !s.TLSCA.set() {
			c.TLSCA = from(ctx.CA)
		}
		c.InboxPrefix, c.TLSFirst = ctx.InboxPrefix, ctx.TLSFirst
	}
	if s.URL.set() {
		c.URL, c.URLSource = s.URL.V, s.URL.Source
	}
	if c.URL == "" {
		c.URL, c.URLSource = nats.DefaultURL, "default"
	}
	for _, u := range strings.Split(c.URL, ",") {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		if _, err := url.Parse(u); err != nil {
			return nil, fmt.Errorf("%w: %s: %q is not a URL: %v", ErrConfig, c.URLSource, Redact(u), err)
		}
	}
	if c.Creds.set() && c.NKey.set() {
		return nil, fmt.Errorf("%w: both a credentials file (%s) and an nkey seed (%s) are given; use one of them", ErrConfig, c.Creds.Source, c.NKey.Source)
	}
	if c.TLSCert.set() != c.TLSKey.set() {
		given, missing := c.TLSCert, "the key (--tls-key or NATS_KEY)"
		if c.TLSKey.set() {
			given, missing = c.TLSKey, "the certificate (--tls-cert or NATS_CERT)"
		}
		return nil, fmt.Errorf("%w: a TLS client certificate needs its key: %s is set but %s is not", ErrConfig, given.Source, missing)
	}
	for _, f := range []struct {
		what string
		v    Value
	}{{"credentials file", c.Creds}, {"nkey seed file", c.NKey}, {"TLS certificate", c.TLSCert}, {"TLS key", c.TLSKey}, {"TLS CA file", c.TLSCA}} {
		if err := checkFile(f.v); err != nil {
			return nil, fmt.Errorf("%w: %s %s (%s): %v", ErrConfig, f.what, f.v.V, f.v.Source, err)
		}
	}
	return c, nil
}

// checkFile reports why v (when set) is not a readable regular file.
func checkFile(v Value) error {
	if !v.set() {
		return nil
	}
	st, err := os.Stat(v.V)
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Errorf("no such file")
		}
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	f, err := os.Open(v.V)
	if err != nil {
		return err
	}
	return f.Close()
}

// Options returns the nats.go options for c's authentication and TLS.
// Errors: ErrConfig for an nkey seed file that holds no valid seed.
func (c *Config) Options() ([]nats.Option, error) {
	var opts []nats.Option
	if c.User != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.Token != "" {
		opts = append(opts, nats.Token(c.Token))
	}
	if c.Creds.set() {
		opts = append(opts, nats.UserCredentials(c.Creds.V))
	}
	if c.NKey.set() {
		o, err := nats.NkeyOptionFromSeed(c.NKey.V)
		if err != nil {
			return nil, fmt.Errorf("%w: nkey seed file %s (%s): %v", ErrConfig, c.NKey.V, c.NKey.Source, err)
		}
		opts = append(opts, o)
	}
	if c.TLSCert.set() {
		opts = append(opts, nats.ClientCert(c.TLSCert.V, c.TLSKey.V))
	}
	if c.TLSCA.set() {
		opts = append(opts, nats.RootCAs(c.TLSCA.V))
	}
	inbox := c.InboxPrefix
	if inbox == "" && c.Creds.set() {
		// A user restricted to a private inbox (skillbus auth) can only
		// receive replies there: use it (docs/security.md).
		if p, err := InboxPrefixOf(c.Creds.V); err == nil {
			inbox = p
		}
	}
	if inbox != "" {
		opts = append(opts, nats.CustomInboxPrefix(inbox))
	}
	if c.TLSFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	return opts, nil
}

// Describe returns a one-line description of c for logs, without secrets:
// the redacted URL and the kinds of credentials and TLS in use.
func (c *Config) Describe() string {
	var parts []string
	parts = append(parts, Redact(c.URL)+" ("+c.URLSource+")")
	switch {
	case c.Creds.set():
		parts = append(parts, "creds "+c.Creds.V)
	case c.NKey.set():
		parts = append(parts, "nkey "+c.NKey.V)
	case c.User != "":
		parts = append(parts, "user "+c.User)
	}
	if c.Token != "" {
		parts = append(parts, "token")
	}
	if c.TLSCert.set() {
		parts = append(parts, "tls client cert "+c.TLSCert.V)
	}
	if c.TLSCA.set() {
		parts = append(parts, "tls ca "+c.TLSCA.V)
	}
	return strings.Join(parts, ", ")
}

// Connect opens a connection for a short-lived command: it resolves s,
// connects once (5 s timeout, nats.go's default reconnect behaviour) and
// names the connection name. opts are added after (and may override) the
// defaults. Errors: ErrConfig for bad settings; nats.go's connect error
// otherwise, wrapped with the redacted URL and its source.
func Connect(s Settings, name string, opts ...nats.Option) (*nats.Conn, *Config, error) {
	c, err := s.Resolve()
	if err != nil {
		return nil, nil, err
	}
	auth, err := c.Options()
	if err != nil {
		return nil, c, err
	}
	all := append([]nats.Option{nats.Name(name), nats.Timeout(5 * time.Second)}, auth...)
	nc, err := nats.Connect(c.URL, append(all, opts...)...)
	if err != nil {
		reason := err.Error()
		if errors.Is(err, nats.ErrNoServers) {
			// nats.go's words ("nats: no servers available for
			// connection") hide the dial error; say what it means.
			reason = "no NATS server answers there (nothing listens on that address, or a firewall drops the connection)"
		}
		return nil, c, &connectError{fmt.Sprintf("cannot connect to NATS at %s (%s): %s", Redact(c.URL), c.URLSource, reason), err}
	}
	return nc, c, nil
}

// connectError is Connect's error: its text for a person, nats.go's error
// in the chain for errors.Is.
type connectError struct {
	text string
	err  error
}

func (e *connectError) Error() string { return e.text }
func (e *connectError) Unwrap() error { return e.err }

// Package natsconn is the one way skillbus connects to NATS: the skillbus
// command line, the services (registry, seqworker, skillface) and the tool
// providers all read their connection settings here, the way the nats CLI
// reads them, so one set of variables or one nats CLI context serves both.
//
// Settings come from three layers; the first that sets a value wins:
//
//  1. a flag on the command line (--nats, --creds, --nkey, --tls-cert,
//     --tls-key, --tls-ca, --context);
//  2. the environment, named as the nats CLI names it: NATS_URL (comma
//     separated URLs; a user and password, or a token, may be given in a
//     URL: nats://user:pass@host:4222), NATS_CREDS (a credentials file),
//     NATS_NKEY (an nkey seed file), NATS_CERT and NATS_KEY (a TLS client
//     certificate and its key), NATS_CA (the CA that signed the server's
//     certificate), NATS_CONTEXT (a context name);
//  3. the nats CLI context named by --context or NATS_CONTEXT (see
//     LoadContext): its url, user, password, token, creds, nkey, cert, key,
//     ca, inbox_prefix and tls_first.
//
// The authentication of one layer is taken whole: creds, nkey, user or
// token given by a flag or variable replace all of the context's. A context
// is used only when named: the nats CLI's selected context (context.txt) is
// not read, so a skillbus command never reaches a cluster nobody asked it
// to. docs/operations.md ("Connecting to NATS") is the user's reference.
//
// Connect opens a connection for a short command; Dial opens the
// long-lived connection of a service, which waits for NATS at start,
// reconnects for ever with back-off and reports when it is closed for good.
package natsconn

import (
	"errors"
	"flag"
	"net/url"
	"os"
	"strings"
)

// ErrConfig reports a connection setting that cannot work: a file that
// does not exist or is not readable, a certificate without its key, two
// kinds of credentials, a context that cannot be read or uses a feature
// skillbus does not support. The message names the setting (flag,
// variable or context file) and says how to fix it. It is a configuration
// error: commands exit 2.
var ErrConfig = errors.New("natsconn: invalid connection settings")

// Environment variables read by FromEnv and Register (the nats CLI's names).
const (
	EnvURL     = "NATS_URL"
	EnvCreds   = "NATS_CREDS"
	EnvNKey    = "NATS_NKEY"
	EnvCert    = "NATS_CERT"
	EnvKey     = "NATS_KEY"
	EnvCA      = "NATS_CA"
	EnvContext = "NATS_CONTEXT"
)

// Value is one connection setting and where it came from, for error
// messages: "--creds", "NATS_CREDS", "context prod" or "" when unset.
type Value struct {
	V      string
	Source string
}

// set reports whether the value is given (non-empty).
func (v Value) set() bool { return v.V != "" }

// Settings are the connection settings before the context is applied. The
// zero value connects to nats.DefaultURL without credentials.
type Settings struct {
	// URL is the server URL list, comma separated (NATS_URL, --nats).
	URL Value
	// Context names a nats CLI context, or a path to a context JSON file
	// (NATS_CONTEXT, --context).
	Context Value
	// Creds is a credentials file: a user JWT and its nkey seed
	// (NATS_CREDS, --creds).
	Creds Value
	// NKey is an nkey seed file (NATS_NKEY, --nkey).
	NKey Value
	// TLSCert and TLSKey are a TLS client certificate and its private key,
	// PEM files (NATS_CERT / --tls-cert, NATS_KEY / --tls-key); both or
	// neither.
	TLSCert, TLSKey Value
	// TLSCA is a PEM file of the CA certificates to trust for the server
	// (NATS_CA, --tls-ca); default the system's roots.
	TLSCA Value
}

// FromEnv returns the settings of the environment variables alone.
func FromEnv() Settings {
	env := func(name string) Value {
		if v := strings.TrimSpace(os.Getenv(name)); v != "" {
			return Value{V: v, Source: name}
		}
		return Value{}
	}
	return Settings{
		URL: env(EnvURL), Context: env(EnvContext), Creds: env(EnvCreds), NKey: env(EnvNKey),
		TLSCert: env(EnvCert), TLSKey: env(EnvKey), TLSCA: env(EnvCA),
	}
}

// Given reports whether anything says where NATS is: a URL or a context.
// The skillbus command line uses it to choose between a running skillbus
// and its in-process stack.
func (s Settings) Given() bool { return s.URL.set() || s.Context.set() }

// Flag names registered by Register.
const (
	FlagURL     = "nats"
	FlagContext = "context"
	FlagCreds   = "creds"
	FlagNKey    = "nkey"
	FlagCert    = "tls-cert"
	FlagKey     = "tls-key"
	FlagCA      = "tls-ca"
)

// FlagNames returns the flags Register defines, in help order.
func FlagNames() []string {
	return []string{FlagURL, FlagContext, FlagCreds, FlagNKey, FlagCert, FlagKey, FlagCA}
}

// Register starts s from the environment (FromEnv) and defines the
// connection flags on fs, bound to s: a flag given on the command line
// replaces the variable. withURL false leaves out --nats (for commands
// that take the URL only from NATS_URL or the context).
func (s *Settings) Register(fs *flag.FlagSet, withURL bool) {
	*s = FromEnv()
	if withURL {
		fs.Var(&flagValue{&s.URL, "--" + FlagURL}, FlagURL, "NATS server `URLS`, comma separated; user:password@ may be part of a URL ($NATS_URL; default the context's url, else nats://127.0.0.1:4222)")
	}
	fs.Var(&flagValue{&s.Context, "--" + FlagContext}, FlagContext, "nats CLI context `NAME` (~/.config/nats/context/NAME.json) or the path of a context file ($NATS_CONTEXT)")
	fs.Var(&flagValue{&s.Creds, "--" + FlagCreds}, FlagCreds, "credentials `FILE`: user JWT and seed ($NATS_CREDS)")
	fs.Var(&flagValue{&s.NKey, "--" + FlagNKey}, FlagNKey, "nkey seed `FILE` ($NATS_NKEY)")
	fs.Var(&flagValue{&s.TLSCert, "--" + FlagCert}, FlagCert, "TLS client certificate `FILE`, PEM ($NATS_CERT; needs --tls-key)")
	fs.Var(&flagValue{&s.TLSKey, "--" + FlagKey}, FlagKey, "the private key `FILE` of --tls-cert, PEM ($NATS_KEY)")
	fs.Var(&flagValue{&s.TLSCA, "--" + FlagCA}, FlagCA, "CA certificates `FILE` to trust for the server, PEM ($NATS_CA)")
}

// flagValue binds a flag to a Value, recording the flag as its source.
type flagValue struct {
	v    *Value
	name string
}

func (f *flagValue) String() string {
	if f == nil || f.v == nil {
		return ""
	}
	return f.v.V
}

func (f *flagValue) Set(s string) error {
	f.v.V, f.v.Source = strings.TrimSpace(s), f.name
	if f.v.V == "" {
		f.v.Source = ""
	}
	return nil
}

// SetFrom sets the value as coming from source (an environment variable
// such as SKILLBUS_CREDS), so errors name it.
func (f *flagValue) SetFrom(s, source string) error {
	if err := f.Set(s); err != nil {
		return err
	}
	if f.v.V != "" {
		f.v.Source = source
	}
	return nil
}

// Redact returns the URL list with any password or token replaced by
// "xxxxx", for logs and messages.
func Redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil || u.User == nil {
			parts[i] = p
			continue
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			u.User = url.User("xxxxx") // a token
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

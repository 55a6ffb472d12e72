package natsconn

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Context is the part of a nats CLI context that skillbus uses. The nats
// CLI (and github.com/nats-io/jsm.go/natscontext) writes one JSON file per
// context, NAME.json, in $XDG_CONFIG_HOME/nats/context (default
// ~/.config/nats/context). skillbus reads the file itself rather than
// through natscontext, because that package links the whole nats-server
// and the service binaries must stay small (docs/operations.md).
//
// Fields read: url, user, password, token, creds, nkey, cert, key, ca,
// inbox_prefix, tls_first. A file path may start with ~ (the home
// directory) or file://; a password or token may be env://VARIABLE.
// Ignored (display only): description, color_scheme. Refused when set,
// because skillbus would otherwise connect differently than the context
// says: socks_proxy, nsc, jetstream_domain, jetstream_api_prefix,
// jetstream_event_prefix, user_jwt, user_seed, windows_cert_store and the
// other windows_* fields, and secrets stored as op:// or nsc:// references.
type Context struct {
	// Name is the context's name (or the file's path when given as one);
	// File is the file it was read from.
	Name, File string

	URL         string `json:"url"`
	User        string `json:"user"`
	Password    string `json:"password"`
	Token       string `json:"token"`
	Creds       string `json:"creds"`
	NKey        string `json:"nkey"`
	Cert        string `json:"cert"`
	Key         string `json:"key"`
	CA          string `json:"ca"`
	InboxPrefix string `json:"inbox_prefix"`
	TLSFirst    bool   `json:"tls_first"`
}

// unsupported are the context fields skillbus refuses when they are set.
type unsupported struct {
	SocksProxy          string   `json:"socks_proxy"`
	NSC                 string   `json:"nsc"`
	JSDomain            string   `json:"jetstream_domain"`
	JSAPIPrefix         string   `json:"jetstream_api_prefix"`
	JSEventPrefix       string   `json:"jetstream_event_prefix"`
	UserJWT             string   `json:"user_jwt"`
	UserSeed            string   `json:"user_seed"`
	WinCertStore        string   `json:"windows_cert_store"`
	WinCertMatchBy      string   `json:"windows_cert_match_by"`
	WinCertMatch        string   `json:"windows_cert_match"`
	WinCertStoreCAMatch []string `json:"windows_ca_certs_match"`
}

// ContextDir returns the directory of the nats CLI's context files:
// $XDG_CONFIG_HOME/nats/context, else ~/.config/nats/context.
func ContextDir() (string, error) {
	base := os.Getenv("XDG_CONFIG_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%w: cannot find the nats CLI's contexts: no home directory (%v); set XDG_CONFIG_HOME or give the context file's path", ErrConfig, err)
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "nats", "context"), nil
}

// LoadContext reads the context nameOrPath: a path (it contains a path
// separator or ends in .json) is read as it is, a name from ContextDir.
// Errors (ErrConfig) name the context, the file and the problem: no such
// context (with the names that exist), unreadable or invalid JSON, a field
// skillbus does not support.
func LoadContext(nameOrPath string) (*Context, error) {
	file := nameOrPath
	if !strings.ContainsRune(nameOrPath, os.PathSeparator) && !strings.Contains(nameOrPath, "/") && !strings.HasSuffix(nameOrPath, ".json") {
		if nameOrPath == "." || nameOrPath == ".." {
			return nil, fmt.Errorf("%w: context %q is not a context name", ErrConfig, nameOrPath)
		}
		dir, err := ContextDir()
		if err != nil {
			return nil, err
		}
		file = filepath.Join(dir, nameOrPath+".json")
	}
	data, err := os.ReadFile(expandHome(file))
	if err != nil {
		if os.IsNotExist(err) && file != nameOrPath {
			return nil, fmt.Errorf("%w: no nats context %q (%s does not exist)%s; create it with `nats context add %s --server URL ...` or give the path of a context file",
				ErrConfig, nameOrPath, file, knownContexts(filepath.Dir(file)), nameOrPath)
		}
		return nil, fmt.Errorf("%w: nats context %q: %v", ErrConfig, nameOrPath, err)
	}
	c := &Context{Name: nameOrPath, File: file}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("%w: nats context %q (%s) is not a valid context file: %v", ErrConfig, nameOrPath, file, err)
	}
	var u unsupported
	_ = json.Unmarshal(data, &u) // the same bytes decoded once already
	for _, f := range []struct{ field, value string }{
		{"socks_proxy", u.SocksProxy}, {"nsc", u.NSC}, {"jetstream_domain", u.JSDomain},
		{"jetstream_api_prefix", u.JSAPIPrefix}, {"jetstream_event_prefix", u.JSEventPrefix},
		{"user_jwt", u.UserJWT}, {"user_seed", u.UserSeed}, {"windows_cert_store", u.WinCertStore},
		{"windows_cert_match_by", u.WinCertMatchBy}, {"windows_cert_match", u.WinCertMatch},
		{"windows_ca_certs_match", strings.Join(u.WinCertStoreCAMatch, ",")},
	} {
		if strings.TrimSpace(f.value) != "" {
			return nil, fmt.Errorf("%w: nats context %q (%s) sets %s, which skillbus does not support; use a context without it (url, user/password, token, creds, nkey, cert/key/ca work), or the NATS_* variables",
				ErrConfig, nameOrPath, file, f.field)
		}
	}
	if p := c.InboxPrefix; p != "" && !strings.HasPrefix(p, "_INBOX.") {
		// Services answer only replies to an inbox (events.Relayed;
		// docs/security.md, "Reply subjects are not permissions").
		return nil, fmt.Errorf("%w: nats context %q (%s) sets inbox_prefix %q; skillbus's services answer only reply subjects under _INBOX., so set it to _INBOX.<name> or leave it out",
			ErrConfig, nameOrPath, file, p)
	}
	for _, f := range []struct {
		field string
		value *string
	}{{"password", &c.Password}, {"token", &c.Token}} {
		v, err := resolveSecret(*f.value)
		if err != nil {
			return nil, fmt.Errorf("%w: nats context %q (%s): %s: %v", ErrConfig, nameOrPath, file, f.field, err)
		}
		*f.value = v
	}
	for _, f := range []struct {
		field string
		value *string
	}{{"creds", &c.Creds}, {"nkey", &c.NKey}, {"cert", &c.Cert}, {"key", &c.Key}, {"ca", &c.CA}} {
		v, err := resolvePath(*f.value)
		if err != nil {
			return nil, fmt.Errorf("%w: nats context %q (%s): %s: %v", ErrConfig, nameOrPath, file, f.field, err)
		}
		*f.value = v
	}
	return c, nil
}

// knownContexts lists the context names in dir for an error message.
func knownContexts(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; known contexts: " + strings.Join(names, ", ")
}

// resolveSecret returns a literal value, or the variable an env://NAME
// reference names. Other references (op://, nsc://, data:) are refused.
func resolveSecret(v string) (string, error) {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok {
		return v, nil
	}
	switch strings.ToLower(scheme) {
	case "env":
		val, found := os.LookupEnv(rest)
		if !found {
			return "", fmt.Errorf("env://%s: the variable %s is not set", rest, rest)
		}
		return val, nil
	case "op", "nsc":
		return "", fmt.Errorf("%s:// references are not supported by skillbus; put the value in a file or an env:// variable", scheme)
	}
	return v, nil // a literal that happens to contain "://"
}

// resolvePath returns a file path: a bare path or file:// URI, with a
// leading ~ expanded. Other schemes are refused.
func resolvePath(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if scheme, rest, ok := strings.Cut(v, "://"); ok {
		if strings.ToLower(scheme) != "file" {
			return "", fmt.Errorf("%q: only file paths (or file://) are supported by skillbus", v)
		}
		v = rest
	}
	if strings.HasPrefix(v, "data:") {
		return "", fmt.Errorf("inline data: values are not supported by skillbus; point the field at a file")
	}
	return expandHome(v), nil
}

// expandHome replaces a leading ~ with the home directory.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

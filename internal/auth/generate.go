package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/skillbus/skillbus/internal/natsconn"
)

// ErrConfig reports an unusable option of Generate or of `skillbus auth`
// (a bad tool prefix, a directory that holds something else); the message
// names the option and says how to fix it.
var ErrConfig = errors.New("auth: invalid options")

// ErrKeys reports a key or JWT file in the directory that cannot be read
// or is not what its name says (a corrupted seed, an account seed in the
// operator's place). Nothing is overwritten: fix or remove the file, or
// start over in an empty directory.
var ErrKeys = errors.New("auth: unusable key file")

// Defaults of Options.
const (
	DefaultAccount = "SKILLBUS"
	DefaultURL     = "nats://127.0.0.1:4222"
	// DefaultLeafPort is the port the hub listens on for the leaf node
	// connections of edge sites (nats-server.conf's leafnodes block, the
	// default of Options.LeafURL): NATS's own default.
	DefaultLeafPort = 7422
	// MaxControlLine is the max_control_line auth.conf sets: room for the
	// largest user JWT in a CONNECT line (the server's default is 4 KiB).
	MaxControlLine = 16384
	// ResponseWindow is how long a service or tool provider may take to
	// answer one request (allow_responses expiry): longer than any group
	// timeout a seq.call or tool call is given in practice.
	ResponseWindow = time.Hour
)

// Limits are the JetStream and connection limits of the skillbus account.
// A zero field takes its default; -1 means unlimited (the server's own
// limits, max_file_store and max_memory_store, still apply).
type Limits struct {
	// DiskBytes caps the file storage of all streams; default -1.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
	// MemoryBytes caps the memory storage of all streams; default 1 GiB.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Streams caps the number of streams (skillbus uses 7); default 32.
	Streams int64 `json:"streams,omitempty"`
	// Consumers caps the number of consumers (only services make them:
	// the seqworker's durables and the registry's and seqworker's watches
	// of the streams they own; docs/security.md); default 10,000.
	Consumers int64 `json:"consumers,omitempty"`
	// Connections caps client connections; default -1.
	Connections int64 `json:"connections,omitempty"`
}

func (l Limits) withDefaults() Limits {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.DiskBytes, -1)
	def(&l.MemoryBytes, 1<<30)
	def(&l.Streams, 32)
	def(&l.Consumers, 10000)
	def(&l.Connections, -1)
	return l
}

// Options configure Generate. Dir is required; every other field has a
// default.
type Options struct {
	// Dir holds the keys, creds, contexts and server configuration; it is
	// created (0700) when missing. Existing keys in it are kept.
	Dir string
	// ToolPrefixes adds one tool provider role per prefix (Roles). The
	// prefixes of earlier runs in Dir are kept (setup.json), so a re-run
	// without them does not revoke their providers.
	ToolPrefixes []string
	// DropToolPrefixes removes the roles of these prefixes: their users
	// are revoked.
	DropToolPrefixes []string
	// EdgeSites adds one leaf node role per edge site (EdgeRole,
	// docs/edge.md) and, under edge/SITE/, the site's leaf server
	// configuration. Kept for later runs in Dir like ToolPrefixes.
	EdgeSites []string
	// DropEdgeSites removes these sites: their users are revoked and their
	// edge/SITE files removed.
	DropEdgeSites []string
	// LeafURL is the hub's leaf node URL(s), comma-separated, that the
	// edge sites dial; default the last run's, else nats-leaf://HOST:7422
	// for each HOST of URL.
	LeafURL string
	// ConsoleCallsTools, when set, says whether the console role may call
	// tools directly (TableOptions.ConsoleCallsTools; `skillbus auth
	// --console-calls-tools`); nil keeps the choice of the last run in Dir
	// (setup.json), else false.
	ConsoleCallsTools *bool
	// Rotate replaces the account signing key and every user key: all
	// creds issued before stop working once the servers load the new
	// configuration (docs/security.md, Rotating).
	Rotate bool
	// URL is written into the nats CLI contexts; default the URL of the
	// last run in Dir, else DefaultURL.
	URL string
	// Account names the skillbus account; default the last run's, else
	// DefaultAccount.
	Account string
	// Limits of the account; a zero field keeps the last run's value, else
	// takes its default.
	Limits Limits
}

// settings are the options of the last run, kept in Dir/setup.json.
type settings struct {
	URL          string   `json:"url,omitempty"`
	Account      string   `json:"account,omitempty"`
	ToolPrefixes []string `json:"tool_prefixes,omitempty"`
	EdgeSites    []string `json:"edge_sites,omitempty"`
	LeafURL      string   `json:"leaf_url,omitempty"`
	// ConsoleCallsTools is Options.ConsoleCallsTools as last chosen.
	ConsoleCallsTools bool   `json:"console_calls_tools,omitempty"`
	Limits            Limits `json:"limits"`
}

// SettingsFile holds the options of the last run in a Setup's Dir.
const SettingsFile = "setup.json"

// merge fills o's unset fields from the settings of the last run in dir and
// returns the settings to keep. Errors: a setup.json that cannot be read.
func (o Options) merge(dir string) (Options, settings, error) {
	var last settings
	b, err := os.ReadFile(filepath.Join(dir, SettingsFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &last); err != nil {
			return o, last, fmt.Errorf("%w: %s: %v (fix it or remove it: it only remembers the options of the last run)", ErrKeys, filepath.Join(dir, SettingsFile), err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return o, last, err
	}
	pick := func(v *string, old, def string) {
		if *v == "" {
			*v = old
		}
		if *v == "" {
			*v = def
		}
	}
	pick(&o.URL, last.URL, DefaultURL)
	pick(&o.Account, last.Account, DefaultAccount)
	keep := func(v *int64, old int64) {
		if *v == 0 {
			*v = old
		}
	}
	keep(&o.Limits.DiskBytes, last.Limits.DiskBytes)
	keep(&o.Limits.MemoryBytes, last.Limits.MemoryBytes)
	keep(&o.Limits.Streams, last.Limits.Streams)
	keep(&o.Limits.Consumers, last.Limits.Consumers)
	keep(&o.Limits.Connections, last.Limits.Connections)
	o.Limits = o.Limits.withDefaults()
	var prefixes []string
	for _, p := range append(slices.Clone(last.ToolPrefixes), o.ToolPrefixes...) {
		if !slices.Contains(prefixes, p) && !slices.Contains(o.DropToolPrefixes, p) {
			prefixes = append(prefixes, p)
		}
	}
	o.ToolPrefixes = prefixes
	var sites []string
	for _, p := range append(slices.Clone(last.EdgeSites), o.EdgeSites...) {
		if !slices.Contains(sites, p) && !slices.Contains(o.DropEdgeSites, p) {
			sites = append(sites, p)
		}
	}
	o.EdgeSites = sites
	pick(&o.LeafURL, last.LeafURL, leafURLs(o.URL))
	if o.ConsoleCallsTools == nil {
		o.ConsoleCallsTools = &last.ConsoleCallsTools
	}
	return o, settings{URL: o.URL, Account: o.Account, ToolPrefixes: prefixes, EdgeSites: sites, LeafURL: o.LeafURL, ConsoleCallsTools: *o.ConsoleCallsTools, Limits: o.Limits}, nil
}

// Setup is a generated set of users and the server configuration that
// trusts them, as written in Dir.
type Setup struct {
	// Dir is the directory (absolute).
	Dir string
	// Roles is the permission table the users were made from.
	Roles []Role
	// ConsoleCallsTools tells whether the console role may call tools
	// directly (Options.ConsoleCallsTools, after the last run's choice).
	ConsoleCallsTools bool
	// OperatorJWT, AccountJWT and SystemJWT are the JWTs of the operator,
	// the skillbus account and the system account; AccountKey and
	// SystemKey their public keys.
	OperatorJWT, AccountJWT, SystemJWT string
	AccountKey, SystemKey              string
	// LeafURL is the hub's leaf node URL(s) the edge sites dial
	// (Options.LeafURL after the last run's choice).
	LeafURL string
	// Revoked lists users (public keys) of roles no longer in the table,
	// revoked in the account JWT.
	Revoked []string
	// Changed lists the files this run wrote or replaced (relative to
	// Dir); empty when the directory was already up to date.
	Changed []string
}

// Files of a Setup, relative to its Dir.
const (
	AuthConfFile   = "auth.conf"
	ServerConfFile = "nats-server.conf"
	keysDir        = "keys"
	jwtDir         = "jwt"
	credsDir       = "creds"
	contextsDir    = "contexts"
	// SystemUser is the user of the system account (`nats server report`,
	// `nats server list`); not a skillbus role.
	SystemUser = "system"
)

// CredsFile returns the path of role's creds file (a user JWT and its
// seed, the file NATS_CREDS and --creds take).
func (s *Setup) CredsFile(role string) string {
	return filepath.Join(s.Dir, credsDir, role+".creds")
}

// ContextFile returns the path of role's nats CLI context (url, creds and
// inbox prefix), usable as --context PATH and NATS_CONTEXT.
func (s *Setup) ContextFile(role string) string {
	return filepath.Join(s.Dir, contextsDir, role+".json")
}

// ServerConfig returns the path of the complete nats-server configuration
// (a listener, JetStream and the auth block).
func (s *Setup) ServerConfig() string { return filepath.Join(s.Dir, ServerConfFile) }

// AuthConfig returns the path of the auth block alone (operator, system
// account, MEMORY resolver with both accounts preloaded), to include from a
// configuration of your own.
func (s *Setup) AuthConfig() string { return filepath.Join(s.Dir, AuthConfFile) }

// Role returns the role named name, and whether there is one.
func (s *Setup) Role(name string) (Role, bool) {
	for _, r := range s.Roles {
		if r.Name == name {
			return r, true
		}
	}
	return Role{}, false
}

// Generate creates or refreshes the setup in o.Dir: an operator, the
// skillbus account (JetStream enabled, o.Limits) with a signing key, the
// system account, and one user per role of Table (o.ToolPrefixes,
// o.ConsoleCallsTools) signed
// by the signing key, each with exactly its role's permissions; their creds
// files and nats CLI contexts; and the server configuration (operator mode,
// MEMORY resolver preloaded with both accounts).
//
// It is idempotent: keys found in o.Dir are kept (unless o.Rotate), and a
// JWT whose claims did not change keeps its file, so a second run changes
// nothing. Users of roles that left the table are revoked in the account
// JWT and their files removed. Seeds and creds are written 0600, in
// directories of 0700.
//
// Errors: ErrConfig (bad options), ErrKeys (an unusable key file), and
// file system errors.
func Generate(o Options) (*Setup, error) {
	if o.Dir == "" {
		return nil, fmt.Errorf("%w: no directory given (--dir)", ErrConfig)
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrConfig, dir)
	}
	o, keep, err := o.merge(dir)
	if err != nil {
		return nil, err
	}
	roles, err := Table(TableOptions{ToolPrefixes: o.ToolPrefixes, EdgeSites: o.EdgeSites, ConsoleCallsTools: *o.ConsoleCallsTools})
	if err != nil {
		return nil, err
	}
	if err := checkLeafURL(o.LeafURL); err != nil {
		return nil, err
	}
	g := &generator{dir: dir, s: &Setup{Dir: dir, Roles: roles, ConsoleCallsTools: *o.ConsoleCallsTools, LeafURL: o.LeafURL}}
	if err := g.mkdirs(); err != nil {
		return nil, err
	}
	op, err := g.key("operator.nk", nkeys.PrefixByteOperator, false)
	if err != nil {
		return nil, err
	}
	acc, err := g.key("account.nk", nkeys.PrefixByteAccount, false)
	if err != nil {
		return nil, err
	}
	signer, err := g.key("account-signing.nk", nkeys.PrefixByteAccount, o.Rotate)
	if err != nil {
		return nil, err
	}
	sys, err := g.key("system.nk", nkeys.PrefixByteAccount, false)
	if err != nil {
		return nil, err
	}
	sysUser, err := g.key(filepath.Join("users", SystemUser+".nk"), nkeys.PrefixByteUser, o.Rotate)
	if err != nil {
		return nil, err
	}
	opPub, _ := op.PublicKey()
	accPub, _ := acc.PublicKey()
	sysPub, _ := sys.PublicKey()
	signPub, _ := signer.PublicKey()
	g.s.AccountKey, g.s.SystemKey = accPub, sysPub

	users := map[string]nkeys.KeyPair{}
	for _, r := range roles {
		if users[r.Name], err = g.key(filepath.Join("users", r.Name+".nk"), nkeys.PrefixByteUser, o.Rotate); err != nil {
			return nil, err
		}
	}
	revoked, err := g.retire(roles, o.Rotate)
	if err != nil {
		return nil, err
	}

	// Operator.
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "skillbus"
	oc.SystemAccount = sysPub
	if g.s.OperatorJWT, err = g.jwt("operator.jwt", oc, op); err != nil {
		return nil, err
	}
	// System account: JetStream off, no limits (the server's own use).
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = "SYS"
	if g.s.SystemJWT, err = g.jwt("system.jwt", sc, op); err != nil {
		return nil, err
	}
	// The skillbus account.
	lim := o.Limits
	ac := jwt.NewAccountClaims(accPub)
	ac.Name = o.Account
	ac.Description = "skillbus: one user per role, permissions in docs/security.md"
	ac.SigningKeys.Add(signPub)
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{
		DiskStorage: lim.DiskBytes, MemoryStorage: lim.MemoryBytes,
		Streams: lim.Streams, Consumer: lim.Consumers, MaxAckPending: -1,
	}
	ac.Limits.Conn = lim.Connections
	ac.Limits.LeafNodeConn = 0
	if len(o.EdgeSites) > 0 {
		// Each site's user may connect only as a leaf node, and only with
		// its site's grants (docs/edge.md).
		ac.Limits.LeafNodeConn = jwt.NoLimit
	}
	ac.Limits.Imports, ac.Limits.Exports, ac.Limits.WildcardExports = 0, 0, false
	ac.Limits.DisallowBearer = true
	for pub, at := range revoked {
		ac.RevokeAt(pub, time.Unix(at, 0))
	}
	for pub := range revoked {
		g.s.Revoked = append(g.s.Revoked, pub)
	}
	sort.Strings(g.s.Revoked)
	if g.s.AccountJWT, err = g.jwt("account.jwt", ac, op); err != nil {
		return nil, err
	}

	// Users.
	for _, r := range roles {
		uc := userClaims(r, users[r.Name], accPub)
		if err := g.user(r.Name, uc, users[r.Name], signer, o.URL, r.InboxPrefix(), r.Summary, r.Site != ""); err != nil {
			return nil, err
		}
		if r.Site != "" {
			if err := g.edgeFiles(r); err != nil {
				return nil, err
			}
		}
	}
	suPub, _ := sysUser.PublicKey()
	suc := jwt.NewUserClaims(suPub)
	suc.Name = SystemUser
	suc.IssuerAccount = ""
	if err := g.user(SystemUser, suc, sysUser, sys, o.URL, "", "the system account: server monitoring with the nats CLI (nats server report jetstream); not used by skillbus", false); err != nil {
		return nil, err
	}

	if err := g.file(AuthConfFile, []byte(authConf(g.s)), 0o644); err != nil {
		return nil, err
	}
	if err := g.file(ServerConfFile, []byte(serverConf(g.s)), 0o644); err != nil {
		return nil, err
	}
	b, _ := json.MarshalIndent(keep, "", "  ")
	if err := g.file(SettingsFile, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return g.s, nil
}

// userClaims returns the claims of role r's user: its allow-lists,
// response permission and the tag skillbus-role:<name>.
func userClaims(r Role, kp nkeys.KeyPair, account string) *jwt.UserClaims {
	pub, _ := kp.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = r.Name
	uc.IssuerAccount = account
	uc.Tags.Add(natsconn.RoleTag + r.Name)
	for _, g := range r.Pub {
		uc.Permissions.Pub.Allow.Add(g.Subject)
	}
	for _, g := range r.DenyPub {
		uc.Permissions.Pub.Deny.Add(g.Subject)
	}
	if len(r.Pub) == 0 {
		// An empty allow-list would allow everything.
		uc.Permissions.Pub.Deny.Add(">")
	}
	for _, g := range r.Sub {
		uc.Permissions.Sub.Allow.Add(g.Subject)
	}
	if r.Responds {
		uc.Permissions.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: ResponseWindow}
		if r.Progresses {
			uc.Permissions.Resp.MaxMsgs = -1 // any number: progress messages, then the reply
		}
	}
	if r.Site != "" {
		// Every client of the site's leaf server shares this one
		// connection: each of its services answers a discovery request.
		if uc.Permissions.Resp != nil {
			uc.Permissions.Resp.MaxMsgs = -1
		}
		uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeLeafnode, jwt.ConnectionTypeLeafnodeWS)
		return uc
	}
	uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeStandard)
	return uc
}

// generator writes one Setup.
type generator struct {
	dir string
	s   *Setup
}

func (g *generator) path(rel string) string { return filepath.Join(g.dir, rel) }

func (g *generator) mkdirs() error {
	if st, err := os.Stat(g.dir); err == nil && !st.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrConfig, g.dir)
	}
	for _, d := range []string{"", keysDir, filepath.Join(keysDir, "users"), jwtDir, credsDir, contextsDir} {
		if err := os.MkdirAll(g.path(d), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// key loads the seed keys/<rel>, or creates it (always when fresh): a
// seed of the kind prefix, written 0600. Errors: ErrKeys for a file that
// holds no seed of that kind.
func (g *generator) key(rel string, prefix nkeys.PrefixByte, fresh bool) (nkeys.KeyPair, error) {
	p := g.path(filepath.Join(keysDir, rel))
	if !fresh {
		b, err := os.ReadFile(p)
		switch {
		case err == nil:
			kp, kerr := nkeys.FromSeed(bytes.TrimSpace(b))
			if kerr != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrKeys, p, kerr)
			}
			if got, _ := kp.PublicKey(); got == "" || nkeys.PrefixByte(decodePrefix(got)) != prefix {
				return nil, fmt.Errorf("%w: %s holds a seed of another kind (want %s)", ErrKeys, p, prefix)
			}
			return kp, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, err
		}
	}
	kp, err := nkeys.CreatePair(prefix)
	if err != nil {
		return nil, err
	}
	seed, _ := kp.Seed()
	if err := g.file(filepath.Join(keysDir, rel), append(seed, '\n'), 0o600); err != nil {
		return nil, err
	}
	return kp, nil
}

// decodePrefix returns the prefix byte of a public key's first character.
func decodePrefix(pub string) byte {
	switch pub[0] {
	case 'O':
		return byte(nkeys.PrefixByteOperator)
	case 'A':
		return byte(nkeys.PrefixByteAccount)
	case 'U':
		return byte(nkeys.PrefixByteUser)
	}
	return 0
}

// retire revokes the users of roles no longer in the table (their keys
// under keys/users without a role) and removes their files. The
// revocations of earlier runs are carried over from the existing account
// JWT, unless rotating (the new signing key makes them moot).
func (g *generator) retire(roles []Role, rotate bool) (map[string]int64, error) {
	revoked := map[string]int64{}
	if !rotate {
		if b, err := os.ReadFile(g.path(filepath.Join(jwtDir, "account.jwt"))); err == nil {
			if ac, err := jwt.DecodeAccountClaims(strings.TrimSpace(string(b))); err == nil {
				for pub, at := range ac.Revocations {
					revoked[pub] = at
				}
			}
		}
	}
	keep := map[string]bool{SystemUser: true}
	for _, r := range roles {
		keep[r.Name] = true
	}
	entries, err := os.ReadDir(g.path(filepath.Join(keysDir, "users")))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".nk")
		if !ok || keep[name] {
			continue
		}
		p := g.path(filepath.Join(keysDir, "users", e.Name()))
		if b, err := os.ReadFile(p); err == nil {
			if kp, err := nkeys.FromSeed(bytes.TrimSpace(b)); err == nil {
				pub, _ := kp.PublicKey()
				revoked[pub] = time.Now().Unix()
			}
		}
		for _, f := range []string{p, g.path(filepath.Join(credsDir, name+".creds")), g.path(filepath.Join(contextsDir, name+".json"))} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
		if site, ok := strings.CutPrefix(name, RoleEdge+"-"); ok {
			if err := os.RemoveAll(g.path(filepath.Join(edgeDir, site))); err != nil {
				return nil, err
			}
		}
		g.s.Changed = append(g.s.Changed, filepath.Join(credsDir, name+".creds")+" (removed, user revoked)")
	}
	return revoked, nil
}

// encoder is what every claims type offers.
type encoder interface {
	Encode(kp nkeys.KeyPair) (string, error)
}

// jwt encodes c with kp into jwt/<name>, keeping the existing file when
// its claims are the same but for the issue time and id.
func (g *generator) jwt(name string, c encoder, kp nkeys.KeyPair) (string, error) {
	tok, err := c.Encode(kp)
	if err != nil {
		return "", fmt.Errorf("auth: encode %s: %w", name, err)
	}
	rel := filepath.Join(jwtDir, name)
	if old, err := os.ReadFile(g.path(rel)); err == nil && sameClaims(strings.TrimSpace(string(old)), tok) {
		return strings.TrimSpace(string(old)), nil
	}
	return tok, g.file(rel, []byte(tok+"\n"), 0o644)
}

// user writes role's creds (0600) and context, reusing the JWT of the
// existing creds file when its claims are unchanged. The context of a
// leaf role is the one of the site's own clients instead: the site's leaf
// server (EdgeLocalURL), no creds, the role's inbox prefix.
func (g *generator) user(name string, uc *jwt.UserClaims, kp, signer nkeys.KeyPair, url, inbox, desc string, leaf bool) error {
	tok, err := uc.Encode(signer)
	if err != nil {
		return fmt.Errorf("auth: encode the %s user: %w", name, err)
	}
	credsRel := filepath.Join(credsDir, name+".creds")
	if old, err := os.ReadFile(g.path(credsRel)); err == nil {
		if oldTok, err := jwt.ParseDecoratedJWT(old); err == nil && sameClaims(oldTok, tok) {
			tok = oldTok
		}
	}
	seed, _ := kp.Seed()
	creds, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		return fmt.Errorf("auth: creds of %s: %w", name, err)
	}
	if err := g.file(credsRel, creds, 0o600); err != nil {
		return err
	}
	ctx := map[string]string{"description": "skillbus " + name + ": " + desc, "url": url, "creds": g.path(credsRel)}
	if leaf {
		ctx = map[string]string{"description": "skillbus " + name + ": the clients at the site (tools serve --prefix, skillbus mcp --prefix), connecting to the site's leaf server", "url": EdgeLocalURL}
	}
	if inbox != "" {
		ctx["inbox_prefix"] = inbox
	}
	b, _ := json.MarshalIndent(ctx, "", "  ")
	return g.file(filepath.Join(contextsDir, name+".json"), append(b, '\n'), 0o600)
}

// file writes data to rel with mode perm unless it already holds exactly
// that (then it only fixes the mode), recording what changed.
func (g *generator) file(rel string, data []byte, perm os.FileMode) error {
	p := g.path(rel)
	if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, data) {
		return os.Chmod(p, perm)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil { // WriteFile keeps the mode of an existing file
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		return err
	}
	g.s.Changed = append(g.s.Changed, rel)
	return nil
}

// sameClaims reports whether two JWTs carry the same claims but for their
// issue time and id (jti, iat).
func sameClaims(a, b string) bool {
	pa, pb := payload(a), payload(b)
	if pa == nil || pb == nil {
		return false
	}
	for _, m := range []map[string]any{pa, pb} {
		delete(m, "jti")
		delete(m, "iat")
	}
	return reflect.DeepEqual(pa, pb)
}

func payload(tok string) map[string]any {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

// authConf is the auth block: operator mode with a MEMORY resolver that
// has both accounts preloaded.
func authConf(s *Setup) string {
	var b strings.Builder
	b.WriteString("# skillbus: NATS operator mode, generated by `skillbus auth` (docs/security.md).\n")
	b.WriteString("# Include it from your server configuration (include auth.conf) or use nats-server.conf.\n")
	b.WriteString("# The JWTs below are public; the seeds that signed them stay in keys/.\n\n")
	fmt.Fprintf(&b, "operator: %s\n\n", s.OperatorJWT)
	fmt.Fprintf(&b, "system_account: %s\n\n", s.SystemKey)
	b.WriteString("# A user's JWT (with its permission lists) travels in its CONNECT line: the\n")
	b.WriteString("# seqworker's is about 4 KiB, the server's default limit for the whole line.\n")
	fmt.Fprintf(&b, "max_control_line: %d\n\n", MaxControlLine)
	b.WriteString("# The accounts never change at run time: a MEMORY resolver preloaded with both.\n")
	b.WriteString("# Users are not listed: any user JWT signed by the account's signing key is trusted.\n")
	b.WriteString("resolver: MEMORY\n")
	b.WriteString("resolver_preload: {\n")
	fmt.Fprintf(&b, "  # %s\n  %s: %s\n", "skillbus account", s.AccountKey, s.AccountJWT)
	fmt.Fprintf(&b, "  # %s\n  %s: %s\n", "system account", s.SystemKey, s.SystemJWT)
	b.WriteString("}\n")
	return b.String()
}

// serverConf is a complete single-server configuration using auth.conf.
func serverConf(s *Setup) string {
	var b strings.Builder
	b.WriteString("# A single nats-server for skillbus with the users of `skillbus auth` (docs/security.md):\n")
	b.WriteString("#   nats-server -c " + filepath.Join(s.Dir, ServerConfFile) + "\n")
	b.WriteString("port: 4222\n\n")
	b.WriteString("jetstream {\n")
	fmt.Fprintf(&b, "  store_dir: %q\n", filepath.Join(s.Dir, "jetstream"))
	b.WriteString("}\n\n")
	b.WriteString("include " + AuthConfFile + "\n")
	if edges := edgeSites(s.Roles); len(edges) > 0 {
		b.WriteString("\n# The leaf servers of the edge sites (" + strings.Join(edges, ", ") + ") dial this port with\n")
		b.WriteString("# their creds/edge-SITE.creds (docs/edge.md).\n")
		fmt.Fprintf(&b, "leafnodes {\n  port: %d\n}\n", DefaultLeafPort)
	}
	return b.String()
}

package auth

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"gopkg.in/yaml.v3"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

var update = flag.Bool("update", false, "rewrite the roles section of docs/security.md from the table")

func generate(t *testing.T, o Options) *Setup {
	t.Helper()
	s, err := Generate(o)
	if err != nil {
		t.Fatalf("Generate(%+v): %v", o, err)
	}
	return s
}

// TestGenerateFiles checks what Generate writes: a creds file and a
// context per role and the system user, seeds and creds 0600 in 0700
// directories, a server configuration the server accepts.
func TestGenerateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	s := generate(t, Options{Dir: dir, ToolPrefixes: []string{"web"}})
	want := []string{RoleRegistry, RoleSeqworker, RoleSkillface, RoleTools, "tools-web", RoleAgent, RoleRunner, RoleReader, RoleConsole}
	var got []string
	for _, r := range s.Roles {
		got = append(got, r.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("roles = %v; want %v", got, want)
	}
	for _, name := range append(want, SystemUser) {
		for _, f := range []string{s.CredsFile(name), s.ContextFile(name), filepath.Join(dir, keysDir, "users", name+".nk")} {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v; want 0600", f, st.Mode().Perm())
			}
		}
		b, _ := os.ReadFile(s.CredsFile(name))
		if _, err := jwt.ParseDecoratedUserNKey(b); err != nil {
			t.Errorf("%s holds no user seed: %v", s.CredsFile(name), err)
		}
	}
	for _, k := range []string{"operator.nk", "account.nk", "account-signing.nk", "system.nk"} {
		if st, err := os.Stat(filepath.Join(dir, keysDir, k)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("keys/%s: %v, mode %v; want 0600", k, err, st.Mode().Perm())
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, keysDir), filepath.Join(dir, credsDir)} {
		if st, _ := os.Stat(d); st.Mode().Perm() != 0o700 {
			t.Errorf("%s has mode %v; want 0700", d, st.Mode().Perm())
		}
	}
	if _, err := server.ProcessConfigFile(s.ServerConfig()); err != nil {
		t.Errorf("nats-server refuses %s: %v", s.ServerConfig(), err)
	}
	ac, err := jwt.DecodeAccountClaims(s.AccountJWT)
	if err != nil {
		t.Fatal(err)
	}
	if !ac.Limits.IsJSEnabled() || ac.Limits.Streams != 32 || ac.Limits.Consumer != 10000 || !ac.Limits.DisallowBearer {
		t.Errorf("account limits = %+v; want JetStream on, 32 streams, 10000 consumers, no bearer tokens", ac.Limits)
	}
	// Each user's JWT carries its role's lists and inbox.
	for _, r := range s.Roles {
		b, _ := os.ReadFile(s.CredsFile(r.Name))
		tok, _ := jwt.ParseDecoratedJWT(b)
		uc, err := jwt.DecodeUserClaims(tok)
		if err != nil {
			t.Fatal(err)
		}
		if uc.IssuerAccount != s.AccountKey || uc.Issuer == s.AccountKey {
			t.Errorf("%s: issued by %s for %s; want the account's signing key for %s", r.Name, uc.Issuer, uc.IssuerAccount, s.AccountKey)
		}
		if len(uc.Permissions.Pub.Allow) != len(r.Pub) || len(uc.Permissions.Sub.Allow) != len(r.Sub) || (uc.Permissions.Resp != nil) != r.Responds {
			t.Errorf("%s: JWT permissions %+v do not match the table", r.Name, uc.Permissions)
		}
		if p, _ := natsconn.InboxPrefixOf(s.CredsFile(r.Name)); p != r.InboxPrefix() {
			t.Errorf("InboxPrefixOf(%s creds) = %q; want %q", r.Name, p, r.InboxPrefix())
		}
	}
}

// TestGenerateIdempotent runs Generate twice: the second run changes no
// file; keys, JWTs and creds stay byte for byte.
func TestGenerateIdempotent(t *testing.T) {
	dir := t.TempDir()
	first := generate(t, Options{Dir: dir, ToolPrefixes: []string{"web"}})
	before := snapshot(t, dir)
	second := generate(t, Options{Dir: dir})
	if len(second.Changed) != 0 {
		t.Errorf("second run changed %v; want nothing", second.Changed)
	}
	if after := snapshot(t, dir); !mapsEqual(before, after) {
		t.Errorf("second run changed files")
	}
	if _, ok := second.Role("tools-web"); !ok {
		t.Errorf("a re-run without --tool-prefix web dropped the tools-web role; want the prefixes of earlier runs kept")
	}
	if first.AccountJWT != second.AccountJWT {
		t.Errorf("account JWT changed on a re-run")
	}
}

// TestGenerateConsoleCallsTools checks the opt-in of `skillbus auth
// --console-calls-tools`: by default the console's user may not publish on
// tool.>; with the option it may; a re-run without the option keeps the
// last choice, and an explicit false takes the grant away again.
func TestGenerateConsoleCallsTools(t *testing.T) {
	dir := t.TempDir()
	pubAllow := func(s *Setup) []string {
		t.Helper()
		b, err := os.ReadFile(s.CredsFile(RoleConsole))
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := jwt.ParseDecoratedJWT(b)
		uc, err := jwt.DecodeUserClaims(tok)
		if err != nil {
			t.Fatal(err)
		}
		return uc.Permissions.Pub.Allow
	}
	on, off := true, false
	s := generate(t, Options{Dir: dir})
	if s.ConsoleCallsTools || slices.Contains(pubAllow(s), events.SubjectToolAll) {
		t.Errorf("by default the console may publish on %s; want it not to", events.SubjectToolAll)
	}
	if !slices.Contains(pubAllow(s), events.SeqRunSubject) || !slices.Contains(pubAllow(s), events.SeqListSubject) {
		t.Errorf("the console's publish allow-list %v lacks seq.run or seq.list (its runs list)", pubAllow(s))
	}
	s = generate(t, Options{Dir: dir, ConsoleCallsTools: &on})
	if !s.ConsoleCallsTools || !slices.Contains(pubAllow(s), events.SubjectToolAll) || !slices.Contains(s.Changed, filepath.Join(credsDir, RoleConsole+".creds")) {
		t.Errorf("with ConsoleCallsTools the console's allow-list is %v (changed %v); want %s added", pubAllow(s), s.Changed, events.SubjectToolAll)
	}
	s = generate(t, Options{Dir: dir})
	if !s.ConsoleCallsTools || len(s.Changed) != 0 {
		t.Errorf("a re-run without the option: calls tools %v, changed %v; want the last choice kept and nothing changed", s.ConsoleCallsTools, s.Changed)
	}
	s = generate(t, Options{Dir: dir, ConsoleCallsTools: &off})
	if s.ConsoleCallsTools || slices.Contains(pubAllow(s), events.SubjectToolAll) {
		t.Errorf("ConsoleCallsTools false: the console may still publish on %s", events.SubjectToolAll)
	}
	// The docs show the grant under the option's name, and only there.
	md := Markdown()
	i := strings.Index(md, "#### `"+RoleConsole+"`")
	if i < 0 || !strings.Contains(md[i:], "| publish (only with `skillbus auth "+ConsoleCallsToolsFlag+"`) | `tool.>` |") {
		t.Errorf("the docs' console table does not show tool.> as the opt-in of %s", ConsoleCallsToolsFlag)
	}
	for _, r := range mustRoles(t) {
		for _, g := range r.Pub {
			if g.OptIn != "" {
				t.Errorf("%s: the default table has the opt-in grant %s", r.Name, g.Subject)
			}
		}
	}
}

func mustRoles(t *testing.T) []Role {
	t.Helper()
	roles, err := Roles()
	if err != nil {
		t.Fatal(err)
	}
	return roles
}

// TestGenerateRotate checks --rotate: new user keys and signing key, and a
// server on the new configuration refuses the old creds and accepts the new.
func TestGenerateRotate(t *testing.T) {
	dir := t.TempDir()
	old := generate(t, Options{Dir: dir})
	oldCreds := filepath.Join(t.TempDir(), "old-runner.creds")
	b, _ := os.ReadFile(old.CredsFile(RoleRunner))
	os.WriteFile(oldCreds, b, 0o600)
	oldOperator := old.OperatorJWT

	srv := startServer(t, old)
	mustConnect(t, srv, oldCreds)
	srv.Shutdown()

	rot := generate(t, Options{Dir: dir, Rotate: true})
	if rot.OperatorJWT != oldOperator || rot.AccountKey != old.AccountKey {
		t.Errorf("rotate changed the operator or the account; want only the signing key and the users")
	}
	nb, _ := os.ReadFile(rot.CredsFile(RoleRunner))
	if bytes.Equal(nb, b) {
		t.Fatal("rotate left the runner's creds as they were")
	}
	srv = startServer(t, rot)
	if _, err := connect(srv, oldCreds); err == nil {
		t.Errorf("a server with the rotated configuration accepts the runner's old creds; want them refused")
	}
	mustConnect(t, srv, rot.CredsFile(RoleRunner))
}

// TestGenerateDropToolPrefix removes a tool provider role: its user is
// revoked in the account JWT, its files removed, and the server refuses it.
func TestGenerateDropToolPrefix(t *testing.T) {
	dir := t.TempDir()
	s := generate(t, Options{Dir: dir, ToolPrefixes: []string{"web", "files"}})
	webCreds := filepath.Join(t.TempDir(), "web.creds")
	b, _ := os.ReadFile(s.CredsFile("tools-web"))
	os.WriteFile(webCreds, b, 0o600)
	time.Sleep(1100 * time.Millisecond) // revocations are by second: issue and revoke apart
	d := generate(t, Options{Dir: dir, DropToolPrefixes: []string{"web"}})
	if _, ok := d.Role("tools-web"); ok {
		t.Fatal("tools-web is still a role after DropToolPrefixes web")
	}
	if _, ok := d.Role("tools-files"); !ok {
		t.Fatal("tools-files was dropped too")
	}
	if len(d.Revoked) != 1 {
		t.Errorf("revoked = %v; want the tools-web user", d.Revoked)
	}
	if _, err := os.Stat(d.CredsFile("tools-web")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("creds/tools-web.creds still exists (%v)", err)
	}
	srv := startServer(t, d)
	if _, err := connect(srv, webCreds); err == nil {
		t.Errorf("the server accepts the creds of the dropped tools-web role")
	}
	mustConnect(t, srv, d.CredsFile("tools-files"))
	// A later run keeps the revocation.
	again := generate(t, Options{Dir: dir})
	if len(again.Changed) != 0 || len(again.Revoked) != 1 {
		t.Errorf("re-run after the drop: changed %v, revoked %v; want nothing changed, the revocation kept", again.Changed, again.Revoked)
	}
}

// TestGenerateBadInput checks the refusals: bad prefixes, a directory that
// is a file, a corrupted seed (never overwritten).
func TestGenerateBadInput(t *testing.T) {
	for _, p := range []string{"", "a..b", "fs", "fs.extra", "we b", "x>", "*"} {
		if _, err := Generate(Options{Dir: t.TempDir(), ToolPrefixes: []string{p}}); !errors.Is(err, ErrConfig) {
			t.Errorf("Generate(tool prefix %q) = %v; want ErrConfig", p, err)
		}
	}
	if _, err := Generate(Options{Dir: t.TempDir(), ToolPrefixes: []string{"a.b", "a-b"}}); !errors.Is(err, ErrConfig) {
		t.Errorf("Generate(prefixes a.b and a-b, one role name) = %v; want ErrConfig", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := Generate(Options{Dir: f}); !errors.Is(err, ErrConfig) {
		t.Errorf("Generate(Dir a file) = %v; want ErrConfig", err)
	}
	dir := t.TempDir()
	generate(t, Options{Dir: dir})
	opKey := filepath.Join(dir, keysDir, "operator.nk")
	os.WriteFile(opKey, []byte("SUAJUNK\n"), 0o600)
	if _, err := Generate(Options{Dir: dir}); !errors.Is(err, ErrKeys) || !strings.Contains(err.Error(), opKey) {
		t.Errorf("Generate with a corrupted operator seed = %v; want ErrKeys naming %s", err, opKey)
	}
	if b, _ := os.ReadFile(opKey); string(b) != "SUAJUNK\n" {
		t.Errorf("the corrupted seed was overwritten")
	}
	acc, _ := os.ReadFile(filepath.Join(dir, keysDir, "account.nk"))
	os.WriteFile(opKey, acc, 0o600)
	if _, err := Generate(Options{Dir: dir}); !errors.Is(err, ErrKeys) {
		t.Errorf("Generate with an account seed as the operator's = %v; want ErrKeys", err)
	}
}

// TestRolesTable checks the table itself: every subject is valid, no role
// may publish or subscribe to everything, only the services answer
// requests, client roles have private inboxes only, and the built-in tool
// families are exactly those internal/builtin serves.
func TestRolesTable(t *testing.T) {
	roles, err := Roles("web")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles {
		for _, g := range slices.Concat(r.Pub, r.Sub, r.DenyPub) {
			if !validSubject(g.Subject) {
				t.Errorf("%s: %q is not a valid subject", r.Name, g.Subject)
			}
			if g.Subject == ">" || g.Subject == "_INBOX.>" || strings.HasPrefix(g.Subject, "_INBOX.*") {
				t.Errorf("%s: %q grants everything or every inbox", r.Name, g.Subject)
			}
			if g.Why == "" {
				t.Errorf("%s: %q has no reason", r.Name, g.Subject)
			}
		}
		for _, g := range r.Sub {
			if strings.HasPrefix(g.Subject, "_INBOX.") && g.Subject != r.InboxPrefix()+".>" {
				t.Errorf("%s subscribes to %s; want only its own inbox %s.>", r.Name, g.Subject, r.InboxPrefix())
			}
		}
		service := slices.Contains([]string{RoleRegistry, RoleSeqworker, RoleSkillface}, r.Name) || strings.HasPrefix(r.Name, RoleTools)
		if r.Responds != service {
			t.Errorf("%s: Responds = %v; want %v (only services and tool providers answer requests)", r.Name, r.Responds, service)
		}
	}
	// Every stream and bucket events.Provision makes is in the table.
	var made []string
	for _, kv := range events.KeyValueConfigs(events.Options{}) {
		made = append(made, "KV_"+kv.Bucket)
	}
	for _, sc := range events.StreamConfigs(events.Options{}) {
		made = append(made, sc.Name)
	}
	made = append(made, "OBJ_"+events.RunSlotsConfig(events.Options{}).Bucket)
	for _, m := range made {
		if !slices.Contains(Streams, m) {
			t.Errorf("events.Provision makes the stream %s, which the permission table does not know (internal/auth streams)", m)
		}
	}
	if len(made) != len(Streams) {
		t.Errorf("the table knows the streams %v; events.Provision makes %v", Streams, made)
	}
	p, err := builtin.New(builtin.Config{Root: t.TempDir(), AllowCommands: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var fams []string
	for _, tl := range p.Tools() {
		f, _, _ := strings.Cut(tl.Name, ".")
		if !slices.Contains(fams, f) {
			fams = append(fams, f)
		}
	}
	slices.Sort(fams)
	want := slices.Sorted(slices.Values(BuiltinToolFamilies))
	if !slices.Equal(fams, want) {
		t.Errorf("internal/builtin serves the families %v; BuiltinToolFamilies = %v", fams, want)
	}
}

func validSubject(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	toks := strings.Split(s, ".")
	for i, tok := range toks {
		if tok == "" || (strings.Contains(tok, ">") && (tok != ">" || i != len(toks)-1)) || (strings.Contains(tok, "*") && tok != "*") {
			return false
		}
	}
	return true
}

// TestK8sSecrets checks -o k8s: one Secret per role named as
// deploy/k8s/components/nats-creds mounts it, with the creds file under
// nats.creds, and the servers' auth.conf.
func TestK8sSecrets(t *testing.T) {
	s := generate(t, Options{Dir: t.TempDir()})
	out, err := s.K8sSecrets("skillbus")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	got := map[string]map[string]string{}
	for {
		var d struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Type     string
			Data     map[string]string `yaml:"stringData"`
		}
		if err := dec.Decode(&d); err != nil {
			break
		}
		if d.Kind != "Secret" || d.Metadata.Namespace != "skillbus" || d.Type != "Opaque" {
			t.Errorf("document %+v; want an Opaque Secret in skillbus", d.Metadata)
		}
		got[d.Metadata.Name] = d.Data
	}
	for _, r := range s.Roles {
		b, _ := os.ReadFile(s.CredsFile(r.Name))
		if got[SecretName(r.Name)]["nats.creds"] != string(b) {
			t.Errorf("Secret %s does not hold creds/%s.creds under nats.creds", SecretName(r.Name), r.Name)
		}
	}
	conf, _ := os.ReadFile(s.AuthConfig())
	if got[AuthSecretName][AuthConfFile] != string(conf) {
		t.Errorf("Secret %s does not hold auth.conf", AuthSecretName)
	}
	// The deployments mount these names.
	comp := filepath.Join("..", "..", "deploy", "k8s", "components", "nats-creds")
	files, _ := filepath.Glob(filepath.Join(comp, "*.yaml"))
	re := regexp.MustCompile(`secretName: (\S+)`)
	var mounted int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, m := range re.FindAllSubmatch(b, -1) {
			mounted++
			if _, ok := got[string(m[1])]; !ok {
				t.Errorf("%s mounts Secret %s, which skillbus auth -o k8s does not make", f, m[1])
			}
		}
	}
	if mounted < 4 {
		t.Errorf("found %d Secrets mounted under %s; want one per service", mounted, comp)
	}
}

// TestSecurityDoc keeps docs/security.md's role tables equal to the table:
// go test ./internal/auth -run TestSecurityDoc -update rewrites them.
func TestSecurityDoc(t *testing.T) {
	const begin, end = "<!-- roles:begin -->\n", "<!-- roles:end -->"
	path := filepath.Join("..", "..", "docs", "security.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", path, strings.TrimSpace(begin), end)
	}
	want := Markdown()
	if got := doc[i+len(begin) : j]; got != want {
		if *update {
			os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644)
			return
		}
		t.Errorf("the roles section of %s differs from internal/auth's table; run go test ./internal/auth -run TestSecurityDoc -update", path)
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			st, _ := d.Info()
			m[p] = st.Mode().String() + string(b)
		}
		return nil
	})
	return m
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func startServer(t *testing.T, s *Setup) *natsserver.Server {
	t.Helper()
	return natsserver.StartTB(t, natsserver.Options{ConfigFile: s.AuthConfig()})
}

func connect(srv *natsserver.Server, creds string) (*nats.Conn, error) {
	opts, err := ConnectOptions(creds)
	if err != nil {
		return nil, err
	}
	return srv.Connect(append(opts, nats.MaxReconnects(0), nats.Timeout(3*time.Second))...)
}

func mustConnect(t *testing.T, srv *natsserver.Server, creds string) {
	t.Helper()
	nc, err := connect(srv, creds)
	if err != nil {
		t.Fatalf("connect with %s: %v", creds, err)
	}
	nc.Close()
}

// TestRotateReload checks what docs/security.md promises of a rotation: a
// running server that reloads the new auth.conf closes the connections of
// the old users and refuses them, and accepts the new creds.
func TestRotateReload(t *testing.T) {
	dir := t.TempDir()
	s := generate(t, Options{Dir: dir})
	conf := filepath.Join(dir, "test-server.conf")
	os.WriteFile(conf, []byte("port: -1\nhost: 127.0.0.1\njetstream { store_dir: \""+filepath.Join(t.TempDir(), "js")+"\" }\ninclude auth.conf\n"), 0o644)
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	copts, _ := ConnectOptions(s.CredsFile(RoleReader))
	closed := make(chan struct{})
	old, err := nats.Connect(srv.ClientURL(), append(copts, nats.MaxReconnects(0), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		t.Fatalf("old reader creds before the rotation: %v", err)
	}
	defer old.Close()
	oldCreds := filepath.Join(t.TempDir(), "reader.creds")
	b, _ := os.ReadFile(s.CredsFile(RoleReader))
	os.WriteFile(oldCreds, b, 0o600)

	generate(t, Options{Dir: dir, Rotate: true})
	if err := srv.Reload(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Errorf("the old reader's connection is still open 10 s after the reload")
	}
	oopts, _ := ConnectOptions(oldCreds)
	if nc, err := nats.Connect(srv.ClientURL(), append(oopts, nats.MaxReconnects(0))...); err == nil {
		nc.Close()
		t.Errorf("the server accepts the old reader creds after the reload")
	}
	nopts, _ := ConnectOptions(s.CredsFile(RoleReader))
	nc, err := nats.Connect(srv.ClientURL(), nopts...)
	if err != nil {
		t.Fatalf("new reader creds after the reload: %v", err)
	}
	nc.Close()
}

// TestK8sServerConfig lays out the NATS pods' files as
// deploy/k8s/components/nats-auth mounts them — the overlay's nats.conf
// and the component's nats-auth.conf under /etc/nats-config, auth.conf
// from the Secret under /etc/nats-auth — and has nats-server read them: the
// server trusts the generated operator and accounts, for both the cluster
// and the single-server configuration.
func TestK8sServerConfig(t *testing.T) {
	s := generate(t, Options{Dir: t.TempDir()})
	t.Setenv("SERVER_NAME", "nats-0")
	k8s := filepath.Join("..", "..", "deploy", "k8s")
	comp, err := os.ReadFile(filepath.Join(k8s, "components", "nats-auth", "nats-auth.conf"))
	if err != nil {
		t.Fatal(err)
	}
	authConf, _ := os.ReadFile(s.AuthConfig())
	for _, kind := range []string{"cluster", "single"} {
		base, err := os.ReadFile(filepath.Join(k8s, "nats", kind, "nats.conf"))
		if err != nil {
			t.Fatal(err)
		}
		etc := t.TempDir()
		os.MkdirAll(filepath.Join(etc, "nats-config"), 0o755)
		os.MkdirAll(filepath.Join(etc, "nats-auth"), 0o755)
		os.WriteFile(filepath.Join(etc, "nats-config", "nats.conf"), base, 0o644)
		os.WriteFile(filepath.Join(etc, "nats-config", "nats-auth.conf"), comp, 0o644)
		os.WriteFile(filepath.Join(etc, "nats-auth", "auth.conf"), authConf, 0o644)
		o, err := server.ProcessConfigFile(filepath.Join(etc, "nats-config", "nats-auth.conf"))
		if err != nil {
			t.Fatalf("%s: nats-server refuses nats-auth.conf with auth.conf: %v", kind, err)
		}
		if len(o.TrustedOperators) != 1 || o.SystemAccount != s.SystemKey || o.AccountResolver == nil || o.MaxControlLine != MaxControlLine || !o.JetStream {
			t.Errorf("%s: operators %d, system account %q, resolver %v, max_control_line %d, JetStream %v; want the generated setup on a JetStream server",
				kind, len(o.TrustedOperators), o.SystemAccount, o.AccountResolver, o.MaxControlLine, o.JetStream)
		}
	}
}

// TestNoConsumersOnOthersStreams: no role may create, delete or pull from
// a consumer on a stream whose owner (events.OwnerOf) it is not — a
// consumer's deliver_subject is in the request body, which permissions
// cannot filter (docs/security.md, "Consumers") — with every option on.
func TestNoConsumersOnOthersStreams(t *testing.T) {
	roles, err := Table(TableOptions{ToolPrefixes: []string{"web", "a.b"}, ConsoleCallsTools: true})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{RoleRegistry: events.OwnerRegistry, RoleSeqworker: events.OwnerSeqworker, RoleSkillface: events.OwnerSkillface}
	ops := []string{"CONSUMER.CREATE.%s", "CONSUMER.CREATE.%s.x", "CONSUMER.CREATE.%s.x.tool.cmd.run", "CONSUMER.CREATE.%s.x.>",
		"CONSUMER.DURABLE.CREATE.%s.x", "CONSUMER.DELETE.%s.x", "CONSUMER.MSG.NEXT.%s.x"}
	owned := 0
	for _, r := range roles {
		for _, s := range Streams {
			for _, op := range ops {
				subj := "$JS.API." + fmt.Sprintf(op, s)
				g, ok := grantFor(r.Pub, subj)
				if !ok || denied(r.DenyPub, subj) {
					continue
				}
				if owner[r.Name] == "" || events.OwnerOf(s) != owner[r.Name] {
					t.Errorf("role %s may publish %s (grant %s: %s); only %s, the owner of %s, may", r.Name, subj, g.Subject, g.Why, events.OwnerOf(s), s)
				} else {
					owned++
				}
			}
		}
	}
	if owned == 0 {
		t.Error("no owner may create consumers on its streams; the check matches nothing")
	}
}

// grantFor returns the first grant whose subject pattern matches subj.
func grantFor(gs []Grant, subj string) (Grant, bool) {
	for _, g := range gs {
		if patternMatches(g.Subject, subj) {
			return g, true
		}
	}
	return Grant{}, false
}

// denied reports whether a deny grant matches subj.
func denied(gs []Grant, subj string) bool {
	_, ok := grantFor(gs, subj)
	return ok
}

// patternMatches reports whether the NATS pattern (* one token, > the
// rest) matches the literal subject.
func patternMatches(pattern, subject string) bool {
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, tok := range p {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s):
			return false
		case tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(p) == len(s)
}

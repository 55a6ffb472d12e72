package auth

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"gopkg.in/yaml.v3"
)

// TestGenerateEdge checks what --edge makes: a role per site that may
// connect only as a leaf node and answer only tool.SITE.>, the site's
// leafnodes.conf and leaf.conf (which nats-server reads, dialling the
// leaf URL with the site's creds), a context for the site's own clients,
// a hub configuration listening for leaf nodes, an account that admits
// leaf connections, and the Kubernetes Secret with leafnodes.conf. A
// dropped site is revoked and its files go.
func TestGenerateEdge(t *testing.T) {
	dir := t.TempDir()
	s := generate(t, Options{Dir: dir, EdgeSites: []string{"home", "branch.paris"}, LeafURL: "nats-leaf://hub.example.com:7422"})
	if got := s.EdgeSites(); !slices.Equal(got, []string{"home", "branch.paris"}) {
		t.Fatalf("EdgeSites() = %v; want home, branch.paris", got)
	}
	r, ok := s.Role("edge-branch-paris")
	if !ok || r.Site != "branch.paris" {
		t.Fatalf("role edge-branch-paris = %+v, %v; want the leaf role of branch.paris", r, ok)
	}
	if !slices.ContainsFunc(r.Sub, func(g Grant) bool { return g.Subject == "tool.branch.paris.>" }) {
		t.Errorf("edge-branch-paris subscribes to %v; want tool.branch.paris.>", r.Sub)
	}
	for _, g := range slices.Concat(r.Pub, r.Sub) {
		for _, bad := range []string{"tool.>", "skillbus.", "$JS.", "$KV.", "events.", "seq."} {
			if strings.HasPrefix(g.Subject, bad) {
				t.Errorf("edge-branch-paris has the grant %s (%s); a site serves its tools only", g.Subject, g.Why)
			}
		}
	}
	b, _ := os.ReadFile(s.CredsFile("edge-home"))
	tok, _ := jwt.ParseDecoratedJWT(b)
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		t.Fatal(err)
	}
	if ct := uc.AllowedConnectionTypes; !ct.Contains(jwt.ConnectionTypeLeafnode) || ct.Contains(jwt.ConnectionTypeStandard) {
		t.Errorf("edge-home may connect as %v; want leaf node connections only", ct)
	}
	if uc.Permissions.Resp == nil || uc.Permissions.Resp.MaxMsgs != -1 {
		t.Errorf("edge-home response permission %+v; want every service of the site to answer (max -1)", uc.Permissions.Resp)
	}
	ac, _ := jwt.DecodeAccountClaims(s.AccountJWT)
	if ac.Limits.LeafNodeConn != jwt.NoLimit {
		t.Errorf("account leaf node connections = %d; want unlimited with edge sites", ac.Limits.LeafNodeConn)
	}
	hub, err := server.ProcessConfigFile(s.ServerConfig())
	if err != nil || hub.LeafNode.Port != DefaultLeafPort {
		t.Errorf("hub configuration: %v, leaf node port %d; want %d", err, hub.LeafNode.Port, DefaultLeafPort)
	}
	leaf, err := server.ProcessConfigFile(s.LeafConfig("branch.paris"))
	if err != nil {
		t.Fatalf("nats-server refuses %s: %v", s.LeafConfig("branch.paris"), err)
	}
	if leaf.ServerName != "skillbus-edge-branch-paris" || leaf.Host != "127.0.0.1" || leaf.JetStream || len(leaf.LeafNode.Remotes) != 1 {
		t.Fatalf("leaf.conf: server %q on %s, JetStream %v, %d remotes; want skillbus-edge-branch-paris on loopback, no JetStream, one remote", leaf.ServerName, leaf.Host, leaf.JetStream, len(leaf.LeafNode.Remotes))
	}
	rem := leaf.LeafNode.Remotes[0]
	if rem.Credentials != s.CredsFile("edge-branch-paris") || len(rem.URLs) != 1 || rem.URLs[0].String() != "nats-leaf://hub.example.com:7422" {
		t.Errorf("leaf.conf remote: creds %s, urls %v; want %s and the leaf URL", rem.Credentials, rem.URLs, s.CredsFile("edge-branch-paris"))
	}
	ctx, _ := os.ReadFile(s.ContextFile("edge-home"))
	if !strings.Contains(string(ctx), `"inbox_prefix": "_INBOX.edge-home"`) || !strings.Contains(string(ctx), EdgeLocalURL) || strings.Contains(string(ctx), "creds") {
		t.Errorf("contexts/edge-home.json = %s; want the site's leaf server, the site's inbox prefix and no creds", ctx)
	}
	out, err := s.K8sSecrets("")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var d struct {
			Metadata struct{ Name string }
			Data     map[string]string `yaml:"stringData"`
		}
		if yaml.Unmarshal([]byte(doc), &d) != nil || d.Metadata.Name != SecretName("edge-home") {
			continue
		}
		found = true
		if !strings.Contains(d.Data[LeafNodesConfFile], EdgeMountDir+"/nats.creds") || d.Data["nats.creds"] == "" {
			t.Errorf("Secret %s = %v; want nats.creds and a leafnodes.conf reading it from %s", SecretName("edge-home"), d.Data, EdgeMountDir)
		}
	}
	if !found {
		t.Errorf("-o k8s has no Secret %s", SecretName("edge-home"))
	}
	if again := generate(t, Options{Dir: dir}); len(again.Changed) != 0 || len(again.EdgeSites()) != 2 {
		t.Errorf("re-run: changed %v, sites %v; want nothing changed and both sites kept", again.Changed, again.EdgeSites())
	}
	d := generate(t, Options{Dir: dir, DropEdgeSites: []string{"home"}})
	if _, ok := d.Role("edge-home"); ok || len(d.Revoked) != 1 {
		t.Errorf("after dropping home: role kept %v, revoked %v; want it gone and revoked", ok, d.Revoked)
	}
	if _, err := os.Stat(filepath.Join(dir, edgeDir, "home")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("edge/home still exists after --drop-edge home (%v)", err)
	}
}

// TestGenerateEdgeBadInput checks the refusals of --edge and --leaf-url.
func TestGenerateEdgeBadInput(t *testing.T) {
	for _, site := range []string{"", "a..b", "fs", "cmd.x", "we b", "x>"} {
		if _, err := Generate(Options{Dir: t.TempDir(), EdgeSites: []string{site}}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--edge") {
			t.Errorf("Generate(edge site %q) = %v; want ErrConfig naming --edge", site, err)
		}
	}
	if _, err := Generate(Options{Dir: t.TempDir(), EdgeSites: []string{"web"}, ToolPrefixes: []string{"web"}}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "tool.web.>") {
		t.Errorf("Generate(edge web, tool prefix web) = %v; want ErrConfig: both would answer tool.web.>", err)
	}
	for _, u := range []string{"hub:7422", "http://hub:7422", "nats-leaf://"} {
		if _, err := Generate(Options{Dir: t.TempDir(), EdgeSites: []string{"home"}, LeafURL: u}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--leaf-url") {
			t.Errorf("Generate(leaf URL %q) = %v; want ErrConfig naming --leaf-url", u, err)
		}
	}
	if got := leafURLs("nats://a.example.com:4222, tls://b:4222"); got != "nats-leaf://a.example.com:7422,nats-leaf://b:7422" {
		t.Errorf("leafURLs = %q; want one nats-leaf URL on port 7422 per host", got)
	}
}

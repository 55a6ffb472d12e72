package integration

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// linkProxy stands for an edge site's network link to the hub: a TCP
// proxy the site's leaf server dials. cut closes every connection through
// it and refuses new ones until restore.
type linkProxy struct {
	ln     net.Listener
	target atomic.Value // string: the hub's leaf node address

	mu    sync.Mutex // mu guards down and conns
	down  bool
	conns []net.Conn
	wg    sync.WaitGroup
}

func newLinkProxy(t testing.TB) *linkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &linkProxy{ln: ln}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

// url is the leaf node URL of the hub through the link.
func (p *linkProxy) url() string { return "nats-leaf://" + p.ln.Addr().String() }

func (p *linkProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target, _ := p.target.Load().(string)
		if p.down || target == "" {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.wg.Add(2)
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// cut drops the link: every connection through it is closed and new ones
// are refused.
func (p *linkProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restore lets the leaf server connect again (it retries every second).
func (p *linkProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// edgeEnv is a locked-down hub (the dev stack with the users of a
// generated setup, accepting leaf nodes) and the leaf server of the edge
// site "site1", started from the generated edge/site1/leaf.conf and
// dialling the hub through link.
type edgeEnv struct {
	*authEnv
	link *linkProxy
	leaf *natsserver.Server
}

// edgeStart generates a setup with the edge sites site1 and site2, starts
// the hub and site1's leaf server, and waits until the leaf is connected.
func edgeStart(t *testing.T) *edgeEnv {
	t.Helper()
	link := newLinkProxy(t)
	setup, err := auth.Generate(auth.Options{Dir: filepath.Join(t.TempDir(), "auth"), EdgeSites: []string{"site1", "site2"}, LeafURL: link.url()})
	if err != nil {
		t.Fatalf("auth.Generate: %v", err)
	}
	log := &authLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := cliProject(t)
	s, err := devstack.Start(ctx, devstack.Config{DataDir: t.TempDir(), Tools: builtin.Config{Root: root}, Auth: setup, ServerLogger: log,
		LeafNodes: natsserver.LeafNodeOptions{Listen: true}})
	if err != nil {
		t.Fatalf("devstack.Start with auth and leaf nodes: %v (server errors: %q)", err, log.errors)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stack Stop: %v", err)
		}
	})
	t.Setenv(cli.EnvNATSURL, s.URL())
	link.target.Store(strings.TrimPrefix(s.LeafURL(), "nats-leaf://"))
	leaf, err := natsserver.Start(natsserver.Options{ConfigFile: setup.LeafConfig("site1"), NoJetStream: true, Logger: &authLog{}})
	if err != nil {
		t.Fatalf("the site's leaf server from %s: %v", setup.LeafConfig("site1"), err)
	}
	t.Cleanup(leaf.Shutdown)
	e := &edgeEnv{authEnv: &authEnv{setup: setup, stack: s, log: log, root: root}, link: link, leaf: leaf}
	e.waitLinked(t)
	return e
}

// waitLinked waits until the hub has the site's leaf connection.
func (e *edgeEnv) waitLinked(t *testing.T) {
	t.Helper()
	cliEventually(t, "the leaf server connected to the hub", func() bool { return e.stack.LeafNodes() == 1 && e.leaf.LeafNodes() == 1 })
}

// siteConn connects to the site's leaf server as its local clients do:
// no credentials, the site's inbox prefix (contexts/edge-site1.json).
func (e *edgeEnv) siteConn(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := e.leaf.Connect(nats.Name("site1 client"), nats.CustomInboxPrefix(auth.Role{Name: auth.EdgeRole("site1")}.InboxPrefix()),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// serveAtSite runs `skillbus tools serve --prefix site1 --site site1` at
// the site: on the site's leaf server, with the site's generated context
// (its inbox prefix); NATS_URL points at the hub again once it serves.
func (e *edgeEnv) serveAtSite(t *testing.T, extra ...string) {
	t.Helper()
	t.Setenv(cli.EnvNATSURL, e.leaf.ClientURL())
	args := append([]string{"tools", "serve", "--prefix", "site1", "--site", "site1", "--root", e.root,
		"--context", e.setup.ContextFile(auth.EdgeRole("site1"))}, extra...)
	sout, serr, _ := cliBackground(t, args...)
	cliEventually(t, "tools serve at the site", func() bool {
		if strings.Contains(serr.String(), "level=ERROR") || strings.Contains(serr.String(), "skillbus tools serve: ") {
			t.Fatalf("tools serve at the site: %s", serr.String())
		}
		return strings.Contains(sout.String(), "serving")
	})
	t.Setenv(cli.EnvNATSURL, e.stack.URL())
}

// writeSeq writes a sequence file and returns its path.
func writeSeq(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name+".seq.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runState is what `skillbus run -o json` prints of a run.
type runState struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

func runJSON(t *testing.T, out string) runState {
	t.Helper()
	var st runState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("skillbus run -o json printed %q: %v", out, err)
	}
	return st
}

// TestEdgeToolCall runs a sequence on the hub that calls a tool served at
// the edge site by `skillbus tools serve --prefix site1`, connected to the
// site's leaf server with the generated context; `skillbus tools` on the
// hub shows the tool at the site.
func TestEdgeToolCall(t *testing.T) {
	e := edgeStart(t)
	mark := e.log.mark()
	e.serveAtSite(t)
	e.as(t, auth.RoleReader)
	cliEventually(t, "site1.fs.read listed on the hub", func() bool {
		_, out, _ := cliRun(t, "tools", "-o", "json")
		return strings.Contains(out, `"site1.fs.read"`)
	})
	code, out, errOut := cliRun(t, "tools", "-o", "json")
	var list []cli.ToolInfo
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("tools -o json = %d (%v): %s %s", code, err, out, errOut)
	}
	for _, ti := range list {
		switch {
		case strings.HasPrefix(ti.Tool, "site1."):
			if ti.Site != "site1" || ti.Server != "skillbus-edge-site1" {
				t.Errorf("tool %s: site %q, server %q; want site1 at skillbus-edge-site1", ti.Tool, ti.Site, ti.Server)
			}
		case strings.HasPrefix(ti.Tool, "fs."):
			if ti.Site != "" || ti.Server != "skillbus-dev" {
				t.Errorf("hub tool %s: site %q, server %q; want the hub's server skillbus-dev and no site", ti.Tool, ti.Site, ti.Server)
			}
		}
	}
	_, table, _ := cliRun(t, "tools")
	if !strings.Contains(table, "SITE") || !strings.Contains(table, "site1") {
		t.Errorf("skillbus tools:\n%s\nwant a SITE column showing site1", table)
	}

	seq := writeSeq(t, "edge-read", `name: edge-read
groups:
  - name: read-at-the-edge
    out: {readme: object}
    timeout: 20s
    tools:
      - tool: site1.fs.read
        args: {path: README.md}
        as: readme
`)
	e.as(t, auth.RoleRunner)
	code, out, errOut = cliRun(t, "run", seq, "-o", "json")
	if code != 0 || !strings.Contains(out, "Widgets for everyone") {
		t.Fatalf("run of site1.fs.read from the hub = %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if v := e.log.violations(mark); len(v) > 0 {
		t.Errorf("the hub logged %d permission violations for a call across the leaf link:\n%s", len(v), strings.Join(v, "\n"))
	}
}

var _ = errors.New
var _ = tool.Serve

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
	// Each listing is a discovery of its own, collected for a window: under
	// load the edge's answer, across the leaf link, can miss one window.
	var table string
	cliEventually(t, "a SITE column showing site1 in skillbus tools", func() bool {
		_, table, _ = cliRun(t, "tools")
		return strings.Contains(table, "SITE") && strings.Contains(table, "site1")
	})

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

// spy subscribes to subject on the hub as role and counts what arrives.
func (e *edgeEnv) spy(t *testing.T, role, subject string) *atomic.Int32 {
	t.Helper()
	nc, errs := e.conn(t, role)
	var n atomic.Int32
	if _, err := nc.Subscribe(subject, func(*nats.Msg) { n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil || errs.has("Violation", 200*time.Millisecond) {
		t.Fatalf("%s may not watch %s: %v %v", role, subject, err, errs.errs)
	}
	return &n
}

// TestEdgeDenials checks, on the hub locked down with the generated setup
// and the leaf server of site1 connected with the generated creds and
// leafnodes.conf, that the site's clients reach nothing but their own
// tools' calls: no run started, no read of RUNS or skills, no answer to
// another site's or the hub's tools, no events, prompts or other roles'
// replies — while the control on the same connection (discovery) works.
func TestEdgeDenials(t *testing.T) {
	e := edgeStart(t)
	if _, err := natsConnectCreds(e.stack.URL(), e.setup.CredsFile(auth.EdgeRole("site1"))); err == nil {
		t.Errorf("the hub accepts edge-site1's creds from a client; want them refused (leaf node connections only)")
	}
	site := e.siteConn(t)

	t.Run("no run starts from the site", func(t *testing.T) {
		seen := e.spy(t, auth.RoleSeqworker, "skillbus.seq.>")
		req := `{"v":1,"run_id":"from-the-edge","sequence":"anything"}`
		if _, err := site.Request("skillbus.seq.run", []byte(req), 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("site: request skillbus.seq.run = %v; want no responders (the hub never tells the site of its endpoints)", err)
		}
		for _, subj := range []string{"seq.run.anything", "events.agent_ready.robot", "skillbus.seq.call"} {
			if err := site.Publish(subj, []byte(req)); err != nil {
				t.Fatal(err)
			}
		}
		site.Flush()
		time.Sleep(300 * time.Millisecond) // a window for messages that must not cross: their absence is the behaviour
		if n := seen.Load(); n != 0 {
			t.Errorf("%d messages from the site reached skillbus.seq.> on the hub", n)
		}
	})
	t.Run("no RUNS, skills, sequences or prompts", func(t *testing.T) {
		for _, subj := range []string{"$JS.API.DIRECT.GET.KV_RUNS.$KV.RUNS.from-the-edge", "$JS.API.STREAM.INFO.KV_RUNS", "$JS.API.CONSUMER.CREATE.KV_RUNS.x",
			"skillbus.registry.skill.list", "skillbus.registry.seq.get", "skillbus.seq.status", "skillbus.skillface.assemble", "$JS.API.INFO"} {
			if _, err := site.Request(subj, []byte(`{}`), 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
				t.Errorf("site: request %s = %v; want no responders", subj, err)
			}
		}
		site.Publish("$KV.RUNS.from-the-edge", []byte(`{"status":"succeeded"}`))
		site.Flush()
		time.Sleep(300 * time.Millisecond) // a window for a write that must not land: its absence is the behaviour
		if rev := e.kvRevision(t, "RUNS", "from-the-edge"); rev != 0 {
			t.Errorf("a write to $KV.RUNS from the site is in RUNS (revision %d)", rev)
		}
	})
	t.Run("nothing but its own tools' calls reaches the site", func(t *testing.T) {
		var got, answered sync.Map
		count := func(m *nats.Msg) {
			n, _ := got.LoadOrStore(m.Subject, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			if m.Reply != "" {
				answered.Store(m.Reply, true) // the site's own replies, which its _INBOX.> sees locally
				m.Respond([]byte(`{"forged":true}`))
			}
		}
		for _, s := range []struct{ subj, queue string }{{"tool.site2.echo", "skillbus-tools"}, {"tool.fs.read", "skillbus-tools"}, {"tool.>", ""},
			{"events.>", ""}, {"skillbus.>", ""}, {"_INBOX.>", ""}, {"$KV.>", ""}, {"$JS.>", ""}, {"tool.site1.echo", "skillbus-tools"}} {
			if _, err := site.QueueSubscribe(s.subj, s.queue, count); err != nil {
				t.Fatal(err)
			}
		}
		site.Flush()
		time.Sleep(300 * time.Millisecond) // the leaf sends its interest to the hub: no client sees when it lands
		sw, _ := e.conn(t, auth.RoleSeqworker)
		if _, err := sw.Request("tool.site2.echo", []byte(`{}`), 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("hub: call tool.site2.echo = %v; want no responders (site1 may not answer site2's tools)", err)
		}
		for i := 0; i < 20; i++ {
			m, err := sw.Request("tool.fs.read", []byte(`{"path":"README.md"}`), 5*time.Second)
			if err != nil || !strings.Contains(string(m.Data), "Widgets") {
				t.Fatalf("hub: call tool.fs.read = %v, %.100s; want the hub's built-in tools' answer", err, msgData(m))
			}
		}
		if m, err := sw.Request("tool.site1.echo", []byte(`{}`), 5*time.Second); err != nil || string(m.Data) != `{"forged":true}` {
			t.Errorf("hub: call tool.site1.echo = %v, %s; want the site's answer (the control)", err, msgData(m))
		}
		// Traffic of the hub the site must not see: events, a prompt, a
		// run's state, replies to the agent.
		agent, _ := e.conn(t, auth.RoleAgent)
		agent.Request("skillbus.skillface.assemble", []byte(`{"session_id":"s","round":1,"messages":[{"role":"user","content":"hi"}]}`), 5*time.Second)
		sw.Publish("events.run.x.started", []byte(`{}`))
		e.as(t, auth.RoleRunner)
		if code, _, errOut := cliRun(t, "agent-ready", "robot"); code != 0 {
			t.Fatalf("runner: agent-ready = %d %s", code, errOut)
		}
		sw.Flush()
		time.Sleep(500 * time.Millisecond) // a window for traffic the site must not see: its absence is the behaviour
		got.Range(func(k, v any) bool {
			if _, own := answered.Load(k); k != "tool.site1.echo" && !own {
				t.Errorf("the site received %d messages on %s", v.(*atomic.Int32).Load(), k)
			}
			return true
		})
	})
	t.Run("replies go only where the table says", func(t *testing.T) {
		// docs/security.md: a reply crosses a leaf node connection only to
		// a subject its user may publish to, so the seqworker's, the
		// reader's and the console's inboxes are open to the site, and no
		// other: not the agent's (prompts), the runner's or a service's.
		for role, open := range map[string]bool{auth.RoleAgent: false, auth.RoleRunner: false, auth.RoleRegistry: false, auth.RoleSeqworker: true, auth.RoleReader: true} {
			n := e.spy(t, role, "_INBOX."+role+".forged") // not .>: the stack's own services get replies there
			got := false
			// An open inbox is published to again until the message arrives:
			// the spy's interest reaches the leaf server a moment after its
			// subscription, and a message sent before is dropped (up to 25
			// times, 5 s in all, before it counts as not reaching it).
			for try := 0; try < 25 && !got; try++ {
				site.Publish("_INBOX."+role+".forged", []byte(`{"forged":true}`))
				site.Flush()
				time.Sleep(200 * time.Millisecond) // a window: for a closed inbox the behaviour is that nothing arrives
				got = n.Load() > 0
				if !open {
					break
				}
			}
			if got != open {
				t.Errorf("a message from the site to _INBOX.%s reaches it: %v; want %v", role, got, open)
			}
		}
		// The control: discovery from the site reaches the hub's services.
		inbox := site.NewRespInbox()
		sub, _ := site.SubscribeSync(inbox)
		site.PublishRequest("$SRV.INFO", inbox, nil)
		if _, err := sub.NextMsg(3 * time.Second); err != nil {
			t.Errorf("site: $SRV.INFO got no answer from the hub (%v); want the hub's services", err)
		}
	})
}

// natsConnectCreds connects to url with a creds file and its inbox.
func natsConnectCreds(url, creds string) (*nats.Conn, error) {
	opts, err := auth.ConnectOptions(creds)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(url, append(opts, nats.MaxReconnects(0))...)
	if err == nil {
		nc.Close()
	}
	return nc, err
}

// siteTools serves, at site1 on the leaf server, site1.echo (answers at
// once), site1.cold (never called before the link is cut) and site1.gate
// (answers once release is closed), counting the calls of each.
type siteTools struct {
	calls   sync.Map // tool → *atomic.Int32
	entered chan struct{}

	mu      sync.Mutex // mu guards release
	release chan struct{}
}

// gate returns the channel whose closing releases site1.gate's calls.
func (st *siteTools) gate() chan struct{} {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.release
}

// hold makes later calls of site1.gate wait for a new release, and
// forgets the entries of earlier calls.
func (st *siteTools) hold() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.release = make(chan struct{})
	for len(st.entered) > 0 {
		<-st.entered
	}
}

func (st *siteTools) n(name string) int32 {
	v, _ := st.calls.LoadOrStore(name, new(atomic.Int32))
	return v.(*atomic.Int32).Load()
}

func (st *siteTools) add(name string) {
	v, _ := st.calls.LoadOrStore(name, new(atomic.Int32))
	v.(*atomic.Int32).Add(1)
}

func (e *edgeEnv) serveSiteTools(t *testing.T) *siteTools {
	t.Helper()
	st := &siteTools{release: make(chan struct{}), entered: make(chan struct{}, 16)}
	echo := func(name string) tool.Func {
		return func(ctx context.Context, args json.RawMessage) (any, error) {
			st.add(name)
			return map[string]string{"at": "site1"}, nil
		}
	}
	gate := func(ctx context.Context, args json.RawMessage) (any, error) {
		st.add("site1.gate")
		rel := st.gate()
		st.entered <- struct{}{}
		select {
		case <-rel:
			return map[string]string{"at": "site1"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	srv, err := tool.Serve(e.siteConn(t), tool.ServerConfig{Name: "site1-tools", Site: "site1"},
		tool.Tool{Name: "site1.echo", Func: echo("site1.echo")}, tool.Tool{Name: "site1.cold", Func: echo("site1.cold")}, tool.Tool{Name: "site1.gate", Func: gate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	return st
}

// runAsync starts `skillbus run FILE -o json` as the runner and returns
// a channel that gets its state when it ends.
func runAsync(t *testing.T, seq string) <-chan runState {
	t.Helper()
	ch := make(chan runState, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		var out, errb cliBuf
		cli.Main(ctx, []string{"run", seq, "-o", "json"}, strings.NewReader(""), &out, &errb)
		var st runState
		if err := json.Unmarshal([]byte(out.String()), &st); err != nil {
			st.Error = "no run state: " + errb.String()
		}
		ch <- st
	}()
	return ch
}

func waitRun(t *testing.T, what string, ch <-chan runState, within time.Duration) runState {
	t.Helper()
	select {
	case st := <-ch:
		return st
	case <-time.After(within):
		t.Fatalf("%s: the run did not end within %v", what, within)
	}
	return runState{}
}

func oneCall(name, tool, extra string) string {
	return "name: " + name + "\ngroups:\n  - name: " + name + "-g\n    timeout: 6s\n" + extra + "    tools:\n      - tool: " + tool + "\n"
}

// TestEdgeLinkDown cuts site1's link to the hub during and between runs:
// a call in flight when the link drops never hangs the run — once
// acknowledged, its keep-alives stop with the link, it is sent again after
// 3 s of silence and runs at the site again once the link is back (the run
// succeeds); cut before its acknowledgement, it is sent again when no
// acknowledgement comes for 3 s (the tool spoke keep-alives before) and
// the run succeeds too; a call to a tool that answered within the last minute
// waits out a short cut (the missing grace) and succeeds; a tool never
// seen is missing at once under the group's policy; and once the link is
// back every tool answers, with nothing restarted.
func TestEdgeLinkDown(t *testing.T) {
	e := edgeStart(t)
	st := e.serveSiteTools(t)
	e.as(t, auth.RoleRunner)
	if code, out, errOut := cliRun(t, "run", writeSeq(t, "warm", oneCall("warm", "site1.echo", "")), "-o", "json"); code != 0 {
		t.Fatalf("site1.echo across the link = %d %s %s", code, out, errOut)
	}

	// inflight cuts the link while a call of site1.gate runs at the site,
	// after wait (its acknowledgement goes out 100 ms after it arrived),
	// lets the call finish into the cut link, restores the link and
	// returns the run's end and the calls the site saw.
	inflight := func(t *testing.T, name string, wait time.Duration) (runState, time.Duration, int32) {
		st.hold()
		before := st.n("site1.gate")
		start := time.Now()
		done := runAsync(t, writeSeq(t, name, oneCall(name, "site1.gate", "")))
		<-st.entered
		time.Sleep(wait)
		e.link.cut()
		cliEventually(t, "the hub to see the site gone", func() bool { return e.stack.LeafNodes() == 0 })
		close(st.gate()) // the reply is lost with the link
		e.link.restore()
		e.waitLinked(t)
		r := waitRun(t, "in flight at the cut", done, 30*time.Second)
		return r, time.Since(start).Round(time.Millisecond), st.n("site1.gate") - before
	}
	t.Run("a call acknowledged, in flight when the link drops", func(t *testing.T) {
		r, took, calls := inflight(t, "acked", 500*time.Millisecond)
		// Its keep-alives stop with the link: after 3 s of silence the
		// call is sent again, reaches the site once the link is back, and
		// runs there again (its first reply was lost): an interruption.
		if r.Status != "succeeded" || calls < 2 {
			t.Errorf("an acknowledged call at a cut: run %s (%s), %d calls at the site; want succeeded, the call made again", r.Status, r.Error, calls)
		}
		t.Logf("an acknowledged call in flight at the cut: run %s after %v, %d calls at the site", r.Status, took, calls)
	})
	t.Run("a call not yet acknowledged when the link drops", func(t *testing.T) {
		r, took, calls := inflight(t, "unacked", 0)
		// Cut before its acknowledgement: site1.gate has acknowledged calls
		// before (the one above), so the caller, hearing nothing for 3 s,
		// sends it again (docs/tools.md, Keep-alives, step 4b); with the
		// link back it runs at the site again and the run goes on, before
		// the group's 6 s timeout. Never a hang.
		if r.Status != "succeeded" || calls < 2 || took >= 6*time.Second {
			t.Errorf("a call cut before its acknowledgement: run %s (%s) after %v, %d calls at the site; want succeeded before the 6 s timeout, the call made again", r.Status, r.Error, took, calls)
		}
		t.Logf("a call cut before its acknowledgement: run %s after %v, %d calls at the site: %s", r.Status, took, calls, r.Error)
	})
	t.Run("after the link returns, calls work", func(t *testing.T) {
		before := st.n("site1.echo")
		if r := runJSON(t, mustRun(t, writeSeq(t, "after", oneCall("after", "site1.echo", "")))); r.Status != "succeeded" || st.n("site1.echo") != before+1 {
			t.Errorf("after the link returned: run %s (%s), site1.echo called %d times; want succeeded, once", r.Status, r.Error, st.n("site1.echo")-before)
		}
	})
	t.Run("a short cut within the missing grace", func(t *testing.T) {
		before := st.n("site1.echo")
		e.link.cut()
		cliEventually(t, "the hub to see the site gone", func() bool { return e.stack.LeafNodes() == 0 })
		start := time.Now()
		done := runAsync(t, writeSeq(t, "grace", oneCall("grace", "site1.echo", "")))
		time.Sleep(time.Second) // the call meets "no responders" meanwhile
		e.link.restore()
		r := waitRun(t, "within the grace", done, 30*time.Second)
		if r.Status != "succeeded" || st.n("site1.echo") != before+1 {
			t.Errorf("a cut of 1 s: run %s (%s), site1.echo called %d times; want succeeded once the link is back", r.Status, r.Error, st.n("site1.echo")-before)
		}
		t.Logf("a call during a 1 s cut: run %s after %v", r.Status, time.Since(start).Round(time.Millisecond))
	})
	t.Run("a tool not seen lately is missing at once", func(t *testing.T) {
		e.link.cut()
		cliEventually(t, "the hub to see the site gone", func() bool { return e.stack.LeafNodes() == 0 })
		start := time.Now()
		r := runJSON(t, mustRunCode(t, 1, writeSeq(t, "cold", oneCall("cold", "site1.cold", ""))))
		if r.Status != "failed" || !strings.Contains(r.Error, "site1.cold") || time.Since(start) > 5*time.Second {
			t.Errorf("site1.cold with the link down: run %s after %v (%s); want failed at once (missing: fail), naming the tool", r.Status, time.Since(start), r.Error)
		}
		r = runJSON(t, mustRun(t, writeSeq(t, "cold-skip", oneCall("cold-skip", "site1.cold", "    missing: skip\n"))))
		if r.Status != "succeeded" {
			t.Errorf("site1.cold with the link down under missing: skip: run %s (%s); want succeeded, the call skipped", r.Status, r.Error)
		}
		e.link.restore()
		e.waitLinked(t)
		if r := runJSON(t, mustRun(t, writeSeq(t, "cold-back", oneCall("cold-back", "site1.cold", "")))); r.Status != "succeeded" || st.n("site1.cold") != 1 {
			t.Errorf("site1.cold with the link back: run %s (%s), %d calls; want succeeded, once", r.Status, r.Error, st.n("site1.cold"))
		}
	})
}

// mustRun runs a sequence file as the current creds and requires exit 0.
func mustRun(t *testing.T, seq string) string { t.Helper(); return mustRunCode(t, 0, seq) }

func mustRunCode(t *testing.T, want int, seq string) string {
	t.Helper()
	code, out, errOut := cliRun(t, "run", seq, "-o", "json")
	if code != want {
		t.Fatalf("skillbus run %s = %d; want %d\nstdout: %s\nstderr: %s", filepath.Base(seq), code, want, out, errOut)
	}
	return out
}

// TestEdgeLinkFlaps runs 40 runs of three parallel calls to site1 while
// its link flaps — cut for 300 ms every 2.5 s, then 0.7 s after each
// time the site is back (the leaf server redials every second, so the
// site is away about 1 s a cut): every run ends (none lost),
// and a run that fails does so by the group's policy — a call whose reply
// was lost ends at the group's timeout, a tool that stays unreachable past
// it counts as missing — never otherwise. It logs the counts and how long
// each cut kept the site away.
func TestEdgeLinkFlaps(t *testing.T) {
	e := edgeStart(t)
	st := e.serveSiteTools(t)
	e.as(t, auth.RoleRunner)
	mustRun(t, writeSeq(t, "warm", oneCall("warm", "site1.echo", "")))
	seq := writeSeq(t, "flap", `name: flap
groups:
  - name: flap-g
    timeout: 5s
    tools:
      - tool: site1.echo
      - tool: site1.echo
      - tool: site1.echo
`)
	for _, up := range []time.Duration{2200 * time.Millisecond, 700 * time.Millisecond} {
		t.Run("up "+up.String()+" between cuts", func(t *testing.T) {
			before := st.n("site1.echo")
			stopFlap := make(chan struct{})
			away := make(chan []time.Duration)
			go func() {
				var outages []time.Duration
				defer func() { away <- outages }()
				for {
					select {
					case <-stopFlap:
						e.link.restore()
						return
					case <-time.After(up):
					}
					start := time.Now()
					e.link.cut()
					time.Sleep(300 * time.Millisecond)
					e.link.restore()
					for e.stack.LeafNodes() != 1 && time.Since(start) < 5*time.Second {
						time.Sleep(5 * time.Millisecond)
					}
					outages = append(outages, time.Since(start).Round(10*time.Millisecond))
				}
			}()
			const runs = 40
			var results []<-chan runState
			for i := 0; i < runs; i++ {
				results = append(results, runAsync(t, seq))
				time.Sleep(250 * time.Millisecond)
			}
			var ok, lostReply, missing int
			for i, ch := range results {
				r := waitRun(t, "a run under a flapping link", ch, 60*time.Second)
				switch {
				case r.Status == "succeeded":
					ok++
				case r.Status == "failed" && strings.Contains(r.Error, "no reply before the deadline"):
					lostReply++
				case r.Status == "failed" && strings.Contains(r.Error, "no provider serves"):
					missing++
				default:
					t.Errorf("run %d ended %q: %s; want succeeded, or failed by the group's policy", i, r.Status, r.Error)
				}
			}
			close(stopFlap)
			outages := <-away
			t.Logf("%d runs under %d cuts of 300 ms (the site away %v): %d succeeded, %d failed at the group's 5 s timeout after a lost reply, %d failed as missing; site1.echo called %d times",
				runs, len(outages), outages, ok, lostReply, missing, st.n("site1.echo")-before)
			if len(outages) < 3 {
				t.Errorf("the link was cut %d times during the runs; want several", len(outages))
			}
			e.waitLinked(t)
			mustRun(t, seq) // and all is well afterwards
		})
	}
}

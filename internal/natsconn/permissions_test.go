package natsconn_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/skillbus/skillbus/internal/natsconn"
)

// permServer starts a server with a user "u" (password "p") that may
// publish to allowed.> and _INBOX.> (its echo replies) and subscribe to
// _INBOX.>, sub.ok and allowed.> only.
func permServer(t *testing.T) *server.Server {
	t.Helper()
	return startServer(t, 0, func(o *server.Options) {
		o.Users = []*server.User{{Username: "u", Password: "p", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"allowed.>", "_INBOX.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", "sub.ok", "allowed.>"}},
		}}}
	})
}

// collected gathers errors from a callback.
type collected struct {
	mu    sync.Mutex // mu guards errs and added
	errs  []*natsconn.PermissionError
	added chan struct{} // closed by the next add; nil until wait asks
}

func (c *collected) add(e *natsconn.PermissionError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, e)
	if c.added != nil {
		close(c.added)
		c.added = nil
	}
}

// wait waits until ok holds for the errors gathered, woken by each add.
func (c *collected) wait(t *testing.T, what string, ok func([]*natsconn.PermissionError) bool) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		c.mu.Lock()
		done := ok(c.errs)
		if c.added == nil {
			c.added = make(chan struct{})
		}
		next := c.added
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-next:
		case <-timeout.C:
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("%s: not within 10 s (got %v)", what, c.errs)
		}
	}
}

// TestPermissionWatch checks on a real server with user permissions: a
// request to a refused subject on a watched context fails at once with a
// *PermissionError naming the subject and the credentials (instead of at
// its 20 s timeout), a watch of another subject is left alone, violations
// nobody watched go to the unclaimed callback (a refused subscription with
// its queue among them), the previous error handler still sees every
// error, and Close puts it back.
func TestPermissionWatch(t *testing.T) {
	srv := permServer(t)
	var prevMu sync.Mutex
	var prevErrs []string
	afterClose := make(chan struct{}, 1) // the previous handler saw denied.after
	prevSaw := make(chan struct{}, 16)   // the previous handler saw an error
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("u", "p"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		prevMu.Lock()
		prevErrs = append(prevErrs, err.Error())
		prevMu.Unlock()
		select {
		case prevSaw <- struct{}{}:
		default:
		}
		if strings.Contains(err.Error(), "denied.after") {
			select {
			case afterClose <- struct{}{}:
			default:
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	responder, err := nc.Subscribe("allowed.echo", func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		t.Fatal(err)
	}
	defer responder.Unsubscribe()
	var un collected
	w := natsconn.WatchPermissions(nc, "user u (test), role tester", un.add)

	// A refused request fails at once.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wctx, done := w.Context(ctx, "denied.*")
	other, otherDone := w.Context(ctx, "allowed.>")
	start := time.Now()
	_, err = nc.RequestWithContext(wctx, "denied.thing", []byte("x"))
	took := time.Since(start)
	err = natsconn.RefusedCause(wctx, err)
	done()
	var pe *natsconn.PermissionError
	if !errors.As(err, &pe) || !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("request to denied.thing = %v; want a *PermissionError wrapping nats.ErrPermissionViolation", err)
	}
	if took > 10*time.Second {
		t.Errorf("the refused request took %v; want it to fail at once, not at its timeout", took)
	}
	if !pe.Publish || pe.Subject != "denied.thing" || !strings.Contains(pe.Error(), `publish to "denied.thing"`) || !strings.Contains(pe.Error(), "role tester") {
		t.Errorf("refusal = %+v, %q; want the publish to denied.thing and the credentials named", pe.Violation, pe.Error())
	}
	if other.Err() != nil {
		t.Errorf("the watch of allowed.> was cancelled by a refusal of denied.thing: %v", context.Cause(other))
	}
	if m, err := nc.RequestWithContext(other, "allowed.echo", []byte("hi")); err != nil || string(m.Data) != "hi" {
		t.Errorf("an allowed request on a watched context = %v; want its echo", err)
	}
	otherDone()
	if natsconn.RefusedCause(ctx, context.DeadlineExceeded) != context.DeadlineExceeded {
		t.Errorf("RefusedCause of a context that no refusal cancelled changed the error")
	}

	// Nobody watches these: they go to the unclaimed callback.
	if err := nc.Publish("denied.background", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.QueueSubscribe("sub.denied", "workers", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	un.wait(t, "the unclaimed publish and subscription", func(es []*natsconn.PermissionError) bool {
		var pub, sub bool
		for _, e := range es {
			pub = pub || (e.Publish && e.Subject == "denied.background")
			sub = sub || (!e.Publish && e.Subject == "sub.denied" && e.Queue == "workers" && e.Op() == "subscribe")
		}
		return pub && sub
	})
	for _, e := range un.errs {
		if e.Subject == "denied.thing" {
			t.Errorf("the claimed refusal of denied.thing also went to the unclaimed callback")
		}
	}
	// The watch calls the previous handler after its own callbacks, so
	// the last violation may reach it a moment after the unclaimed one.
	timeout := time.After(10 * time.Second)
	seen := func() int {
		prevMu.Lock()
		defer prevMu.Unlock()
		return len(prevErrs)
	}
	n := seen()
	for waiting := true; n < 3 && waiting; n = seen() {
		select {
		case <-prevSaw:
		case <-timeout:
			waiting = false
		}
	}
	if n < 3 {
		t.Errorf("the previous error handler saw %d errors in 10 s; want every one of the 3 violations", n)
	}

	// Close: the previous handler alone again.
	w.Close()
	w.Close()
	before := len(un.errs)
	_ = nc.Publish("denied.after", nil)
	_ = nc.Flush()
	select {
	case <-afterClose:
	case <-time.After(10 * time.Second):
		t.Errorf("after Close the previous handler did not get the violation")
	}
	time.Sleep(100 * time.Millisecond) // a window for a report the closed watch must not make
	un.mu.Lock()
	if len(un.errs) != before {
		t.Errorf("after Close the watch still reports violations")
	}
	un.mu.Unlock()
}

// TestParseViolation reads publish and subscription violations, and
// nothing else.
func TestParseViolation(t *testing.T) {
	pv := errors.Join(nats.ErrPermissionViolation, errors.New(`Permissions Violation for Publish to "tool.fs.list"`))
	if v, ok := natsconn.ParseViolation(pv); !ok || !v.Publish || v.Subject != "tool.fs.list" {
		t.Errorf("publish violation = %+v, %v", v, ok)
	}
	sv := errors.Join(nats.ErrPermissionViolation, errors.New(`Permissions Violation for Subscription to "tool.fs.read" using queue "skillbus-tools"`))
	if v, ok := natsconn.ParseViolation(sv); !ok || v.Publish || v.Subject != "tool.fs.read" || v.Queue != "skillbus-tools" {
		t.Errorf("subscription violation = %+v, %v", v, ok)
	}
	for _, err := range []error{nil, errors.New(`Permissions Violation for Publish to "x"`), nats.ErrTimeout, errors.Join(nats.ErrPermissionViolation, errors.New("odd"))} {
		if v, ok := natsconn.ParseViolation(err); ok {
			t.Errorf("ParseViolation(%v) = %+v; want no violation", err, v)
		}
	}
}

// TestMatchSubject checks the wildcards, literal wildcard characters in a
// subject, and the JetStream API patterns of a stream.
func TestMatchSubject(t *testing.T) {
	for _, c := range []struct {
		pattern, subject string
		want             bool
	}{
		{"a.b", "a.b", true},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{"tool.>", "tool.fs.list", true},
		{"$JS.API.CONSUMER.CREATE.KV_RUNS.*.$KV.RUNS.>", "$JS.API.CONSUMER.CREATE.KV_RUNS.abc_1.$KV.RUNS.>", true},
		{"$JS.API.CONSUMER.CREATE.KV_RUNS.*.$KV.RUNS.>", "$JS.API.CONSUMER.CREATE.KV_RUNS.abc_1", false},
		{"$JS.API.CONSUMER.CREATE.KV_RUNS.*.$KV.RUNS.>", "$JS.API.CONSUMER.CREATE.KV_RUNS.abc_1.$KV.SKILLS.>", false},
	} {
		if got := natsconn.MatchSubject(c.pattern, c.subject); got != c.want {
			t.Errorf("MatchSubject(%q, %q) = %v; want %v", c.pattern, c.subject, got, c.want)
		}
	}
	api := natsconn.JetStreamAPI("KV_RUNS")
	match := func(s string) bool {
		for _, p := range api {
			if natsconn.MatchSubject(p, s) {
				return true
			}
		}
		return false
	}
	for _, s := range []string{"$JS.API.STREAM.INFO.KV_RUNS", "$JS.API.DIRECT.GET.KV_RUNS", "$JS.API.DIRECT.GET.KV_RUNS.$KV.RUNS.x",
		"$JS.API.CONSUMER.CREATE.KV_RUNS.c_1.$KV.RUNS.>", "$JS.API.CONSUMER.MSG.NEXT.KV_RUNS.c_1", "$JS.API.CONSUMER.INFO.KV_RUNS.c_1",
		"$JS.API.CONSUMER.DELETE.KV_RUNS.c_1", "$JS.API.STREAM.MSG.GET.KV_RUNS"} {
		if !match(s) {
			t.Errorf("JetStreamAPI(KV_RUNS) does not cover %s", s)
		}
	}
	for _, s := range []string{"$JS.API.STREAM.INFO.KV_SKILLS", "$JS.API.CONSUMER.CREATE.EVENTS.c_1.events.>", "$JS.API.INFO", "tool.KV_RUNS.x"} {
		if match(s) {
			t.Errorf("JetStreamAPI(KV_RUNS) covers %s", s)
		}
	}
}

// TestPermissionsOf reads a user JWT's lists and decides as the server
// does: deny first, an empty allow list allows everything.
func TestPermissionsOf(t *testing.T) {
	acc, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Tags.Add(natsconn.RoleTag + "console")
	uc.Permissions.Pub.Allow.Add("skillbus.seq.run", "$SRV.INFO", "$JS.API.CONSUMER.CREATE.EVENTS.*")
	uc.Permissions.Pub.Deny.Add("$JS.API.CONSUMER.CREATE.EVENTS.seqworker-boot")
	uc.Permissions.Sub.Allow.Add("_INBOX.console.>")
	tok, _ := uc.Encode(acc)
	seed, _ := user.Seed()
	b, _ := jwt.FormatUserConfig(tok, seed)
	p := filepath.Join(t.TempDir(), "c.creds")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	perms, err := natsconn.PermissionsOf(p)
	if err != nil {
		t.Fatal(err)
	}
	if perms.Role != "console" {
		t.Errorf("role = %q; want console", perms.Role)
	}
	for s, want := range map[string]bool{"skillbus.seq.run": true, "tool.fs.list": false, "$JS.API.CONSUMER.CREATE.EVENTS.mine": true, "$JS.API.CONSUMER.CREATE.EVENTS.seqworker-boot": false} {
		if got := perms.MayPublish(s); got != want {
			t.Errorf("MayPublish(%s) = %v; want %v", s, got, want)
		}
	}
	if !perms.MaySubscribe("_INBOX.console.x") || perms.MaySubscribe("events.run.x") {
		t.Errorf("MaySubscribe: want only the inbox")
	}
	open := &natsconn.Permissions{}
	if !open.MayPublish("tool.fs.list") {
		t.Errorf("empty lists: want everything allowed")
	}
	if _, err := natsconn.PermissionsOf(filepath.Join(t.TempDir(), "missing.creds")); err == nil {
		t.Errorf("PermissionsOf(a missing file) = nil error")
	}
}

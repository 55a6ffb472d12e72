package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// The lease (lease.go; docs/skills.md, "One writer"), with two registries
// in this process on one embedded nats-server, each on its own
// connection — as two pods are on one bus.

// syncBuf is a log destination two goroutines may write.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// replica is one registry under test.
type replica struct {
	*Registry
	nc  *nats.Conn
	log *syncBuf
}

// leaseEnv is a server and a client that watches registry events.
type leaseEnv struct {
	srv    *natsserver.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	mu     sync.Mutex
	events []events.RegistryEvent
}

func newLeaseEnv(t *testing.T) *leaseEnv {
	t.Helper()
	e := &leaseEnv{srv: natsserver.StartTB(t, natsserver.Options{})}
	e.nc = natsserver.ConnectTB(t, e.srv)
	if _, err := e.nc.Subscribe(events.SubjectRegistryEventsAll, func(m *nats.Msg) {
		var ev events.RegistryEvent
		if events.Decode(m.Data, &ev) == nil {
			e.mu.Lock()
			e.events = append(e.events, ev)
			e.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	e.js, _ = jetstream.New(e.nc)
	return e
}

// ops returns the registry events of op seen so far.
func (e *leaseEnv) ops(op string) []events.RegistryEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []events.RegistryEvent
	for _, ev := range e.events {
		if ev.Op == op {
			out = append(out, ev)
		}
	}
	return out
}

// start starts a registry on dir; it is stopped at cleanup (a replica
// whose connection the test closed is stopped without checking the
// error).
func (e *leaseEnv) start(t *testing.T, dir string, mod func(*Config)) *replica {
	t.Helper()
	nc := natsserver.ConnectTB(t, e.srv)
	buf := &syncBuf{}
	cfg := Config{Dir: dir, Debounce: 50 * time.Millisecond, MaxDelay: 500 * time.Millisecond, TreeDiffGrace: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	rep := &replica{Registry: r, nc: nc, log: buf}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err := r.Stop(ctx)
		if err != nil && !nc.IsClosed() {
			t.Errorf("Stop: %v", err)
		}
		if t.Failed() {
			t.Logf("log of the registry on %s:\n%s", dir, buf)
		}
	})
	return rep
}

func (e *leaseEnv) kv(t *testing.T, bucket string) jetstream.KeyValue {
	t.Helper()
	kv, err := e.js.KeyValue(context.Background(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// lastSeq is the last sequence of the stream of bucket: it moves with
// every write, so a registry that flaps moves it for ever.
func (e *leaseEnv) lastSeq(t *testing.T, bucket string) uint64 {
	t.Helper()
	s, err := e.js.Stream(context.Background(), "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// keys lists bucket's keys, sorted, "" for none.
func keysOf(t *testing.T, kv jetstream.KeyValue) string {
	t.Helper()
	ks, err := kv.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range ks.Keys() {
		out = append(out, k)
	}
	return strings.Join(sortedKeys(setOf(out)), ",")
}

func setOf(ss []string) map[string]bool {
	m := map[string]bool{}
	for _, s := range ss {
		m[s] = true
	}
	return m
}

func value(kv jetstream.KeyValue, key string) string {
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		return err.Error()
	}
	return string(e.Value())
}

// eventually polls cond for up to a minute (a loaded machine) and returns
// how long it took.
func eventually(t *testing.T, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < time.Minute {
		ok, s := cond()
		if ok {
			return time.Since(start)
		}
		last = s
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not within a minute; last: %s", what, last)
	return 0
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skillMD(name, description string) string {
	return fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n\nbody\n", name, description)
}

func seqYAML(name, group string) string {
	return fmt.Sprintf("name: %s\ndescription: test sequence %s\ngroups:\n  - name: %s\n    tools:\n      - tool: echo\n", name, name, group)
}

func seqJSON(name, group string) string {
	return fmt.Sprintf(`{"name":%q,"description":"made over NATS","groups":[{"name":%q,"tools":"{\"tool\":\"echo\",\"args\":{\"x\":1}};"}]}`, name, group)
}

// leaders counts the replicas that hold the lease.
func leaders(rs ...*replica) int {
	n := 0
	for _, r := range rs {
		if r.leading.Load() {
			n++
		}
	}
	return n
}

// settled waits until the stream of bucket has not moved for quiet, and
// fails when it keeps moving for a minute: two writers reverting each
// other never settle.
func (e *leaseEnv) settled(t *testing.T, bucket string, quiet time.Duration) uint64 {
	t.Helper()
	seq := e.lastSeq(t, bucket)
	since := time.Now()
	deadline := time.Now().Add(time.Minute)
	for time.Since(since) < quiet {
		if time.Now().After(deadline) {
			t.Fatalf("%s keeps being written (last sequence %d): the registries flap", bucket, seq)
		}
		time.Sleep(50 * time.Millisecond) // settling is a span of quiet: read the stream again
		if s := e.lastSeq(t, bucket); s != seq {
			seq, since = s, time.Now()
		}
	}
	return seq
}

// TestLeaseSameTreeOneWriter: two replicas over one tree — one holds the
// lease and writes, the other stands by and serves the same view; edits
// converge, nothing is reverted and, once settled, the buckets are not
// written again.
func TestLeaseSameTreeOneWriter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s/SKILL.md")
	writeFile(t, path, skillMD("s", "v0"))
	writeFile(t, filepath.Join(dir, "flows/q.seq.yaml"), seqYAML("q", "q-g"))
	e := newLeaseEnv(t)
	a := e.start(t, dir, nil)
	b := e.start(t, dir, nil)
	if !a.leading.Load() || b.leading.Load() {
		t.Fatalf("leading: first %v, second %v; want the first replica to hold the lease", a.leading.Load(), b.leading.Load())
	}
	skills := e.kv(t, events.BucketSkills)
	for i := 1; i <= 10; i++ {
		writeFile(t, path, skillMD("s", fmt.Sprintf("v%d", i)))
		time.Sleep(20 * time.Millisecond)
	}
	eventually(t, "the last version stored and served by both", func() (bool, string) {
		v := value(skills, "s")
		ok := strings.Contains(v, `"description":"v10"`)
		for _, r := range []*replica{a, b} {
			d, err := r.lookup(kindSkill, "s")
			ok = ok && err == nil && d.description == "v10"
		}
		return ok, v
	})
	before := e.settled(t, events.BucketSkills, time.Second)
	time.Sleep(1500 * time.Millisecond) // the behaviour is an absence: no write in 1.5 s (3 MaxDelays) after settling
	if after := e.lastSeq(t, events.BucketSkills); after != before {
		t.Errorf("SKILLS written again after settling (sequence %d -> %d)", before, after)
	}
	if n := leaders(a, b); n != 1 {
		t.Errorf("%d replicas hold the lease; want 1", n)
	}
	if ev := e.ops(events.OpReverted); len(ev) > 0 {
		t.Errorf("reverted events between replicas over one tree: %+v", ev)
	}
	if ev := e.ops(events.OpDiffers); len(ev) > 0 || b.treeDiffers.Load() {
		t.Errorf("a tree that differs reported over one tree: %+v (gauge %v)", ev, b.treeDiffers.Load())
	}
	if strings.Contains(b.log.String(), "differs from the leader") {
		t.Errorf("the standby logs a difference over one tree:\n%s", b.log)
	}
}

// TestLeaseDifferentTrees is the data loss this lease fixes: two replicas
// with different trees used to revert each other's writes for ever. Now
// the leader's tree is stored, nothing flaps, and the standby says that
// its tree differs — log line naming the files, an events.OpDiffers
// event, the tree_differs gauge — until the trees agree again.
func TestLeaseDifferentTrees(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dirA, "skills/a/SKILL.md"), skillMD("a", "from A"))
	writeFile(t, filepath.Join(dirA, "flows/one.seq.yaml"), seqYAML("one", "one-g"))
	writeFile(t, filepath.Join(dirB, "skills/a/SKILL.md"), skillMD("a", "from B"))
	writeFile(t, filepath.Join(dirB, "skills/b/SKILL.md"), skillMD("b", "only B"))
	e := newLeaseEnv(t)
	a := e.start(t, dirA, nil)
	b := e.start(t, dirB, nil)
	skills, seqs := e.kv(t, events.BucketSkills), e.kv(t, events.BucketSequences)

	eventually(t, "the standby reports that its tree differs", func() (bool, string) {
		return len(e.ops(events.OpDiffers)) > 0 && b.treeDiffers.Load(), fmt.Sprint(e.ops(events.OpDiffers))
	})
	ev := e.ops(events.OpDiffers)[0]
	if ev.Kind != events.KindTree {
		t.Errorf("differs event kind %q; want %q", ev.Kind, events.KindTree)
	}
	for _, want := range []string{dirB, "skills/a/SKILL.md (differs)", "skills/b/SKILL.md (only here)", "flows/one.seq.yaml (only on the leader)", dirA} {
		if !strings.Contains(ev.Error, want) {
			t.Errorf("differs event does not name %q:\n%s", want, ev.Error)
		}
	}
	log := b.log.String()
	if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "differs from the leader") || !strings.Contains(log, "skills/b/SKILL.md (only here)") {
		t.Errorf("no WARN log line naming the differing files:\n%s", log)
	}
	if a.treeDiffers.Load() {
		t.Errorf("the leader reports its own tree as differing")
	}

	// No flapping: the buckets settle on A's tree and stay.
	before := e.settled(t, events.BucketSkills, time.Second)
	seqBefore := e.lastSeq(t, events.BucketSequences)
	time.Sleep(1500 * time.Millisecond) // the behaviour is an absence: no write in 1.5 s (3 MaxDelays) after settling
	if after := e.lastSeq(t, events.BucketSkills); after != before {
		t.Errorf("SKILLS written again after settling (sequence %d -> %d): the replicas flap", before, after)
	}
	if after := e.lastSeq(t, events.BucketSequences); after != seqBefore {
		t.Errorf("SEQUENCES written again after settling (sequence %d -> %d)", seqBefore, after)
	}
	if got := keysOf(t, skills); got != "a" {
		t.Errorf("SKILLS keys = %q; want the leader's: a", got)
	}
	if v := value(skills, "a"); !strings.Contains(v, "from A") {
		t.Errorf("SKILLS/a = %s; want the leader's version", v)
	}
	if got := keysOf(t, seqs); got != "one" {
		t.Errorf("SEQUENCES keys = %q; want the leader's: one", got)
	}
	if ev := e.ops(events.OpReverted); len(ev) > 0 {
		t.Errorf("reverted events: %+v", ev)
	}
	// The standby serves what the leader stored.
	if d, err := b.lookup(kindSkill, "a"); err != nil || d.description != "from A" {
		t.Errorf("standby serves skill a = %+v, %v; want the leader's version", d, err)
	}
	if _, err := b.lookup(kindSkill, "b"); err == nil {
		t.Errorf("standby serves skill b, which it did not store")
	}

	// The trees agree again: the standby says so and the gauge drops.
	writeFile(t, filepath.Join(dirB, "skills/a/SKILL.md"), skillMD("a", "from A"))
	writeFile(t, filepath.Join(dirB, "flows/one.seq.yaml"), seqYAML("one", "one-g"))
	if err := os.RemoveAll(filepath.Join(dirB, "skills/b")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the standby's tree no longer differs", func() (bool, string) {
		return !b.treeDiffers.Load() && strings.Contains(b.log.String(), "no longer differs"), "gauge still 1"
	})
}

// TestLeaseTakeoverWhenLeaderDies: the leader's connection goes (a killed
// process, a partition); it releases nothing, so the standby takes over
// when the lease entry expires — within the bucket's TTL after the last
// renewal, plus one poll — and then loads its own tree; the sequence
// created through the old leader survives the change of leader.
func TestLeaseTakeoverWhenLeaderDies(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dirA, "skills/a/SKILL.md"), skillMD("a", "from A"))
	writeFile(t, filepath.Join(dirB, "skills/b/SKILL.md"), skillMD("b", "from B"))
	e := newLeaseEnv(t)
	a := e.start(t, dirA, nil)
	b := e.start(t, dirB, nil)
	if !a.leading.Load() || b.leading.Load() {
		t.Fatalf("leading: first %v, second %v; want the first", a.leading.Load(), b.leading.Load())
	}
	ctx := context.Background()
	if _, err := a.seqCreate(ctx, []byte(seqJSON("made", "made-g"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the standby follows the created sequence", func() (bool, string) {
		_, err := b.lookup(kindSequence, "made")
		return err == nil, fmt.Sprint(err)
	})

	ttl := b.lease.ttl
	a.nc.Close() // killed: no release, no more renewals
	killed := time.Now()
	eventually(t, "the standby takes the lease", func() (bool, string) {
		return b.leading.Load(), "still standing by"
	})
	took := time.Since(killed)
	bound := ttl + 2*b.lease.step
	t.Logf("takeover after the leader died: %s (lease TTL %s, documented bound %s)", took.Round(time.Millisecond), ttl, bound)
	// Not before the entry can have expired, and within the bound plus
	// slack for a loaded machine.
	if took < ttl-2*b.lease.step {
		t.Errorf("took over after %s, before the lease (TTL %s) can have expired", took, ttl)
	}
	if took > bound+5*time.Second {
		t.Errorf("took over after %s; the documented bound is %s", took, bound)
	}
	skills, seqs := e.kv(t, events.BucketSkills), e.kv(t, events.BucketSequences)
	eventually(t, "the new leader's tree stored", func() (bool, string) {
		got := keysOf(t, skills)
		return got == "b", got
	})
	if got := keysOf(t, seqs); got != "made" {
		t.Errorf("SEQUENCES keys after the change of leader = %q; want the created sequence kept: made", got)
	}
	if _, err := b.seqDelete(ctx, []byte(`{"name":"made"}`)); err != nil {
		t.Errorf("the new leader cannot delete the sequence created through the old one: %v", err)
	}
}

// TestLeaseReleasedOnStop: a leader that stops (SIGTERM) deletes the
// lease, so the standby takes over at once, far within the TTL.
func TestLeaseReleasedOnStop(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "s/SKILL.md"), skillMD("s", "d"))
	e := newLeaseEnv(t)
	a := e.start(t, dir, nil)
	b := e.start(t, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the standby takes the released lease", func() (bool, string) {
		return b.leading.Load(), "still standing by"
	})
	took := time.Since(start)
	t.Logf("takeover after the leader stopped: %s (lease TTL %s)", took.Round(time.Millisecond), b.lease.ttl)
	if took > b.lease.ttl/2 {
		t.Errorf("took over after %s; a released lease is taken at once, not when it expires (TTL %s)", took, b.lease.ttl)
	}
	if !strings.Contains(a.log.String(), "released the registry lease") {
		t.Errorf("the stopping leader did not log its release:\n%s", a.log)
	}
}

// TestLeaseSeqCreateOnStandby: seq.create and seq.delete received by the
// standby are forwarded to the leader and land; through the shared
// endpoint (either replica answers) every write lands too.
func TestLeaseSeqCreateOnStandby(t *testing.T) {
	e := newLeaseEnv(t)
	a := e.start(t, "", nil)
	b := e.start(t, "", nil)
	if !a.leading.Load() || b.leading.Load() {
		t.Fatalf("leading: first %v, second %v; want the first", a.leading.Load(), b.leading.Load())
	}
	seqs := e.kv(t, events.BucketSequences)
	ctx := context.Background()
	create := b.forwarded(events.RegistryLeaderSeqCreateSubject, b.seqCreate)
	if _, err := create(ctx, []byte(seqJSON("via-standby", "via-standby-g"))); err != nil {
		t.Fatalf("seq.create on the standby: %v", err)
	}
	if v := value(seqs, "via-standby"); !strings.Contains(v, "made over NATS") {
		t.Fatalf("SEQUENCES/via-standby = %s after the reply", v)
	}
	a.mu.Lock()
	_, ok := a.created["via-standby"]
	a.mu.Unlock()
	if !ok {
		t.Errorf("the leader does not record the sequence created through the standby")
	}
	eventually(t, "the standby serves it", func() (bool, string) {
		_, err := b.lookup(kindSequence, "via-standby")
		return err == nil, fmt.Sprint(err)
	})
	// An error of the leader comes back as the endpoint's: a clash (409).
	var re *replyError
	if _, err := create(ctx, []byte(seqJSON("other", "via-standby-g"))); !errors.As(err, &re) || re.code != "409" || !strings.Contains(re.msg, "via-standby-g") {
		t.Errorf("clashing seq.create through the standby = %v; want the leader's 409 naming the group", err)
	}
	del := b.forwarded(events.RegistryLeaderSeqDeleteSubject, b.seqDelete)
	if _, err := del(ctx, []byte(`{"name":"via-standby"}`)); err != nil {
		t.Fatalf("seq.delete on the standby: %v", err)
	}
	if _, err := seqs.Get(ctx, "via-standby"); err == nil {
		t.Errorf("SEQUENCES/via-standby still there after seq.delete through the standby")
	}

	// Through the endpoint the queue group spreads over both replicas.
	client := natsserver.ConnectTB(t, e.srv)
	for i := range 10 {
		name := fmt.Sprintf("made-%d", i)
		m, err := events.Request(ctx, client, &nats.Msg{Subject: SubjectSeqCreate, Data: []byte(seqJSON(name, name+"-g"))})
		if err != nil {
			t.Fatal(err)
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
			t.Fatalf("seq.create %s: %s %s", name, code, m.Data)
		}
		var got map[string]any
		if err := json.Unmarshal(m.Data, &got); err != nil {
			t.Fatalf("seq.create %s reply %s: %v", name, m.Data, err)
		}
	}
	if got := keysOf(t, seqs); got != "made-0,made-1,made-2,made-3,made-4,made-5,made-6,made-7,made-8,made-9" {
		t.Errorf("SEQUENCES keys = %q; want the ten created", got)
	}
	if ev := e.ops(events.OpReverted); len(ev) > 0 {
		t.Errorf("reverted events: %+v", ev)
	}
}

// TestLeaseLeftByEarlierRun: a lease entry written before the embedded
// server started (Config.BusStarted, skillbus dev) is taken over at
// Start; without BusStarted a lease held by another process is respected.
func TestLeaseLeftByEarlierRun(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "s/SKILL.md"), skillMD("s", "d"))
	e := newLeaseEnv(t)
	ctx := context.Background()
	if err := events.Provision(ctx, e.js, events.Options{}); err != nil {
		t.Fatal(err)
	}
	lease := e.kv(t, events.BucketRegistryLease)
	stale, _ := json.Marshal(events.RegistryLease{Holder: "elsewhere/1/x", Tree: "sha256:0"})
	if _, err := lease.Create(ctx, events.RegistryLeaseKey, stale); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // BusStarted below must be later than the entry on the clock, not only in order
	r := e.start(t, "", nil)
	if r.leading.Load() {
		t.Errorf("a registry took a lease another process holds")
	}
	stopCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := r.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	d := e.start(t, dir, func(c *Config) { c.BusStarted = time.Now() })
	if !d.leading.Load() {
		t.Fatalf("the registry with BusStarted after the entry was written does not hold the lease:\n%s", d.log)
	}
	if got := keysOf(t, e.kv(t, events.BucketSkills)); got != "s" {
		t.Errorf("SKILLS keys = %q; want its tree stored when Start returns", got)
	}
}

// TestLeaseLostStopsWriting: a leader whose lease is taken from it (here
// a client writes another holder into the entry; in life, a leader cut off
// for longer than the TTL) stops writing at once: an edit of its tree is
// not stored while another holds the lease, and is stored once it takes
// the lease again (after that entry expired, it was not renewed).
func TestLeaseLostStopsWriting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s/SKILL.md")
	writeFile(t, path, skillMD("s", "v1"))
	e := newLeaseEnv(t)
	a := e.start(t, dir, nil)
	if !a.leading.Load() {
		t.Fatal("the only registry does not hold the lease")
	}
	ctx := context.Background()
	lease := e.kv(t, events.BucketRegistryLease)
	other, _ := json.Marshal(events.RegistryLease{Holder: "elsewhere/1/x", Tree: "sha256:0"})
	if _, err := lease.Put(ctx, events.RegistryLeaseKey, other); err != nil {
		t.Fatal(err)
	}
	// leading turns false before the step down is logged (stepDown logs
	// after stopLeadingLocked), so wait for both.
	eventually(t, "the leader steps down and logs it", func() (bool, string) {
		return !a.leading.Load() && strings.Contains(a.log.String(), "no longer holds the lease"),
			fmt.Sprintf("leading=%v, log:\n%s", a.leading.Load(), a.log)
	})
	skills := e.kv(t, events.BucketSkills)
	writeFile(t, path, skillMD("s", "v2"))
	time.Sleep(time.Second) // well past Debounce and MaxDelay
	if v := value(skills, "s"); !strings.Contains(v, `"description":"v1"`) {
		t.Errorf("SKILLS/s = %s while another holds the lease; want v1 (a standby writes nothing)", v)
	}
	eventually(t, "the lease taken again and the edit stored", func() (bool, string) {
		v := value(skills, "s")
		return a.leading.Load() && strings.Contains(v, `"description":"v2"`), v
	})
}

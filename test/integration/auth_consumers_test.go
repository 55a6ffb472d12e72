package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/pkg/events"
)

// deliverTargets are the subjects an attacker would have the server
// deliver a stream's messages to, with the queue group that shares them:
// every service's endpoints and the tools (issue 20, §1).
var deliverTargets = []struct{ subject, group string }{
	{events.RegistrySeqCreateSubject, events.ServiceRegistry},
	{events.RegistrySeqDeleteSubject, events.ServiceRegistry},
	{events.RegistryLeaderPrefix + ".seq.create", events.ServiceRegistry},
	{events.SeqRunSubject, events.ServiceSeq},
	{events.SeqCancelSubject, events.ServiceSeq},
	{events.SkillfaceAssembleSubject, events.ServiceSkillface},
	{"tool.cmd.run", "skillbus-tools"},
	{"tool.fs.read", "skillbus-tools"},
}

// refuseJS sends a JetStream API request with body as nc and requires the
// server to refuse the publish (a permissions violation naming subject).
func refuseJS(t *testing.T, role string, nc *nats.Conn, errs *asyncErrs, subject string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: nc.NewRespInbox(), Data: b}); err != nil {
		t.Fatalf("%s: publish %s: %v", role, subject, err)
	}
	nc.Flush()
	if !errs.has(`Publish to "`+subject+`"`, 5*time.Second) {
		t.Errorf("%s may publish %s; want it refused", role, subject)
	}
}

// ownerRole is the role of the service that owns stream (events.OwnerOf).
func ownerRole(stream string) string {
	switch events.OwnerOf(stream) {
	case events.OwnerRegistry:
		return auth.RoleRegistry
	case events.OwnerSkillface:
		return auth.RoleSkillface
	}
	return auth.RoleSeqworker
}

// TestAuthConsumerFan tries, for every role and every stream, what a
// consumer's deliver_subject would allow (docs/security.md, "Consumers"):
// a push consumer delivering onto each service's queue subject and onto
// tool.* with that deliver_group (as an unnamed, a named and a filtered
// create), a durable consumer, and deleting and pulling from a consumer it
// did not make. Each is refused to every role but the stream's owner,
// which the table lets create consumers on its streams (shown as the
// control: its own pull consumer is created). The attack is then
// built as it was reported — the runner publishes an agent_ready whose
// body is a seq.create request and has the server deliver it to the
// registry — and also through the message-get APIs' reply subjects;
// nothing is stored.
func TestAuthConsumerFan(t *testing.T) {
	e := authStart(t)
	roles := []string{auth.RoleRegistry, auth.RoleSeqworker, auth.RoleSkillface, auth.RoleTools, auth.ToolRole("web"), auth.RoleAgent, auth.RoleRunner, auth.RoleReader, auth.RoleConsole}
	conns := map[string]*nats.Conn{}
	errs := map[string]*asyncErrs{}
	for _, r := range roles {
		conns[r], errs[r] = e.conn(t, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The owners' consumers the others will try to delete and pull from.
	owned := map[string]string{events.StreamSeqRuns: events.ConsumerSeqworker, events.StreamEvents: events.ConsumerSeqworkerBoot}
	for _, c := range []struct{ role, stream string }{
		{auth.RoleRegistry, "KV_" + events.BucketSkills}, {auth.RoleRegistry, "KV_" + events.BucketSequences},
		{auth.RoleRegistry, "KV_" + events.BucketRegistryLease}, {auth.RoleSeqworker, "KV_" + events.BucketRuns},
		{auth.RoleSeqworker, "OBJ_" + events.BucketRunSlots},
	} {
		js, _ := jetstream.New(conns[c.role])
		cons, err := js.CreateConsumer(ctx, c.stream, jetstream.ConsumerConfig{Name: "owned-" + strings.ToLower(c.stream), AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 5 * time.Minute, MemoryStorage: true})
		if err != nil {
			t.Fatalf("the owner %s cannot create its own consumer on %s: %v", c.role, c.stream, err)
		}
		owned[c.stream] = cons.CachedInfo().Name
	}
	t.Logf("the owners created their consumers (the control): %v", owned)

	tried := 0
	for _, stream := range auth.Streams {
		owner := ownerRole(stream)
		victim := owned[stream]
		if victim == "" {
			victim = "any"
		}
		for _, role := range roles {
			if role == owner {
				t.Logf("%s: %s is the owner (events.OwnerOf) and may create consumers on it", stream, role)
				continue
			}
			nc, ae := conns[role], errs[role]
			name := "fan-" + strings.ReplaceAll(role, ".", "-")
			for _, tg := range deliverTargets {
				cfg := map[string]any{"deliver_subject": tg.subject, "deliver_group": tg.group, "ack_policy": "none", "deliver_policy": "all"}
				refuseJS(t, role, nc, ae, "$JS.API.CONSUMER.CREATE."+stream, map[string]any{"stream_name": stream, "config": cfg})
				named := map[string]any{"name": name, "deliver_subject": tg.subject, "deliver_group": tg.group, "ack_policy": "none"}
				refuseJS(t, role, nc, ae, "$JS.API.CONSUMER.CREATE."+stream+"."+name, map[string]any{"stream_name": stream, "config": named})
				named["filter_subject"] = "events.agent_ready.*"
				refuseJS(t, role, nc, ae, "$JS.API.CONSUMER.CREATE."+stream+"."+name+".events.agent_ready.*", map[string]any{"stream_name": stream, "config": named})
				tried += 3
			}
			durable := map[string]any{"durable_name": name, "ack_policy": "explicit"}
			refuseJS(t, role, nc, ae, "$JS.API.CONSUMER.DURABLE.CREATE."+stream+"."+name, map[string]any{"stream_name": stream, "config": durable})
			refuseJS(t, role, nc, ae, "$JS.API.CONSUMER.CREATE."+stream+"."+name, map[string]any{"stream_name": stream, "config": durable, "action": "create"})
			refuseJS(t, role, nc, ae, "$JS.API.CONSUMER.DELETE."+stream+"."+victim, nil)
			refuseJS(t, role, nc, ae, "$JS.API.CONSUMER.MSG.NEXT."+stream+"."+victim, map[string]any{"batch": 1})
			tried += 4
		}
	}
	t.Logf("%d consumer requests tried, every one refused to every role but the stream's owner", tried)

	// The owners' consumers are all still there.
	for stream, name := range owned {
		js, _ := jetstream.New(conns[ownerRole(stream)])
		if _, err := js.Consumer(ctx, stream, name); err != nil {
			t.Errorf("the consumer %s on %s: %v; want it kept", name, stream, err)
		}
	}

	t.Run("the attack of issue 20", func(t *testing.T) {
		nc, ae := conns[auth.RoleRunner], errs[auth.RoleRunner]
		evil := `{"name":"evil-boot","boot":true,"groups":[{"name":"evil-g","tools":"{\"tool\":\"fs.stat\",\"args\":{\"path\":\".\"}};"}]}`
		subj := "events.agent_ready.evil"
		js, _ := jetstream.New(nc)
		if _, err := js.Publish(ctx, subj, []byte(evil)); err != nil {
			t.Fatalf("runner: publish %s: %v", subj, err)
		}
		push := map[string]any{"name": "evil", "deliver_subject": events.RegistrySeqCreateSubject, "deliver_group": events.ServiceRegistry, "filter_subject": subj, "ack_policy": "none", "deliver_policy": "all"}
		refuseJS(t, auth.RoleRunner, nc, ae, "$JS.API.CONSUMER.CREATE.EVENTS.evil."+subj, map[string]any{"stream_name": "EVENTS", "config": push})
		refuseJS(t, auth.RoleRunner, nc, ae, "$JS.API.CONSUMER.CREATE.EVENTS", map[string]any{"stream_name": "EVENTS", "config": push})
		// A direct get answers with the stored message as it is, to any
		// reply subject: EVENTS allows none, and no client may ask.
		for _, r := range []string{auth.RoleRunner, auth.RoleReader, auth.RoleAgent, auth.RoleConsole} {
			refuseJS(t, r, conns[r], errs[r], "$JS.API.DIRECT.GET.EVENTS", map[string]any{"last_by_subj": subj})
		}
		// STREAM.MSG.GET (allowed: it is how clients read EVENTS) answers
		// the reply subject given — here the registry's — with the message
		// wrapped in JSON, its body base64: not a sequence.
		m := &nats.Msg{Subject: "$JS.API.STREAM.MSG.GET.EVENTS", Reply: events.RegistrySeqCreateSubject, Data: []byte(`{"last_by_subj":"` + subj + `"}`)}
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		nc.Flush()
		// The registry answers in order on its connection: once a later
		// request is answered, the earlier deliveries were handled.
		rnc := conns[auth.RoleReader]
		time.Sleep(200 * time.Millisecond) // the server's reply to the registry is asynchronous
		reply, err := rnc.Request(events.RegistrySeqGetSubject, []byte(`{"name":"evil-boot"}`), 10*time.Second)
		if err != nil {
			t.Fatalf("seq.get evil-boot: %v", err)
		}
		if reply.Header.Get("Nats-Service-Error-Code") == "" {
			t.Errorf("the registry has the sequence evil-boot (%.200s): the attack stored it", reply.Data)
		}
		if got := e.kvRevision(t, "SEQUENCES", "evil-boot"); got != 0 {
			t.Errorf("SEQUENCES evil-boot exists at revision %d", got)
		}
	})
	if v := e.log.violations(0); len(v) < tried {
		t.Errorf("the server logged %d violations; want at least the %d refused requests", len(v), tried)
	}
}

// TestRelayedRequestsDropped: a direct get answers the reply subject its
// requester names, with the stored message as it is — here a seq.create
// body, replayed onto the registry's endpoint (and its leader's), and a
// run request onto skillbus.seq.run. The services drop such messages
// (events.Relayed): nothing is stored, nothing runs. The stack runs
// without auth: anyone may make the stream, which is the point — the
// services do not rely on permissions for this.
func TestRelayedRequestsDropped(t *testing.T) {
	s := cliStack(t, t.TempDir(), t.TempDir())
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "STASH", Subjects: []string{"stash.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	evil := `{"name":"relayed-boot","boot":true,"groups":[{"name":"relayed-g","tools":"{\"tool\":\"fs.stat\",\"args\":{\"path\":\".\"}};"}]}`
	js.Publish(ctx, "stash.seq", []byte(evil))
	js.Publish(ctx, "stash.run", []byte(`{"sequence":"relayed-boot"}`))
	for _, c := range []struct{ subject, target string }{
		{"stash.seq", events.RegistrySeqCreateSubject},
		{"stash.seq", events.RegistryLeaderPrefix + ".seq.create"},
		{"stash.run", events.SeqRunSubject},
	} {
		m := &nats.Msg{Subject: "$JS.API.DIRECT.GET.STASH", Reply: c.target, Data: []byte(`{"last_by_subj":"` + c.subject + `"}`)}
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	nc.Flush()
	time.Sleep(300 * time.Millisecond) // the server's replies to the services are asynchronous
	reply, err := nc.Request(events.RegistrySeqGetSubject, []byte(`{"name":"relayed-boot"}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Header.Get("Nats-Service-Error-Code") == "" {
		t.Errorf("the registry stored the replayed sequence: %.200s", reply.Data)
	}
	list, err := nc.Request(events.SeqListSubject, []byte(`{}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(list.Data), "relayed-boot") {
		t.Errorf("a run of the replayed request exists: %.300s", list.Data)
	}
}

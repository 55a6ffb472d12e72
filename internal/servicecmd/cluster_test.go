package servicecmd_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
	"github.com/skillbus/skillbus/internal/skillfacesvc"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestServicesStartTogetherOnCluster starts the real registry, two
// seqworkers and skillface at the same moment, on the nodes of a fresh
// 3-node cluster, all with --replicas 3 (skillface with its own session
// TTL, so their provisioning options differ), built as their commands
// build them (provisioned by Serve, not again in Start): all must become
// ready — none may exit, however long provisioning takes on a loaded
// machine — and all must stop with exit 0. Before the services' own start
// stopped provisioning a second time, a seqworker's update-then-create
// round waited until its 30 s start deadline and exited 1.
func TestServicesStartTogetherOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster and three services")
	}
	cleanEnv(t)
	nodes, err := natsserver.StartCluster(3, "together", t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer natsserver.ShutdownAll(nodes)

	type svc struct {
		name string
		prov events.Options
		new  func(rt servicecmd.Runtime, o events.Options) (servicecmd.Service, error)
	}
	services := []svc{
		{"registry", events.Options{Replicas: 3}, func(rt servicecmd.Runtime, o events.Options) (servicecmd.Service, error) {
			return registry.New(rt.Conn, registry.Config{Dir: "../../examples", Logger: rt.Log, Provision: o, Provisioned: rt.Provisioned})
		}},
		{"seqworker", events.Options{Replicas: 3}, func(rt servicecmd.Runtime, o events.Options) (servicecmd.Service, error) {
			return seqworker.New(rt.Conn, seqworker.Config{Logger: rt.Log, Provision: o, Provisioned: rt.Provisioned})
		}},
		{"skillface", events.Options{Replicas: 3, SessionsTTL: 2 * time.Hour}, func(rt servicecmd.Runtime, o events.Options) (servicecmd.Service, error) {
			return skillfacesvc.New(rt.Conn, skillfacesvc.Config{Logger: rt.Log, Provision: o, Provisioned: rt.Provisioned})
		}},
		{"seqworker-2", events.Options{Replicas: 3}, func(rt servicecmd.Runtime, o events.Options) (servicecmd.Service, error) {
			return seqworker.New(rt.Conn, seqworker.Config{Logger: rt.Log, Provision: o, Provisioned: rt.Provisioned})
		}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := make([]*servicecmdtest.Buffer, len(services))
	done := make(chan string, len(services))
	gate := make(chan struct{})
	begin := time.Now()
	for i, s := range services {
		logs[i] = &servicecmdtest.Buffer{}
		log := slog.New(slog.NewTextHandler(logs[i], nil))
		o := servicecmd.Options{Name: s.name, Conn: connTo(nodes[i%len(nodes)].ClientURL()), ShutdownBudget: 10 * time.Second}
		go func() {
			<-gate
			code := servicecmd.Serve(ctx, log, o, servicecmd.Spec{Provision: &s.prov, New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
				return s.new(rt, s.prov)
			}})
			done <- fmt.Sprintf("%s exited %d", s.name, code)
		}()
	}
	close(gate)
	allReady := time.NewTimer(2 * time.Minute)
	defer allReady.Stop()
	for i, s := range services {
		for text, next := logs[i].Changed(); !strings.Contains(text, "msg=ready"); text, next = logs[i].Changed() {
			select {
			case <-next:
			case d := <-done:
				t.Fatalf("%s before every service was ready; %s log:\n%s", d, s.name, logs[i].String())
			case <-allReady.C:
				t.Fatalf("%s not ready after 2 min:\n%s", s.name, logs[i].String())
			}
		}
	}
	t.Logf("all %d ready %v after starting together", len(services), time.Since(begin).Round(time.Millisecond))
	cancel()
	for range services {
		select {
		case d := <-done:
			if !strings.HasSuffix(d, "exited 0") {
				t.Errorf("%s; want 0", d)
			}
		case <-time.After(time.Minute):
			t.Fatal("a service did not stop")
		}
	}
	if t.Failed() {
		for i, s := range services {
			t.Logf("%s log:\n%s", s.name, logs[i].String())
		}
	}
}

// TestProvisionWaitsForTheCluster: a seqworker with --replicas 3 started
// while two nodes of its 3-node cluster are down cannot provision
// (JetStream has no quorum). It must wait — retrying with back-off,
// saying so in its log, not ready with /readyz naming what provisioning
// waits for — and become ready once the node is back, without exiting.
func TestProvisionWaitsForTheCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	cleanEnv(t)
	dir := t.TempDir()
	ports := make([]int, 3)
	var routes []string
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[i]))
	}
	node := func(i int) natsserver.Options {
		return natsserver.Options{
			Name: fmt.Sprintf("waits-%d", i+1), StoreDir: fmt.Sprintf("%s/node%d", dir, i+1), ReadyTimeout: time.Minute,
			Cluster: natsserver.ClusterOptions{Name: "waits", Port: ports[i], Routes: routes},
		}
	}
	var nodes []*natsserver.Server
	defer func() { natsserver.ShutdownAll(nodes) }()
	for i := range 3 {
		s, err := natsserver.Start(node(i))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, s)
	}
	js, err := jetstream.New(natsserver.ConnectTB(t, nodes[0]))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster has no JetStream meta leader after a minute: %v", err)
		}
	}
	nodes[1].Shutdown()
	nodes[2].Shutdown()
	nodes = nodes[:1]

	var logs servicecmdtest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prov := events.Options{Replicas: 3}
	o := servicecmd.Options{Name: "seqworker", Conn: connTo(nodes[0].ClientURL()), HealthAddr: "127.0.0.1:0", ShutdownBudget: 10 * time.Second}
	done := make(chan int, 1)
	go func() {
		done <- servicecmd.Serve(ctx, log, o, servicecmd.Spec{Provision: &prov, New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
			return seqworker.New(rt.Conn, seqworker.Config{Logger: rt.Log, Provision: prov, Provisioned: rt.Provisioned})
		}})
	}()
	waitFor := func(want string, limit time.Duration) {
		t.Helper()
		logs.WaitFor(t, want, limit, done)
	}
	waitFor(`msg="provisioning failed; retrying"`, time.Minute)
	m := addrRe.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no health address in the log:\n%s", logs.String())
	}
	code, body := httpGet(t, "http://"+m[1]+"/readyz")
	if code != 503 || !strings.Contains(body, "provisioned: waiting (attempt ") || !strings.Contains(body, "started: not yet") {
		t.Errorf("/readyz while provisioning waits = %d %q; want 503 saying what provisioning waits for", code, body)
	}
	for i := 1; i < 3; i++ {
		s, err := natsserver.Start(node(i))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, s)
	}
	waitFor("msg=ready", 2*time.Minute)
	if code, body := httpGet(t, "http://"+m[1]+"/readyz"); code != 200 {
		t.Errorf("/readyz once ready = %d %q; want 200", code, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d; want 0; log:\n%s", code, logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("no exit a minute after the stop; log:\n%s", logs.String())
	}
	t.Logf("log:\n%s", logs.String())
}

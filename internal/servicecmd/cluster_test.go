package servicecmd_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
	"github.com/skillbus/skillbus/internal/skillfacesvc"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestServicesStartTogetherOnCluster starts the real registry, seqworker
// and skillface at the same moment, each on its own node of a fresh
// 3-node cluster, all with --replicas 3 (skillface with its own session
// TTL, so their provisioning options differ): all must become ready, and
// all must stop with exit 0.
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
			return registry.New(rt.Conn, registry.Config{Dir: "../../examples", Logger: rt.Log, Provision: o})
		}},
		{"seqworker", events.Options{Replicas: 3}, func(rt servicecmd.Runtime, o events.Options) (servicecmd.Service, error) {
			return seqworker.New(rt.Conn, seqworker.Config{Logger: rt.Log, Provision: o})
		}},
		{"skillface", events.Options{Replicas: 3, SessionsTTL: 2 * time.Hour}, func(rt servicecmd.Runtime, o events.Options) (servicecmd.Service, error) {
			return skillfacesvc.New(rt.Conn, skillfacesvc.Config{Logger: rt.Log, Provision: o})
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
		o := servicecmd.Options{Name: s.name, Conn: connTo(nodes[i].ClientURL()), ShutdownBudget: 10 * time.Second}
		go func() {
			<-gate
			code := servicecmd.Serve(ctx, log, o, servicecmd.Spec{Provision: &s.prov, New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
				return s.new(rt, s.prov)
			}})
			done <- fmt.Sprintf("%s exited %d", s.name, code)
		}()
	}
	close(gate)
	for i, s := range services {
		deadline := time.Now().Add(2 * time.Minute)
		for !strings.Contains(logs[i].String(), "msg=ready") {
			select {
			case d := <-done:
				t.Fatalf("%s before every service was ready; %s log:\n%s", d, s.name, logs[i].String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not ready after 2 min:\n%s", s.name, logs[i].String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("all three ready %v after starting together", time.Since(begin).Round(time.Millisecond))
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

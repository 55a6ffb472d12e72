package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestTestCommandCluster: with --cluster, a tool a case does not mock is
// called on the cluster at NATS_URL (a real provider on an embedded
// nats-server) and its real result fills the slot, while the tool is
// slower in real time than nothing — virtual time stands still during the
// call, so the group's 1m timeout is not spent. Without --cluster the
// same case fails: the tool is not mocked.
func TestTestCommandCluster(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{StoreDir: t.TempDir()})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ts, err := tool.Serve(nc, tool.ServerConfig{Name: "cluster-test"}, tool.Tool{Name: "t.x", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		time.Sleep(50 * time.Millisecond) // real time the virtual clock must not count
		return map[string]any{"a": 7}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ts.Stop(context.Background()) }()
	dir := writeTestTree(t, `cases:
  - name: real
    expect: {status: succeeded, slots: {x: {a: 7}}, virtual_time: 0s}
`)
	t.Setenv(EnvNATSURL, srv.ClientURL())
	if code, out, errb := runMain(t, "test", "--cluster", dir); code != ExitOK || !strings.Contains(out, "1 passed, 0 failed") {
		t.Errorf("test --cluster = %d, %q, %q; want the real tool's result to pass the case", code, out, errb)
	}
	if code, out, _ := runMain(t, "test", dir); code != ExitFailure || !strings.Contains(out, `the tool "t.x" is not mocked`) {
		t.Errorf("test without --cluster = %d, %q; want the unmocked tool to fail the case", code, out)
	}
}

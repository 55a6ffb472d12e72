package integration

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// BenchmarkEdgeCall measures a tool call across a leaf node link beside
// the same call made direct, in one run (docs/edge.md, "Latency"): a hub
// server and an edge site's leaf server in this process, on loopback, no
// authentication; the caller is a pkg/tool client on the hub; "direct" is
// an echo tool served on the hub, "leaf" the same tool served at the site.
// Each reports the p50 and p99 of single calls, one at a time.
//
//	go test -run '^$' -bench BenchmarkEdgeCall -count 5 ./test/integration
func BenchmarkEdgeCall(b *testing.B) {
	hub := natsserver.StartTB(b, natsserver.Options{Name: "hub", LeafNodes: natsserver.LeafNodeOptions{Listen: true}})
	leaf, err := natsserver.Start(natsserver.Options{Name: "skillbus-edge-site1", NoJetStream: true,
		LeafNodes: natsserver.LeafNodeOptions{Remotes: []natsserver.LeafRemote{{URLs: []string{hub.LeafURL()}}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(leaf.Shutdown)
	deadline := time.Now().Add(10 * time.Second)
	for hub.LeafNodes() != 1 || leaf.LeafNodes() != 1 {
		if time.Now().After(deadline) {
			b.Fatal("the leaf server did not connect to the hub")
		}
		time.Sleep(10 * time.Millisecond)
	}
	echo := func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil }
	for _, at := range []struct {
		srv  *natsserver.Server
		name string
	}{{hub, "hub.echo"}, {leaf, "site1.echo"}} {
		srv, err := tool.Serve(natsserver.ConnectTB(b, at.srv), tool.ServerConfig{Name: "bench"}, tool.Tool{Name: at.name, Func: echo})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Stop(context.Background()) })
	}
	c, err := tool.NewClient(natsserver.ConnectTB(b, hub))
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"path":"README.md","max_bytes":4096,"note":"ninety bytes of arguments, as in BenchmarkCall"}`)
	// The leaf's interest reaches the hub shortly after Serve: wait for
	// the first answer.
	for {
		if _, err := c.Call(context.Background(), "site1.echo", args); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("site1.echo never answered across the link")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, bc := range []struct{ name, tool string }{{"direct", "hub.echo"}, {"leaf", "site1.echo"}} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := c.Call(ctx, bc.tool, args); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

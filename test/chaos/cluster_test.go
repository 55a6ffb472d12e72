//go:build linux

package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// node is one nats-server process of the 3-node cluster, with its own
// JetStream store (kept across restarts: a restart is on the same store).
type node struct {
	*proc
	i        int
	host     string // the address it listens on
	client   int    // client port
	monitor  int    // monitoring port (/healthz)
	storeDir string
}

func (n *node) url() string                      { return fmt.Sprintf("nats://%s:%d", n.host, n.client) }
func (n *node) healthURL() string                { return fmt.Sprintf("http://%s:%d/healthz", n.host, n.monitor) }
func (n *node) String() string                   { return n.name }
func (n *node) waitHealthy(d time.Duration) bool { return waitHTTP(n.healthURL(), d) }

// startCluster writes the configuration of three clustered nodes and
// starts them: in their namespaces (each on its own address, the same
// ports) when net is set, else on 127.0.0.1 with distinct ports.
func startCluster(t *testing.T, bin, dir string, net *network) []*node {
	t.Helper()
	const n = 3
	nodes := make([]*node, n)
	routes := make([]string, n)
	cluster := make([]int, n)
	for i := range nodes {
		nd := &node{i: i + 1, host: "127.0.0.1", client: 4222, monitor: 8222, storeDir: filepath.Join(dir, fmt.Sprintf("n%d", i+1))}
		cluster[i] = 6222
		if net != nil {
			nd.host = net.ip(i + 1)
		} else {
			nd.client, nd.monitor, cluster[i] = freePort(t), freePort(t), freePort(t)
		}
		routes[i] = fmt.Sprintf("nats-route://%s:%d", nd.host, cluster[i])
		nodes[i] = nd
	}
	for i, nd := range nodes {
		conf := filepath.Join(dir, fmt.Sprintf("n%d.conf", i+1))
		text := fmt.Sprintf(`server_name: n%d
listen: "%s:%d"
http: "%s:%d"
max_payload: 1MB
# A node cut off the network is found dead by its peers (routes) and its
# clients' servers within 4-6 s, as skillbus's services find their server
# (natsconn.PingInterval), not after the default 2 minutes: until then the
# other nodes route a tool's queue calls to the cut-off node's subscribers.
ping_interval: "2s"
ping_max: 2
jetstream {
  store_dir: %q
  max_memory_store: 256MB
  max_file_store: 2GB
}
cluster {
  name: chaos
  listen: "%s:%d"
  routes: [%s]
}
`, i+1, nd.host, nd.client, nd.host, nd.monitor, nd.storeDir, nd.host, cluster[i], strings.Join(routes, ", "))
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		nd.proc = &proc{t: t, name: fmt.Sprintf("nats-n%d", i+1), argv: []string{bin, "-c", conf}, log: filepath.Join(dir, fmt.Sprintf("nats-n%d.log", i+1))}
		if net != nil {
			nd.ns = net.ns(i + 1)
		}
		nd.start()
		t.Cleanup(nd.stop)
	}
	for _, nd := range nodes {
		if !nd.waitHealthy(60 * time.Second) {
			t.Fatalf("%s not healthy within 60s; its log:\n%s", nd, nd.tail(4000))
		}
	}
	return nodes
}

// urls is the server list every client gets.
func urls(nodes []*node) string {
	var u []string
	for _, n := range nodes {
		u = append(u, n.url())
	}
	return strings.Join(u, ",")
}

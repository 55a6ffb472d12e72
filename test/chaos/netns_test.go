//go:build linux

package chaos

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// network puts each NATS node in a network namespace of its own, joined
// to the host by a veth pair on a bridge, so that one node can be cut off
// (its host-side veth set down) while it keeps running: a network
// partition. It needs root and iproute2 (ip); without them the nodes run
// on 127.0.0.1 and the suite skips partitions, saying so.
type network struct {
	t      *testing.T
	tag    string // 4 hex digits in every name, so parallel suites do not clash
	subnet string // 10.A.B (a /24)
	nodes  int
	up     bool
}

// newNetwork sets the namespaces up, or returns nil and the reason they
// cannot be.
func newNetwork(t *testing.T, nodes int) (*network, string) {
	if os.Geteuid() != 0 {
		return nil, "not root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, "no ip command (iproute2)"
	}
	n := &network{t: t, tag: fmt.Sprintf("%04x", rand.IntN(1<<16)), subnet: fmt.Sprintf("10.%d.%d", 200+rand.IntN(50), rand.IntN(256)), nodes: nodes}
	if err := n.setUp(); err != nil {
		n.tearDown()
		return nil, err.Error()
	}
	t.Cleanup(n.tearDown)
	return n, ""
}

func (n *network) bridge() string    { return "sbc-" + n.tag + "-br" }
func (n *network) ns(i int) string   { return fmt.Sprintf("sbc-%s-%d", n.tag, i) }
func (n *network) host(i int) string { return fmt.Sprintf("sbc-%s-h%d", n.tag, i) }
func (n *network) peer(i int) string { return fmt.Sprintf("sbc-%s-n%d", n.tag, i) }

// ip returns node i's address (1-based).
func (n *network) ip(i int) string { return fmt.Sprintf("%s.%d", n.subnet, i) }

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (n *network) setUp() error {
	steps := [][]string{
		{"ip", "link", "add", n.bridge(), "type", "bridge"},
		{"ip", "addr", "add", n.subnet + ".254/24", "dev", n.bridge()},
		{"ip", "link", "set", n.bridge(), "up"},
	}
	for i := 1; i <= n.nodes; i++ {
		steps = append(steps,
			[]string{"ip", "netns", "add", n.ns(i)},
			[]string{"ip", "link", "add", n.host(i), "type", "veth", "peer", "name", n.peer(i)},
			[]string{"ip", "link", "set", n.peer(i), "netns", n.ns(i)},
			[]string{"ip", "link", "set", n.host(i), "master", n.bridge()},
			[]string{"ip", "link", "set", n.host(i), "up"},
			[]string{"ip", "netns", "exec", n.ns(i), "ip", "link", "set", "lo", "up"},
			[]string{"ip", "netns", "exec", n.ns(i), "ip", "addr", "add", n.ip(i) + "/24", "dev", n.peer(i)},
			[]string{"ip", "netns", "exec", n.ns(i), "ip", "link", "set", n.peer(i), "up"},
		)
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return err
		}
	}
	n.up = true
	// Every node must reach the others and the host.
	for i := 1; i <= n.nodes; i++ {
		for j := 1; j <= n.nodes; j++ {
			if err := run("ip", "netns", "exec", n.ns(i), "ping", "-c", "1", "-W", "2", n.ip(j)); err != nil {
				if _, lerr := exec.LookPath("ping"); lerr != nil {
					return nil // no ping to check with: the cluster's start will tell
				}
				return fmt.Errorf("node %d cannot reach node %d through the bridge: %v", i, j, err)
			}
		}
	}
	return nil
}

// cut isolates node i: its link to the bridge goes down (it keeps running,
// its TCP connections stall).
func (n *network) cut(i int) error { return run("ip", "link", "set", n.host(i), "down") }

// heal reconnects node i.
func (n *network) heal(i int) error { return run("ip", "link", "set", n.host(i), "up") }

func (n *network) tearDown() {
	for i := 1; i <= n.nodes; i++ {
		_ = run("ip", "netns", "del", n.ns(i)) // takes the veth pair with it
		_ = run("ip", "link", "del", n.host(i))
	}
	_ = run("ip", "link", "del", n.bridge())
	n.up = false
}

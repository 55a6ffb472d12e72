package overlap_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps pkg/overlap importable by `skillbus test`
// (internal/seqtest) without NATS: it links pkg/seq, never nats.go nor
// pkg/events (the package comment says why it has twins of their types).
func TestDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not in PATH: cannot list pkg/overlap's dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/skillbus/skillbus/pkg/overlap", "github.com/skillbus/skillbus/internal/seqtest").Output()
	if err != nil {
		t.Fatalf("go list -deps pkg/overlap internal/seqtest: %v", err)
	}
	deps := strings.Fields(string(out))
	if !strings.Contains(string(out), "github.com/skillbus/skillbus/pkg/seq\n") {
		t.Fatalf("go list -deps listed no pkg/seq: %q; want the real list", deps)
	}
	var bad []string
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/nats-io/") || d == "github.com/skillbus/skillbus/pkg/events" {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		t.Errorf("pkg/overlap or internal/seqtest depends on %q; the policy and the test runner must not link NATS", bad)
	}
}

package tool_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps pkg/tool a library a Go tool provider can import
// cheaply: it links nats.go, OpenTelemetry's API and pkg/toolcall, never the
// sequence language (pkg/seq and its CEL and YAML dependencies) nor
// skillbus's internal packages.
func TestDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not in PATH: cannot list pkg/tool's dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/skillbus/skillbus/pkg/tool").Output()
	if err != nil {
		t.Fatalf("go list -deps pkg/tool: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps pkg/tool listed %d packages: %q; want the real list", len(deps), deps)
	}
	var bad []string
	for _, d := range deps {
		switch {
		case d == "github.com/skillbus/skillbus/pkg/seq",
			strings.Contains(d, "cel-go"), strings.HasPrefix(d, "cel.dev/"),
			strings.Contains(d, "yaml"), strings.Contains(d, "antlr"),
			strings.HasPrefix(d, "github.com/skillbus/skillbus/internal/"):
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		t.Errorf("pkg/tool depends on %q; a tool provider must not link the sequence language or skillbus internals", bad)
	}
	if !strings.Contains(string(out), "github.com/skillbus/skillbus/pkg/toolcall\n") {
		t.Errorf("pkg/tool does not depend on pkg/toolcall; its Client implements toolcall.Caller")
	}
}

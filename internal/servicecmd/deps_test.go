package servicecmd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServiceBinariesDoNotLinkServer: registry, seqworker and skillface
// connect to a NATS cluster; linking nats-server (as --embedded once did)
// made each about 10 MB larger. Only cmd/skillbus (dev, run) may link it.
func TestServiceBinariesDoNotLinkServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, cmd := range []string{"registry", "seqworker", "skillface"} {
		out, err := exec.Command("go", "list", "-deps", "../../cmd/"+cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps cmd/%s: %v\n%s", cmd, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/nats-io/nats-server/") || strings.HasSuffix(dep, "/internal/natsserver") {
				t.Errorf("cmd/%s links %s", cmd, dep)
			}
		}
	}
}

package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestAgentReadyBootID(t *testing.T) {
	t.Setenv(EnvNATSURL, "")
	for _, id := range []string{"bad id/x", "a.b", "a*", "x>", "tab\there", "ünï", "=x"} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"agent-ready", "bot", "--boot-id", id}, strings.NewReader(""), &out, &errb)
		if code != ExitUsage || !strings.Contains(errb.String(), "--boot-id") || !strings.Contains(errb.String(), "use only letters, digits") {
			t.Errorf("agent-ready bot --boot-id %q = %d, stderr %q; want %d and a --boot-id error", id, code, errb.String(), ExitUsage)
		}
	}
	for _, id := range []string{"2026-11-30-a", "boot_1", "X"} {
		if err := checkBootID(id); err != nil {
			t.Errorf("checkBootID(%q) = %v; want nil", id, err)
		}
	}
}

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

// AGENT follows the name rule of sequences: any script, and a message that
// names the character that is not allowed.
func TestAgentReadyNames(t *testing.T) {
	t.Setenv(EnvNATSURL, "")
	for name, want := range map[string]string{
		"bot 1":    "character 4 is a space (U+0020)",
		"a.b":      "character 2 is a dot (U+002E)",
		"bot>":     "a NATS subject wildcard",
		"pаyments": "mixes Latin and Cyrillic letters",
		"1bot":     "a name starts with a letter",
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), []string{"agent-ready", name}, strings.NewReader(""), &out, &errb)
		if code != ExitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("agent-ready %q = %d, stderr %q; want %d and %q", name, code, errb.String(), ExitUsage, want)
		}
	}
	// A Chinese name passes the check and goes on to connect (and fails
	// there: nothing listens on port 1) — not a command-line error.
	t.Setenv(EnvNATSURL, "nats://127.0.0.1:1")
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"agent-ready", "机器人"}, strings.NewReader(""), &out, &errb); code == ExitUsage {
		t.Errorf("agent-ready 机器人 = %d, stderr %q; want the name accepted", code, errb.String())
	}
}

package integration

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestConsoleWaitingRun: the console's API (internal/console, not
// changed for waits) lists a waiting run, filters on the status and
// serves its page with what it waits for.
func TestConsoleWaitingRun(t *testing.T) {
	env, _, _ := swWaitEnv(t)
	swStore(t, env, swWaitDef("cw", "1h", "abort"))
	swWorker(t, env, seqworker.Config{})
	swRequest(t, env, "cw-1", "cw", map[string]any{"svc": "db"})
	swWaitStatus(t, env, "cw-1", events.StatusWaiting, 20*time.Second)
	t.Setenv(cli.EnvNATSURL, env.srv.ClientURL())
	out, _, stop := cliBackground(t, "ui", "--listen", "127.0.0.1:0")
	defer stop()
	lineRe := regexp.MustCompile(`skillbus console: (http://127\.0\.0\.1:[0-9]+/)\n`)
	out.waitUntil(t, "ui to print its URL", lineRe.MatchString)
	u := lineRe.FindStringSubmatch(out.String())[1]
	if code, body := consoleGet(t, u+"api/runs?status=waiting", ""); code != 200 || !strings.Contains(body, `"cw-1"`) || !strings.Contains(body, `"waiting"`) {
		t.Errorf("api/runs?status=waiting = %d %s", code, body)
	}
	if code, body := consoleGet(t, u+"api/runs/cw-1", ""); code != 200 || !strings.Contains(body, `"status":"waiting"`) || !strings.Contains(body, `"signal":"approve"`) {
		t.Errorf("api/runs/cw-1 = %d %.600s", code, body)
	}
}

package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestCLISchedulesShowPolicies: `schedules show` prints an entry's jitter,
// catchup_window and pause_on_failure (and -o json carries them; neither
// did before), and every `schedules trigger` of a cancel_other entry
// prints the run id of its tick on stdout — also the second, whose tick
// starts once the run it cancels has stopped (its id was only on stderr).
func TestCLISchedulesShowPolicies(t *testing.T) {
	env, _, _ := swWaitEnv(t)
	swWorker(t, env, seqworker.Config{})
	def := strings.Replace(swWaitDef("cp", "1h", "abort"), "name: cp\n", "name: cp\nschedule:\n  - name: e\n    every: 1h\n    overlap: cancel_other\n    jitter: 1s\n    catchup_window: 10m\n    pause_on_failure: 3\n    args: {svc: db}\n", 1)
	swStore(t, env, def)
	t.Setenv(cli.EnvNATSURL, env.srv.ClientURL())
	run := func(args ...string) (int, string, string) { return cliRun(t, args...) }
	var code int
	var out, errOut string
	deadline := time.Now().Add(5 * time.Second)
	for code, out, errOut = run("schedules", "show", "cp/e"); code != 0; code, out, errOut = run("schedules", "show", "cp/e") {
		if time.Now().After(deadline) {
			t.Fatalf("schedules show = %d %s", code, errOut)
		}
	}
	for _, want := range []string{"jitter:   1s", "catchup_window: 10m0s", "pause_on_failure: after 3 consecutive failed runs"} {
		if !strings.Contains(out, want) {
			t.Errorf("schedules show lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = run("schedules", "show", "cp/e", "-o", "json")
	var info events.ScheduleInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.Jitter != "1s" || info.CatchupWindow != "10m0s" || info.PauseOnFailure != 3 {
		t.Errorf("schedules show -o json = %s (%v); want jitter 1s, catchup_window 10m0s, pause_on_failure 3", out, err)
	}
	code, out, errOut = run("schedules", "trigger", "cp/e")
	first := strings.TrimSpace(out)
	if code != 0 || first == "" || strings.Contains(first, "\n") {
		t.Fatalf("first trigger = %d, stdout %q, stderr %q; want the run id on stdout", code, out, errOut)
	}
	swWaitStatus(t, env, first, events.StatusWaiting, 20*time.Second)
	code, out, errOut = run("schedules", "trigger", "cp/e")
	second := strings.TrimSpace(out)
	if code != 0 || second == "" || second == first || strings.Contains(second, "\n") || !strings.Contains(errOut, "cancelled") {
		t.Fatalf("second trigger = %d, stdout %q, stderr %q; want the new run id on stdout, the cancel on stderr", code, out, errOut)
	}
	swWaitStatus(t, env, first, events.StatusCancelled, 20*time.Second)
	swWaitStatus(t, env, second, events.StatusWaiting, 20*time.Second)
}

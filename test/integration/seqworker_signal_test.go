package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestSeqworkerSecondSIGTERM runs the seqworker command (the built
// binary, its own main) holding a run whose tool call blocks: the first
// SIGTERM starts a shutdown that waits for the group (70% of a 60 s
// budget); a second SIGTERM ends the process at once with exit code 1,
// saying so on stderr (docs/operations.md, "Shutdown and its budget").
func TestSeqworkerSecondSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the seqworker command")
	}
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	inTwo := make(chan struct{}, 4)
	release := make(chan struct{})
	defer close(release)
	swFailoverSeq(t, env, "sig-two", &calls, inTwo, release)

	bin := filepath.Join(t.TempDir(), "seqworker")
	build := []string{"build", "-o", bin}
	if raceBuild { // the packages are in the build cache as the test binary's build left them
		build = append(build, "-race")
	}
	if out, err := exec.Command("go", append(build, "../../cmd/seqworker")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--nats", env.srv.ClientURL(), "--shutdown-budget", "60s", "--worker-id", "sig-worker")
	var out cliBuf
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	swRequest(t, env, "r-sig-two", "sig-two", nil)
	select {
	case <-inTwo:
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker never reached group 2; its output:\n%s", out.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The first signal is taken once the worker logs its shutdown; that it
	// then waits for the group is shown by the second signal's message
	// below (the process is still there to say it).
	out.waitFor(t, "the shutdown at the first SIGTERM", "msg=stopping")
	select {
	case err := <-done:
		t.Fatalf("the worker exited (%v) at the first SIGTERM with a group in flight; want it to wait for the group\n%s", err, out.String())
	default:
	}
	second := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("exit code %d after the second SIGTERM; want 1", code)
		}
		if took := time.Since(second); took > 5*time.Second {
			t.Errorf("exit %v after the second SIGTERM; want at once", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the worker still runs 20 s after the second SIGTERM\n%s", out.String())
	}
	if want := "seqworker: second signal (terminated) during shutdown: exiting now"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	// The run was held, not finished: another worker takes it over as
	// after a crash.
	if st, _ := swState(t, env, "r-sig-two"); st.Status == events.StatusSucceeded || st.Status == events.StatusFailed {
		t.Errorf("run %s after a forced exit mid-group; want it left to be taken over", st.Status)
	}
}

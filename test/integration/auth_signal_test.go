package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestAuthSignal: under the generated permissions a run waits on a timer
// and then for a signal (the seqworker may schedule, fire and purge its
// timers), the runner signals it and it resumes; the reader may not
// signal, the console may (docs/security.md).
func TestAuthSignal(t *testing.T) {
	defs := t.TempDir()
	src := "name: gate\ngroups:\n  - name: pause\n    wait_for: {duration: 1s}\n  - name: approval\n    out: {ok: bool}\n    wait_for: {signal: approve, timeout: 1h}\n"
	if err := os.WriteFile(filepath.Join(defs, "gate.seq.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	e := authStartOn(t, defs, cliProject(t))
	nc, _ := e.conn(t, auth.RoleRunner)
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var id string
	for range 100 { // the registry stores the file soon after the start
		if id, err = c.Start(ctx, events.SeqRunRequest{Sequence: "gate"}); !errors.Is(err, client.ErrNotFound) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("start gate as runner: %v", err)
	}
	var st *events.RunState
	for {
		st, err = c.Status(ctx, id)
		if err == nil && st.Status == events.StatusWaiting && st.Wait.Signal == "approve" {
			break
		}
		if ctx.Err() != nil || err == nil && events.Finished(st.Status) {
			t.Fatalf("run %s: %+v, %v; want it waiting for approve after its timer", id, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rnc, rerrs := e.conn(t, auth.RoleReader)
	refusePub(t, auth.RoleReader, rnc, rerrs, events.SeqSignalSubject, nil)
	cnc, _ := e.conn(t, auth.RoleConsole)
	cc, _ := client.New(cnc)
	if _, err := cc.Signal(ctx, "no-such-run", "approve", nil); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("console signal: %v; want the endpoint's 404", err)
	}
	if _, err := c.Signal(ctx, id, "approve", raw("ok", "true")); err != nil {
		t.Fatalf("runner signal: %v", err)
	}
	for {
		st, err = c.Status(ctx, id)
		if err == nil && events.Finished(st.Status) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("run %s not finished after the signal: %+v", id, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Status != events.StatusSucceeded || string(st.Slots["ok"]) != "true" {
		t.Fatalf("run after the signal: %s %s: %s", st.Status, st.Slots["ok"], st.Error)
	}
}

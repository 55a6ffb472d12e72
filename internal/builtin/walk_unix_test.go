//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// processCPU returns the CPU time (user + system) this process has used.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Skipf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestEndedWalkUsesNoCPU serves the tools over a real NATS server and
// calls a pathological glob over 9,330 files, once cancelled by its caller
// 20 ms in (the cancel subject) and once ended by its 50 ms deadline: the provider's
// function returns (Stop finds no call running) and the process, provider
// included, uses almost no CPU afterwards. Before, the walk went on for
// minutes on a full core.
func TestEndedWalkUsesNoCPU(t *testing.T) {
	root, _ := bigTree(t, 4, 6, 6)
	p := newProvider(t, Config{Root: root, MaxWalkEntries: 1 << 30})
	s := natsserver.StartTB(t, natsserver.Options{})
	for _, how := range []string{"cancel", "deadline"} {
		t.Run(how, func(t *testing.T) {
			started := make(chan struct{}, 1)
			type end struct {
				at  time.Time
				err error
			}
			ended := make(chan end, 1)
			tools := p.Tools()
			for i, tl := range tools {
				if tl.Name == "fs.glob" {
					f := tl.Func
					tools[i].Func = func(ctx context.Context, args json.RawMessage) (any, error) {
						started <- struct{}{}
						v, err := f(ctx, args)
						ended <- end{time.Now(), err}
						return v, err
					}
				}
			}
			srv, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "walk-" + how}, tools...)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop(context.Background())
			c, err := tool.NewClient(natsserver.ConnectTB(t, s))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if how == "deadline" {
				ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			}
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.Call(ctx, "fs.glob", json.RawMessage(`{"pattern":"**/**/**/**/**/**/**/**/x"}`))
				done <- err
			}()
			<-started
			if how == "cancel" {
				time.Sleep(20 * time.Millisecond) // the walk runs (for 80 ms or more when not stopped)
				cancel()
			}
			err = <-done
			gaveUp := time.Now()
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Call = %v; want the %s's error", err, how)
			}
			select {
			case e := <-ended:
				t.Logf("the provider's walk returned %v after the caller gave up (%s): %v", e.at.Sub(gaveUp).Round(time.Millisecond), how, e.err)
				if !errors.Is(e.err, context.Canceled) && !errors.Is(e.err, context.DeadlineExceeded) {
					t.Fatalf("the walk returned %v; want it stopped by the %s (if it finished first, the tree is too small for this machine)", e.err, how)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the provider's walk still runs 5 s after the caller's %s", how)
			}
			before := processCPU(t)
			time.Sleep(time.Second) // the window the CPU is measured over
			used := processCPU(t) - before
			t.Logf("CPU used in the second after the walk ended: %v", used)
			if used > 150*time.Millisecond {
				t.Errorf("the process used %v of CPU in the second after the walk was %s; want about 0 (at most 150 ms)", used, how+"ed")
			}
			stopCtx, stopCancel := context.WithTimeout(context.Background(), time.Second)
			defer stopCancel()
			if err := srv.Stop(stopCtx); err != nil {
				t.Errorf("Stop after the %s: %v; want no call still running", how, err)
			}
		})
	}
}

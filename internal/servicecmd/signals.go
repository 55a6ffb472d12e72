package servicecmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// SignalContext is what a service's main runs under: a context that ends
// at the first SIGINT or SIGTERM, when the service stops gracefully within
// its --shutdown-budget (docs/operations.md, "Shutdown and its budget"). A
// second signal does not wait for that: it writes "NAME: second signal
// (terminated) during shutdown: exiting now" on stderr and exits 1 at once
// — what a person pressing Ctrl-C again means. Work the service held is
// then recovered as after a crash (a seqworker's runs are taken over once
// their heartbeats stop: docs/runs.md). stop releases the signals.
func SignalContext(name string, stderr io.Writer) (ctx context.Context, stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := interruptible(context.Background(), name, sigs, stderr, os.Exit)
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}

// interruptible returns a context that ends at the first value on sigs;
// the second calls exit(1) after saying so on stderr.
func interruptible(parent context.Context, name string, sigs <-chan os.Signal, stderr io.Writer, exit func(int)) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-parent.Done():
			return
		}
		s := <-sigs
		fmt.Fprintf(stderr, "%s: second signal (%v) during shutdown: exiting now\n", name, s)
		exit(1)
	}()
	return ctx, cancel
}

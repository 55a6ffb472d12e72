package servicecmd

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/servicecmd/servicecmdtest"
)

// TestSecondSignal: the first signal ends the context (a graceful stop)
// without exiting; the second exits 1 at once, saying so.
func TestSecondSignal(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	var stderr servicecmdtest.Buffer
	exited := make(chan int, 1)
	ctx, cancel := interruptible(context.Background(), "seqworker", sigs, &stderr, func(code int) { exited <- code })
	defer cancel()
	sigs <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the context did not end at the first signal")
	}
	select {
	case code := <-exited:
		t.Fatalf("exit(%d) at the first signal; want a graceful stop", code)
	case <-time.After(50 * time.Millisecond):
	}
	sigs <- os.Interrupt
	select {
	case code := <-exited:
		if code != 1 {
			t.Errorf("exit(%d) at the second signal; want 1", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit at the second signal")
	}
	if got, want := stderr.String(), "seqworker: second signal (interrupt) during shutdown: exiting now\n"; got != want {
		t.Errorf("stderr = %q; want %q", got, want)
	}
}

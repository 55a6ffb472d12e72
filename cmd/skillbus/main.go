// Command skillbus is the user's command line for skillbus: validate
// sequences and skills, split Markdown into sections, and (with a NATS
// connection or the embedded dev stack) run and inspect sequences.
// Run `skillbus help` for the commands; the logic lives in internal/cli.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/skillbus/skillbus/internal/cli"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx := interruptible(context.Background(), sigs, os.Stderr, os.Exit)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}

// interruptible returns a context that ends at the first signal received
// on sigs (Ctrl-C or SIGTERM: the command stops gracefully, bounded by its
// own stop timeout). A second signal does not wait for that: it prints
// "skillbus: forced exit" on stderr and calls exit(1) at once.
func interruptible(parent context.Context, sigs <-chan os.Signal, stderr io.Writer, exit func(int)) context.Context {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		<-sigs
		cancel()
		s := <-sigs
		fmt.Fprintf(stderr, "skillbus: %v again: forced exit\n", s)
		exit(1)
	}()
	return ctx
}

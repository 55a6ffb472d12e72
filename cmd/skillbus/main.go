// Command skillbus is the user's command line for skillbus: validate
// sequences and skills, split Markdown into sections, and (with a NATS
// connection or the embedded dev stack) run and inspect sequences.
// Run `skillbus help` for the commands; the logic lives in internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/skillbus/skillbus/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

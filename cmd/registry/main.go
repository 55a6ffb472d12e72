// Command registry is the skillbus registry service (DESIGN.md §2): it
// loads a directory tree of skills (SKILL.md, skill.yaml) and sequences
// (*.seq.json, *.seq.yaml, *.seq.yml), publishes the valid ones to the
// SKILLS and SEQUENCES buckets, follows the tree, and serves the
// skillbus.registry.* endpoints. The logic lives in internal/registry.
//
// Usage:
//
//	registry [flags] [DIR]
//
// Environment: NATS_URL (default nats://127.0.0.1:4222), NATS_CREDS (a
// credentials file). --embedded starts an in-process nats-server instead.
// SIGINT or SIGTERM stops it gracefully: endpoints stop, then the
// connection is drained.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/servicecmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	var common servicecmd.Flags
	fs := common.FlagSet("registry", stderr, "registry [flags] [DIR]",
		"Loads skills and sequences from DIR into NATS JetStream, follows changes,\n"+
			"and serves skillbus.registry.* (see `nats micro info skillbus-registry`).")
	var (
		dir      = fs.String("dir", "", "root of the skills and sequences tree (or give it as the argument); empty = no files, only sequences created over NATS")
		debounce = fs.Duration("debounce", 10*time.Millisecond, "quiet time after file changes before rescanning (an editor's save burst is handled once)")
		resync   = fs.Duration("resync", time.Minute, "full rescan period without events (negative = never)")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // -h asked for the usage: not an error
		}
		return 2
	}
	switch {
	case fs.NArg() > 1:
		fmt.Fprintf(stderr, "registry: one DIR at most, got %d arguments\n", fs.NArg())
		return 2
	case fs.NArg() == 1 && *dir != "" && *dir != fs.Arg(0):
		fmt.Fprintf(stderr, "registry: DIR given twice (--dir %q and %q)\n", *dir, fs.Arg(0))
		return 2
	case fs.NArg() == 1:
		*dir = fs.Arg(0)
	}
	log, err := common.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "registry: %v\n", err)
		return 2
	}
	cfg := registry.Config{Dir: *dir, Debounce: *debounce, Resync: *resync, Logger: log, Provision: common.Provision()}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "registry: %v\n", err)
		return 2
	}

	return common.Run(ctx, "registry", log, func(ctx context.Context, nc *nats.Conn) error {
		reg, err := registry.New(nc, cfg)
		if err != nil {
			return err
		}
		return reg.Run(ctx) // phase one: endpoints stop, the watch ends
	})
}

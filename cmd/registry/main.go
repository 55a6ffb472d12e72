// Command registry is the skillbus registry service (docs/deploy.md):
// it loads a directory tree of skills (SKILL.md, skill.yaml) and sequences
// (*.seq.json, *.seq.yaml, *.seq.yml), publishes the valid ones to the
// SKILLS and SEQUENCES buckets, follows the tree, and serves the
// skillbus.registry.* endpoints. The logic lives in internal/registry; the
// process wiring (flags and SKILLBUS_* variables, NATS connection, health,
// metrics, shutdown budget) in internal/servicecmd.
//
// Usage:
//
//	registry [flags] [DIR]
//
// Run `registry --help` for the flags; docs/operations.md for deployment.
// SIGINT or SIGTERM stops it gracefully: not ready, endpoints stop, then
// the connection is drained, within --shutdown-budget.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/servicecmd"
)

func main() {
	ctx, stop := servicecmd.SignalContext("registry", os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var common servicecmd.Flags
	fs := common.FlagSet(servicecmd.Command{
		Name:     "registry",
		Synopsis: "registry [flags] [DIR]",
		About: "Loads skills and sequences from DIR into NATS JetStream (the SKILLS and\n" +
			"SEQUENCES buckets), follows changes, and serves skillbus.registry.*\n" +
			"(see `nats micro info skillbus-registry`). Without DIR it stores only the\n" +
			"sequences created over NATS.",
		Examples: []string{
			"registry /srv/skillbus/defs",
			"NATS_URL=nats://nats:4222 NATS_CREDS=/etc/skillbus/registry.creds registry --health-addr :8080 /defs",
			"SKILLBUS_DIR=/defs SKILLBUS_REPLICAS=3 SKILLBUS_LOG_JSON=true registry",
		},
	}, stdout, stderr)
	var (
		dir      = fs.String("dir", "", "`DIR`: root of the skills and sequences tree (or give it as the argument); empty = no files, only sequences created over NATS")
		debounce = fs.Duration("debounce", 10*time.Millisecond, "quiet time after file changes before rescanning (an editor's save burst is handled once)")
		resync   = fs.Duration("resync", time.Minute, "full rescan period without events (negative = never)")
	)
	if code := common.Parse(fs, args, 1); code >= 0 {
		return code
	}
	if fs.NArg() == 1 {
		if *dir != "" && *dir != fs.Arg(0) {
			fmt.Fprintf(stderr, "registry: DIR given twice (--dir %q and %q)\n", *dir, fs.Arg(0))
			return 2
		}
		*dir = fs.Arg(0)
	}
	log, err := common.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "registry: %v\n", err)
		return 2
	}
	if *dir != "" {
		// The directory is checked here to name the argument or flag
		// (and variable) that gave it.
		what := common.Source("dir")
		if fs.NArg() == 1 {
			what = fmt.Sprintf("DIR %q", *dir)
		}
		if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
			reason := "is not a directory"
			if errors.Is(err, os.ErrNotExist) {
				reason = "does not exist"
			} else if err != nil {
				reason = "cannot be read: " + errtext.Error(err)
			}
			fmt.Fprintf(stderr, "registry: %s %s; give the directory that holds your skills and sequences\n", what, reason)
			return 2
		}
	}
	cfg := registry.Config{Dir: *dir, Debounce: *debounce, Resync: *resync, Logger: log, Provision: common.Provision()}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "registry: %s\n", common.ConfigError(err, map[string]string{"Dir": "dir", "Debounce": "debounce", "Resync": "resync", "Replicas": "replicas"}))
		return 2
	}
	return common.Run(ctx, log, servicecmd.Spec{
		Provision: &cfg.Provision,
		New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
			cfg.Meters = rt.Meters
			cfg.Provisioned = rt.Provisioned // done, with retries: Start does not provision again
			r, err := registry.New(rt.Conn, cfg)
			if err != nil {
				return nil, err
			}
			return r, nil // ready once Start has loaded the buckets and the tree
		},
	})
}

package cli

import (
	"context"
	"fmt"
	"runtime"

	"github.com/skillbus/skillbus/internal/version"
)

func versionCommand() command {
	return command{
		summary: "print skillbus's version (also skillbus --version)",
		usage: `Usage: skillbus version [-o json|yaml]
       skillbus --version

Prints "skillbus VERSION": the version this binary was built as, the one
every skillbus service reports to NATS micro (nats micro info) — a release's
tag, the module version go install stamps, or 0.0.0-dev for go run
(docs/operations.md, "Version"). -o json or -o yaml prints {"version",
"go", "platform"} instead.

Exit codes: 0 success, 2 bad command line.
`,
		run: runVersion,
	}
}

// versionInfo is the -o json|yaml output of `skillbus version`.
type versionInfo struct {
	Version  string `json:"version"`  // SemVer, without a leading v (internal/version)
	Go       string `json:"go"`       // the Go toolchain that built the binary
	Platform string `json:"platform"` // GOOS/GOARCH
}

func runVersion(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "version", versionCommand)
	out := outputFlags(fs, "json", "yaml")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "skillbus version: unexpected argument %q\n", pos[0])
		return ExitUsage
	}
	info := versionInfo{Version: version.String(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !out.Structured(env.Stdout, info) {
		fmt.Fprintf(env.Stdout, "skillbus %s\n", info.Version)
	}
	return ExitOK
}

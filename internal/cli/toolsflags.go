package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/servicecmd"
)

// checkBuiltin checks the built-in tools' settings of a command that
// serves them (run and dev with --tools-root, mcp serve --local, tools
// serve with --root) before anything starts, so that a mistyped flag is a
// usage error (exit 2: README.md, "Exit codes") naming the flag rather
// than a failed start (exit 1) naming a Go field: the root must be an
// existing directory, and each --allow-cmd entry a command name or an
// absolute path (builtin.Config.Validate). rootFlag is the flag that
// gives the root ("tools-root", "root"). It prints the problem and returns
// ExitUsage, or -1 when the settings are good.
func checkBuiltin(env Env, command, rootFlag string, cfg builtin.Config) int {
	fields := map[string]string{
		"Root": rootFlag, "AllowCommands entry": "allow-cmd", "Prefix": "prefix",
		"MaxReadBytes": "max-read", "CommandTimeout": "cmd-timeout", "MaxOutputBytes": "max-output",
		"MaxWalkEntries": "max-walk-entries", "MaxWalkBytes": "max-walk-bytes",
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus %s: %s\n", command, servicecmd.ConfigText(err, fields, nil))
		return ExitUsage
	}
	st, err := os.Stat(cfg.Root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(env.Stderr, "skillbus %s: --%s %s: no such directory; give the directory the built-in tools may read (default .)\n", command, rootFlag, cfg.Root)
		return ExitUsage
	case err != nil:
		fmt.Fprintf(env.Stderr, "skillbus %s: --%s %s: %s\n", command, rootFlag, cfg.Root, errtext.Error(err))
		return ExitUsage
	case !st.IsDir():
		fmt.Fprintf(env.Stderr, "skillbus %s: --%s %s is a file; give the directory the built-in tools may read (default .)\n", command, rootFlag, cfg.Root)
		return ExitUsage
	}
	return -1
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

func toolsCommand() command {
	return command{
		summary: "list the tools served on NATS, or serve the built-in tools",
		usage: `Usage: skillbus tools [ls] [--json] [--wait DURATION]
       skillbus tools serve [--root DIR] [--allow-cmd NAMES] [flags]

ls (the default) discovers the tool providers through NATS micro ($SRV.INFO):
every endpoint on tool.<name>, with its provider, the number of instances
answering and its description (--json adds each argument schema).

serve runs the built-in tool provider until Ctrl-C:
  fs.list fs.stat fs.read fs.glob fs.grep fs.lines   files under --root only:
        absolute paths, .. above the root and symlinks leading out are refused
  text.render                                        a Go text/template
  cmd.run                                            only with --allow-cmd: runs
        an allow-listed command (no shell) with a timeout and an output cap
Replicas share calls (one queue group), so run as many as you like.

Flags of serve:
  --root DIR           the directory the tools are confined to (default .)
  --allow-cmd NAMES    commands cmd.run may run, comma-separated (default none)
  --max-read BYTES     fs.read limit (default 262144)
  --cmd-timeout D      longest cmd.run (default 30s)
  --max-output BYTES   cmd.run stdout/stderr cap each (default 65536)
  --name NAME          the micro service name (default skillbus-builtin)
  --health-addr ADDR   serve /livez, /readyz and /metrics on ADDR (e.g. :8080)
  --shutdown-budget D  the whole graceful shutdown at SIGTERM (default 25s)
  --log-json           log JSON lines; --log-level LEVEL (default info)
serve runs like the skillbus services (docs/operations.md): it waits for NATS
at start, reconnects for ever, exits 1 if its connection is closed for good,
and takes every flag from SKILLBUS_<FLAG> too (SKILLBUS_HEALTH_ADDR=:8080).

Examples:
  skillbus tools
  skillbus tools --json | jq '.[].tool'
  skillbus tools serve --root ~/src/myproject --allow-cmd git,go

Exit codes: 0 success, 1 NATS unreachable or serving failed, 2 bad command line.
Needs NATS_URL.
`,
		run: runTools,
	}
}

// ToolInfo is one tool found by `skillbus tools`.
type ToolInfo struct {
	Tool        string          `json:"tool"`
	Subject     string          `json:"subject"`
	Provider    string          `json:"provider"`
	Instances   int             `json:"instances"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
}

func runTools(ctx context.Context, env Env, args []string) int {
	if len(args) > 0 && args[0] == "serve" {
		return runToolsServe(ctx, env, args[1:])
	}
	fs := newFlags(env, "tools", toolsCommand)
	asJSON := fs.Bool("json", false, "print JSON")
	wait := fs.Duration("wait", 500*time.Millisecond, "how long to collect answers")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 1 || len(pos) == 1 && pos[0] != "ls" {
		fmt.Fprintf(env.Stderr, "skillbus tools: unknown subcommand %q (use ls or serve)\n\n%s", pos, toolsCommand().usage)
		return ExitUsage
	}
	return withConn(env, "tools", func(nc *nats.Conn) int {
		list, err := discoverTools(ctx, nc, *wait)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus tools: %v\n", err)
			return ExitFailure
		}
		if *asJSON {
			writeJSON(env.Stdout, list)
			return ExitOK
		}
		if len(list) == 0 {
			fmt.Fprintln(env.Stdout, "no tools are served on this NATS: start `skillbus tools serve`, `skillbus mcp -- CMD`, or `skillbus dev`")
			return ExitOK
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tPROVIDER\tINSTANCES\tDESCRIPTION")
		for _, t := range list {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.Tool, t.Provider, t.Instances, oneLine(t.Description, 90))
		}
		tw.Flush()
		return ExitOK
	})
}

// discoverTools asks every micro service for its info and returns the
// endpoints on tool.> sorted by tool and provider.
func discoverTools(ctx context.Context, nc *nats.Conn, wait time.Duration) ([]ToolInfo, error) {
	inbox := nc.NewRespInbox()
	ch := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$SRV.INFO", inbox, nil); err != nil {
		return nil, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	found := map[string]*ToolInfo{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			out := make([]ToolInfo, 0, len(found))
			for _, t := range found {
				out = append(out, *t)
			}
			sort.Slice(out, func(i, j int) bool {
				if out[i].Tool != out[j].Tool {
					return out[i].Tool < out[j].Tool
				}
				return out[i].Provider < out[j].Provider
			})
			return out, nil
		case m := <-ch:
			var info micro.Info
			if json.Unmarshal(m.Data, &info) != nil {
				continue
			}
			for _, ep := range info.Endpoints {
				if !strings.HasPrefix(ep.Subject, events.ToolPrefix) {
					continue
				}
				name := strings.TrimPrefix(ep.Subject, events.ToolPrefix)
				key := name + "\x00" + info.Name
				t := found[key]
				if t == nil {
					t = &ToolInfo{Tool: name, Subject: ep.Subject, Provider: info.Name, Description: ep.Metadata["description"]}
					if s := ep.Metadata["schema"]; s != "" && json.Valid([]byte(s)) {
						t.Schema = json.RawMessage(s)
					}
					found[key] = t
				}
				t.Instances++
			}
		}
	}
}

func runToolsServe(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "tools serve", toolsCommand)
	root := fs.String("root", ".", "the tools' root directory")
	var allow stringList
	allow.split = true
	fs.Var(&allow, "allow-cmd", "commands cmd.run may run")
	maxRead := fs.Int("max-read", builtin.DefaultMaxReadBytes, "fs.read limit in bytes")
	cmdTimeout := fs.Duration("cmd-timeout", builtin.DefaultCommandTimeout, "longest cmd.run")
	maxOutput := fs.Int("max-output", builtin.DefaultMaxOutputBytes, "cmd.run output cap per stream")
	name := fs.String("name", "skillbus-builtin", "micro service name")
	var sf serveFlags // --health-addr, --shutdown-budget, logs; SKILLBUS_* (natsclient.go)
	sf.register(fs)
	pos, err := sf.parse(env, fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "skillbus tools serve: unexpected argument %q (the root is given with --root)\n", pos[0])
		return ExitUsage
	}
	p, err := builtin.New(builtin.Config{Root: *root, AllowCommands: allow.values, MaxReadBytes: *maxRead, CommandTimeout: *cmdTimeout, MaxOutputBytes: *maxOutput})
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus tools serve: %v\n", err)
		return ExitUsage
	}
	// The root is closed after the connection is drained (serveService), so
	// a call still in flight never finds it closed.
	defer p.Close()
	return serveService(ctx, env, "tools serve", &sf, func(_ context.Context, nc *nats.Conn, _ func(error)) (func(context.Context) error, error) {
		srv, err := tool.Serve(nc, tool.ServerConfig{Name: *name, Version: version.String(), Description: "skillbus built-in tools rooted at " + p.Root()}, p.Tools()...)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0)
		for _, t := range p.Tools() {
			names = append(names, t.Name)
		}
		fmt.Fprintf(env.Stdout, "serving %s on tool.<name> (root %s); Ctrl-C to stop\n", strings.Join(names, ", "), p.Root())
		return srv.Stop, nil
	})
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/errtext"
	"github.com/skillbus/skillbus/internal/servicecmd"
	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/tool"
)

func toolsCommand() command {
	return command{
		summary: "list the tools served on NATS, or serve the built-in tools",
		usage: `Usage: skillbus tools [ls] [-o json|yaml|wide] [--wait DURATION]
       skillbus tools serve [--root DIR] [--allow-cmd NAMES] [flags]

ls (the default) discovers the tool providers through NATS micro ($SRV.INFO):
every endpoint on tool.<name>, with its provider, where it runs (its --site,
else the NATS server it is connected to: an edge site's leaf server,
docs/edge.md), the number of instances answering there and its
description; -o wide adds the server, the subject and the arguments
(name? for an optional one), -o json or -o yaml (--json) each argument
schema as well. When
instances of one tool disagree — different roots, allow-lists, versions or
schemas, so calls go to either at random — it says so on stderr and marks
them "(disagree)". serve warns the same way when it joins such instances.

serve runs the built-in tool provider until Ctrl-C:
  fs.list fs.stat fs.read fs.glob fs.grep fs.lines   files under --root only:
        absolute paths, .. above the root and symlinks leading out are refused
  text.render                                        a Go text/template
  cmd.run                                            only with --allow-cmd: runs
        an allow-listed command (no shell) with a timeout and an output cap
Replicas share calls (one queue group), so run as many as you like.

Flags of ls:
  --wait D             how long to wait for providers to answer discovery

Flags of serve:
  --root DIR           the directory the tools are confined to (default .)
  --allow-cmd NAMES    commands cmd.run may run, comma-separated (default none)
  --max-read BYTES     fs.read limit (default 262144)
  --cmd-timeout D      longest cmd.run (default 30s)
  --max-output BYTES   cmd.run stdout/stderr cap each (default 65536)
  --max-walk-entries N directory entries one fs.glob, fs.grep, fs.lines or
                       fs.list call may visit (default 100000)
  --max-walk-bytes BYTES
                       file bytes one fs.grep or fs.lines call may read
                       (default 67108864)
  --name NAME          the micro service name (default skillbus-builtin)
  --prefix P           serve the tools as P.fs.read, P.fs.list, ... so providers
                       with different roots can share one bus
  --site SITE          the edge site this provider runs at, shown by skillbus
                       tools (default none: the NATS server's name is shown)
  --health-addr ADDR   serve /livez, /readyz and /metrics on ADDR (e.g. :8080)
  --shutdown-budget D  the whole graceful shutdown at SIGTERM (default 25s)
  --log-json           log JSON lines
  --log-level LEVEL    debug, info, warn or error (default info)
serve runs like the skillbus services (docs/operations.md): it waits for NATS
at start, reconnects for ever, exits 1 if its connection is closed for good,
and takes every flag from SKILLBUS_<FLAG> too (SKILLBUS_HEALTH_ADDR=:8080).

Examples:
  skillbus tools
  skillbus tools --json | jq '.[].tool'
  skillbus tools serve --root ~/src/myproject --allow-cmd git,go
  skillbus tools serve --prefix home --site home --context auth/contexts/edge-home.json

Exit codes: 0 success, 1 NATS unreachable or serving failed, 2 bad command line.
Needs NATS_URL.
`,
		run: runTools,
		subs: func() map[string]command {
			ls := toolsCommand()
			ls.subs = nil
			serve := ls
			serve.summary, serve.run = "serve the built-in tools (fs.*, text.render, cmd.run)", runToolsServe
			ls.summary = "list the tools served on NATS"
			return map[string]command{"ls": ls, "serve": serve}
		},
	}
}

// ToolInfo is one tool found by `skillbus tools`: one per tool and
// provider (micro service name), with the number of instances answering.
type ToolInfo struct {
	Tool        string          `json:"tool"`
	Subject     string          `json:"subject"`
	Provider    string          `json:"provider"`
	Instances   int             `json:"instances"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	// Site and Server are where these instances run: the provider's
	// --site (tool.MetadataSite) and the NATS server its connection was
	// on (tool.MetadataServer; at an edge site, the site's leaf server).
	Site   string `json:"site,omitempty"`
	Server string `json:"server,omitempty"`
	// Disagree is true when the instances serving this tool (of any
	// provider) have different configurations or schemas: calls go to
	// either at random.
	Disagree bool `json:"disagree,omitempty"`
}

func runTools(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "tools", toolsCommand)
	out := outputFlags(fs, "json", "yaml", "wide")
	wait := fs.Duration("wait", 500*time.Millisecond, "how long to collect answers")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		return unknownSubcommand(env, "tools", pos, []string{"ls", "serve"}, "ls and serve")
	}
	return withConn(env, "tools", func(nc *nats.Conn) int {
		eps, err := tool.Discover(ctx, nc, *wait)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus tools: %v\n", err)
			return ExitFailure
		}
		conflicts := tool.Conflicts(eps)
		list := toolInfos(eps, conflicts)
		for _, c := range conflicts {
			fmt.Fprintf(env.Stderr, "skillbus tools: warning: %s\n", c)
		}
		if out.Structured(env.Stdout, list) {
			return ExitOK
		}
		if len(list) == 0 {
			fmt.Fprintln(env.Stdout, "no tools are served on this NATS: start `skillbus tools serve`, `skillbus mcp -- CMD`, or `skillbus dev`")
			return ExitOK
		}
		tw := newTable(env.Stdout)
		if out.Wide() {
			fmt.Fprintln(tw, "TOOL\tPROVIDER\tSITE\tSERVER\tINSTANCES\tSUBJECT\tARGUMENTS\tDESCRIPTION")
		} else {
			fmt.Fprintln(tw, "TOOL\tPROVIDER\tSITE\tINSTANCES\tDESCRIPTION")
		}
		for _, t := range list {
			inst := strconv.Itoa(t.Instances)
			if t.Disagree {
				inst += " (disagree)"
			}
			site := termSafe(t.Site)
			if site == "" {
				site = orDash(termSafe(t.Server))
			}
			if out.Wide() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Tool, t.Provider, orDash(termSafe(t.Site)), orDash(termSafe(t.Server)), inst, t.Subject, schemaArgs(t.Schema), oneLine(t.Description, 200))
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Tool, t.Provider, site, inst, oneLine(t.Description, 90))
		}
		tw.Flush()
		return ExitOK
	})
}

// schemaArgs lists the arguments of a tool's JSON Schema (an object's
// properties) for a table: required ones by name, optional ones with a "?"
// ("path, max_bytes?"); "-" when the schema says nothing about them.
func schemaArgs(schema json.RawMessage) string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return "-"
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		if !slices.Contains(s.Required, n) {
			names[i] = n + "?"
		}
	}
	return strings.Join(names, ", ")
}

// checkSite reports a --site that is not up to 64 letters, digits, '-',
// '_' and '.' (it is shown in tables and kept in micro metadata).
func checkSite(site string) error {
	if len(site) > 64 {
		return fmt.Errorf("--site %.20q... is %d bytes; want at most 64", site, len(site))
	}
	for _, c := range site {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("--site %q: use letters, digits, '-', '_' and '.' (the site's name, as in skillbus auth --edge)", site)
		}
	}
	return nil
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// toolInfos groups discovered endpoints by tool, provider and where they
// run (site and server).
func toolInfos(eps []tool.Endpoint, conflicts []tool.Conflict) []ToolInfo {
	disagree := map[string]bool{}
	for _, c := range conflicts {
		disagree[c.Tool] = true
	}
	var out []ToolInfo
	index := map[string]int{}
	for _, e := range eps { // sorted by tool and provider
		key := e.Tool + "\x00" + e.Provider + "\x00" + e.Site + "\x00" + e.Server
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, ToolInfo{Tool: e.Tool, Subject: e.Subject, Provider: e.Provider, Description: e.Description, Schema: e.Schema, Site: e.Site, Server: e.Server, Disagree: disagree[e.Tool]})
		}
		out[i].Instances++
	}
	if out == nil {
		out = []ToolInfo{}
	}
	return out
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
	maxWalkEntries := fs.Int("max-walk-entries", builtin.DefaultMaxWalkEntries, "directory entries one walk may visit")
	maxWalkBytes := fs.Int("max-walk-bytes", builtin.DefaultMaxWalkBytes, "file bytes one fs.grep or fs.lines may read")
	name := fs.String("name", "skillbus-builtin", "micro service name")
	prefix := fs.String("prefix", "", "put P. before every tool name")
	site := fs.String("site", "", "the edge site this provider runs at")
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
	if err := checkSite(*site); err != nil {
		fmt.Fprintf(env.Stderr, "skillbus tools serve: %v\n", err)
		return ExitUsage
	}
	cfg := builtin.Config{Root: *root, AllowCommands: allow.values, MaxReadBytes: *maxRead, CommandTimeout: *cmdTimeout, MaxOutputBytes: *maxOutput, MaxWalkEntries: *maxWalkEntries, MaxWalkBytes: *maxWalkBytes, Prefix: *prefix}
	if code := checkBuiltin(env, "tools serve", "root", cfg); code >= 0 {
		return code
	}
	p, err := builtin.New(cfg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus tools serve: --root %s: %s\n", *root, errtext.Error(err))
		return ExitFailure
	}
	// The root is closed after the connection is drained (serveService), so
	// a call still in flight never finds it closed.
	defer p.Close()
	return serveService(ctx, env, "tools serve", &sf, func(ctx context.Context, rt servicecmd.Runtime) (func(context.Context) error, error) {
		srv, err := tool.Serve(rt.Conn, tool.ServerConfig{Name: *name, Version: version.String(), Description: "skillbus built-in tools rooted at " + p.Root(), Metadata: p.Metadata(), Site: *site, Meters: rt.Meters}, p.Tools()...)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0)
		for _, t := range p.Tools() {
			names = append(names, t.Name)
		}
		fmt.Fprintf(env.Stdout, "serving %s on tool.<name> (root %s); Ctrl-C to stop\n", strings.Join(names, ", "), p.Root())
		warnConflicts(ctx, env, "tools serve", srv)
		return srv.Stop, nil
	})
}

// warnConflicts prints a warning on stderr for each tool of srv that other
// instances on the bus serve with a different configuration or schema.
func warnConflicts(ctx context.Context, env Env, command string, srv *tool.Server) {
	conflicts, err := srv.Conflicts(ctx, 500*time.Millisecond)
	if err != nil {
		return // stopping, or NATS gone: nothing to compare
	}
	for _, c := range conflicts {
		fmt.Fprintf(env.Stderr, "skillbus %s: warning: %s\n", command, c)
	}
}

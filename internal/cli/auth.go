package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skillbus/skillbus/internal/auth"
)

func authCommand() command {
	return command{
		summary: "generate NATS users with least-privilege permissions, their creds and a server configuration",
		usage: `Usage: skillbus auth [--dir DIR] [--tool-prefix P]... [--edge SITE]... [--console-calls-tools] [--rotate] [-o files|k8s] [flags]

Creates, or brings up to date, a locked-down NATS setup for skillbus in DIR
(docs/security.md): an operator, the skillbus account (JetStream on, with
limits), the system account, and one user per role, each allowed exactly
the subjects its role needs:

  registry, seqworker, skillface   the services
  tools                            the built-in tools (tool.fs.>, tool.text.>, tool.cmd.>)
  tools-P                          a tool provider for --tool-prefix P (tool.P.> only)
  edge-SITE                        the leaf node connection of an edge site (--edge SITE):
                                   its leaf server carries the calls of tool.SITE.> only
  agent                            an agent runtime: runs, prompt assembly, seq_create
  runner                           starts, watches and cancels runs (skillbus.seq.* only)
  reader                           lists and reads; starts nothing
  console                          the web console (skillbus ui, skillbus dev --auth): watches
                                   runs live, starts, cancels and re-runs them; calls tools
                                   only with --console-calls-tools

It writes DIR/creds/ROLE.creds (0600), nats CLI contexts DIR/contexts/ROLE.json,
and the server configuration: DIR/auth.conf (operator mode, MEMORY resolver
with the accounts preloaded; include it from your nats-server.conf) and a
complete DIR/nats-server.conf. For each edge site (docs/edge.md) it writes
DIR/edge/SITE/leafnodes.conf (the remote that dials the hub with the site's
creds) and DIR/edge/SITE/leaf.conf (a whole leaf server for the site), and
nats-server.conf listens for leaf nodes on 7422. Re-running keeps every key and
changes no file unless something changed; the tool prefixes and edge sites of
earlier runs are kept.

Flags:
  --dir DIR             where the keys, creds and configuration live
                        (default $XDG_CONFIG_HOME/skillbus/auth or ~/.config/skillbus/auth)
  --tool-prefix P       add a tool provider role for tools named P.* (repeatable)
  --drop-tool-prefix P  remove that role: its user is revoked (repeatable)
  --edge SITE           add an edge site: a leaf server there serves tool.SITE.>
                        (repeatable; docs/edge.md)
  --drop-edge SITE      remove that site: its user is revoked (repeatable)
  --leaf-url URLS       the hub's leaf node URL(s) the sites dial (default
                        nats-leaf://HOST:7422 for each host of --url, or the last run's)
  --console-calls-tools let the console role publish on tool.>, so the
                        console's Tools page can call tools directly (a
                        direct call is not a run: no record in RUNS or
                        EVENTS); --console-calls-tools=false takes it back.
                        Kept for later runs (default: the last run's, else off)
  --rotate              new keys for every user and a new account signing key:
                        all earlier creds stop working once the servers load
                        the new auth.conf (reload or restart them)
  -o files|k8s          files (default): write DIR only; k8s: also print the
                        creds and auth.conf as Kubernetes Secrets
                        (skillbus-ROLE-creds, skillbus-nats-auth) on stdout
  --namespace NS        namespace of the Secrets (default: none, use kubectl -n)
  --url URLS            server URL(s) written into the contexts
                        (default nats://127.0.0.1:4222, or the last run's)
  --account NAME        the account's name (default SKILLBUS)
  --max-disk BYTES      JetStream file storage of the account (default -1:
                        the server's max_file_store); sizes as 8G, 512M
  --max-memory BYTES    JetStream memory storage (default 1G)
  --max-streams N       streams (default 32; skillbus uses 7)
  --max-consumers N     consumers (default 10000)
  --max-conns N         client connections (default -1: unlimited)

Examples:
  skillbus auth --dir ./auth
  nats-server -c ./auth/nats-server.conf
  NATS_URL=nats://127.0.0.1:4222 NATS_CREDS=./auth/creds/runner.creds skillbus run project-survey --arg root=.
  skillbus runs ls --context ./auth/contexts/reader.json
  skillbus ui --creds ./auth/creds/console.creds
  skillbus auth --dir ./auth --tool-prefix web -o k8s --namespace skillbus | kubectl apply -f -
  skillbus auth --dir ./auth --edge home --leaf-url nats-leaf://hub.example.com:7422
  nats-server -c ./auth/edge/home/leaf.conf          # at the site

Exit codes: 0 written, 1 a key file cannot be used or a file cannot be
written, 2 bad command line.
`,
		run: runAuth,
	}
}

// defaultAuthDir is where `skillbus auth` keeps its setup.
func defaultAuthDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "skillbus", "auth")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".config", "skillbus", "auth")
	}
	return "skillbus-auth"
}

func runAuth(ctx context.Context, env Env, args []string) int {
	fs := newFlags(env, "auth", authCommand)
	dir := fs.String("dir", defaultAuthDir(), "directory of the setup")
	var add, drop stringList
	fs.Var(&add, "tool-prefix", "add a tool provider role")
	fs.Var(&drop, "drop-tool-prefix", "remove a tool provider role")
	var edges, dropEdges stringList
	fs.Var(&edges, "edge", "add an edge site")
	fs.Var(&dropEdges, "drop-edge", "remove an edge site")
	leafURL := fs.String("leaf-url", "", "the hub's leaf node URL(s)")
	rotate := fs.Bool("rotate", false, "new user keys and signing key")
	callsTools := fs.Bool(strings.TrimPrefix(auth.ConsoleCallsToolsFlag, "--"), false, "let the console role call tools")
	output := choiceFlag(fs, "o", "files", "files or k8s", "files", "k8s")
	namespace := fs.String("namespace", "", "namespace of the Secrets")
	url := fs.String("url", "", "server URL(s) for the contexts")
	account := fs.String("account", "", "account name")
	var lim auth.Limits
	sizes := []struct {
		name string
		v    *int64
	}{{"max-disk", &lim.DiskBytes}, {"max-memory", &lim.MemoryBytes}, {"max-streams", &lim.Streams}, {"max-consumers", &lim.Consumers}, {"max-conns", &lim.Connections}}
	for _, s := range sizes {
		fs.Func(s.name, "limit", func(v string) error {
			n, err := parseSize(v, s.name == "max-disk" || s.name == "max-memory")
			if err != nil {
				return err
			}
			*s.v = n
			return nil
		})
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(env.Stderr, "skillbus auth: unexpected argument %q (give the directory with --dir)\n", pos[0])
		return ExitUsage
	}
	if *output != "files" && *output != "k8s" {
		fmt.Fprintf(env.Stderr, "skillbus auth: -o %q; want files or k8s\n", *output)
		return ExitUsage
	}
	if *namespace != "" && *output != "k8s" {
		fmt.Fprintf(env.Stderr, "skillbus auth: --namespace is the namespace of the Kubernetes Secrets, which only -o k8s prints; add -o k8s, or leave --namespace out\n")
		return ExitUsage
	}
	o := auth.Options{Dir: *dir, ToolPrefixes: add.values, DropToolPrefixes: drop.values, EdgeSites: edges.values, DropEdgeSites: dropEdges.values, LeafURL: *leafURL,
		Rotate: *rotate, URL: *url, Account: *account, Limits: lim}
	if given(fs, strings.TrimPrefix(auth.ConsoleCallsToolsFlag, "--")) {
		o.ConsoleCallsTools = callsTools // else the last run's choice
	}
	s, err := auth.Generate(o)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus auth: %v\n", err)
		if errors.Is(err, auth.ErrConfig) {
			return ExitUsage
		}
		return ExitFailure
	}
	report := env.Stdout
	if *output == "k8s" {
		out, err := s.K8sSecrets(*namespace)
		if err != nil {
			fmt.Fprintf(env.Stderr, "skillbus auth: %v\n", err)
			return ExitFailure
		}
		rawWriter(env.Stdout).Write(out) // a manifest, exact
		report = env.Stderr
	}
	printAuthSetup(report, s, *rotate)
	return ExitOK
}

// printAuthSetup tells what was written and how to use it.
func printAuthSetup(w interface{ Write([]byte) (int, error) }, s *auth.Setup, rotated bool) {
	changed := "nothing changed"
	if n := len(s.Changed); n > 0 {
		changed = fmt.Sprintf("%d file(s) written", n)
	}
	fmt.Fprintf(w, "skillbus auth: %s (%s)\n", s.Dir, changed)
	var names []string
	for _, r := range s.Roles {
		names = append(names, r.Name)
	}
	fmt.Fprintf(w, "  roles:   %s\n", strings.Join(names, " "))
	fmt.Fprintf(w, "  creds:   %s\n", filepath.Join(s.Dir, "creds", "ROLE.creds"))
	fmt.Fprintf(w, "  server:  nats-server -c %s   (or include %s from your configuration)\n", s.ServerConfig(), s.AuthConfig())
	fmt.Fprintf(w, "  use:     NATS_CREDS=%s skillbus runs ls   (or --context %s)\n", s.CredsFile(auth.RoleReader), s.ContextFile(auth.RoleReader))
	calls := "may not call tools directly; " + auth.ConsoleCallsToolsFlag + " lets it"
	if s.ConsoleCallsTools {
		calls = "may call tools directly; " + auth.ConsoleCallsToolsFlag + "=false takes it back"
	}
	fmt.Fprintf(w, "  console: skillbus ui --creds %s   (the web console %s)\n", s.CredsFile(auth.RoleConsole), calls)
	for _, site := range s.EdgeSites() {
		fmt.Fprintf(w, "  edge:    %s: at the site, nats-server -c %s (dials %s);\n", site, s.LeafConfig(site), s.LeafURL)
		fmt.Fprintf(w, "           then skillbus tools serve --prefix %s --site %s --context %s\n", site, site, s.ContextFile(auth.EdgeRole(site)))
	}
	for _, pub := range s.Revoked {
		fmt.Fprintf(w, "  revoked: %s\n", pub)
	}
	if rotated {
		fmt.Fprintln(w, "  rotated: reload the NATS servers with the new auth.conf (nats-server --signal reload), then give every service its new creds")
	} else if len(s.Changed) > 0 && containsAuthConf(s.Changed) {
		fmt.Fprintln(w, "  the server configuration changed: reload the NATS servers (nats-server --signal reload)")
	}
}

func containsAuthConf(files []string) bool {
	for _, f := range files {
		if f == auth.AuthConfFile {
			return true
		}
	}
	return false
}

// parseSize reads a count, or with bytes a size with an optional K, M, G
// or T suffix (powers of 1024; KB, KiB and so on accepted); -1 is
// unlimited.
func parseSize(v string, bytes bool) (int64, error) {
	s := strings.TrimSpace(v)
	if s == "-1" {
		return -1, nil
	}
	mult := int64(1)
	if bytes {
		u := strings.ToUpper(s)
		for _, suf := range []struct {
			s string
			m int64
		}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
			if strings.HasSuffix(u, suf.s) {
				s, mult = strings.TrimSpace(s[:len(s)-len(suf.s)]), suf.m
				break
			}
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > (1<<62)/mult {
		what := "a whole number of at least 1, or -1 for unlimited"
		if bytes {
			what = "a size such as 8G, 512M or 1048576, or -1 for unlimited"
		}
		return 0, fmt.Errorf("%q: want %s", v, what)
	}
	return n * mult, nil
}

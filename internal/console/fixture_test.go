package console_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/console"
	"github.com/skillbus/skillbus/internal/devstack"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/tool"
)

// The definitions every console test loads: a sequence of four groups
// (parallel calls, a slow call, a skipped group, a report), a long one to
// cancel, and three skills (a trigger, a path, a warning).
var fixture = map[string]string{
	"sequences/console-demo.seq.yaml": `name: console-demo
description: A demo for the console tests.
groups:
  - name: demo-list
    in: {root: string}
    out: {top: object, lines: object}
    tools:
      - {tool: fs.list, args: {path: $args.root}, as: top}
      - {tool: fs.lines, args: {path: $args.root}, as: lines}
  - name: demo-wait
    in: {wait_ms: integer}
    out: {waited: object}
    tools:
      - {tool: test.sleep, args: {ms: $args.wait_ms}, as: waited}
  - name: demo-never
    in: {top: object}
    out: {never: object}
    when: $args.top == null
    tools:
      - {tool: fs.stat, args: {path: "."}, as: never}
  - name: demo-report
    in: {top: object, waited: object}
    out: {report: string}
    tools:
      - tool: text.render
        args:
          template: "{{len .top.entries}} entries, waited {{.waited.ms}} ms"
          data: {top: $args.top, waited: $args.waited}
        as: report
`,
	"sequences/console-long.seq.yaml": `name: console-long
description: One long call, to cancel.
groups:
  - name: long-wait
    in: {ms: integer}
    out: {slept: object}
    timeout: 10m
    tools:
      - {tool: test.sleep, args: {ms: $args.ms}, as: slept}
`,
	"sequences/console-nightly.seq.yaml": `name: console-nightly
description: A scheduled sequence.
schedule: "0 0 3 * * *"
timezone: Europe/Berlin
groups:
  - name: nightly-stat
    out: {st: object}
    tools:
      - {tool: fs.stat, args: {path: "."}, as: st}
`,
	"skills/deploy-helper/SKILL.md": `---
name: deploy-helper
description: Deploy a service and check its rollout.
triggers: [deploy, rollout]
allowed-tools: Read, Bash(kubectl:*)
---
# Deploy helper

Check the manifests first.

## Rollout

Run kubectl rollout status.

## Rollback

Run kubectl rollout undo when it is unhealthy.
`,
	"skills/pdf-forms/SKILL.md": `---
name: pdf-forms
description: Read and fill PDF forms.
paths: ["**/*.pdf"]
disallowed-tools: [WebFetch]
---
# PDF forms

Open the file first.
`,
	"skills/typo-skill/SKILL.md": `---
name: typo-skill
description: A skill with a misspelt field.
allowed_tools: Read
triggers: [typo]
---
Body.
`,
	"work/README.md":   "# A project\n\nText.\n",
	"work/src/main.go": "package main\n\nfunc main() {}\n",
}

// env is a running dev stack with the console and the test tools.
type env struct {
	stack   *devstack.Stack
	console *console.Server
	nc      *nats.Conn
	runs    *client.Client
	url     string // the console's URL, ending in /
	token   string
}

// sleepArgs are test.sleep's arguments.
type sleepArgs struct {
	MS int `json:"ms"`
}

// start starts the stack on t.TempDir() with the fixture, the test tools
// (test.sleep) and a console on 127.0.0.1:0 with cfg.
func start(t *testing.T, cfg console.Config) *env {
	t.Helper()
	dir := t.TempDir()
	for name, text := range fixture {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The repository's project-survey too (read in place), for a run
	// page worth a screenshot.
	wantSeqs := 3
	if b, err := os.ReadFile("../../examples/sequences/project-survey.seq.yaml"); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "sequences", "project-survey.seq.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		wantSeqs++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stack, err := devstack.Start(ctx, devstack.Config{Dir: dir, Tools: builtin.Config{Root: filepath.Join(dir, "work")}})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{stack: stack}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer scancel()
		if e.console != nil {
			_ = e.console.Stop(sctx)
		}
		if e.nc != nil {
			e.nc.Close()
		}
		_ = stack.Stop(sctx)
	})
	e.nc, err = nats.Connect(stack.URL(), nats.Name("console test"))
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := tool.SchemaFor[sleepArgs]()
	tsrv, err := tool.Serve(e.nc, tool.ServerConfig{Name: "console-test-tools", Version: "1.0.0"}, tool.Tool{
		Name: "test.sleep", Description: "Sleep for ms milliseconds (or until the call is cancelled).", Schema: schema,
		Func: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a sleepArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, tool.Errorf("400", "%v", err)
			}
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
				return map[string]int{"ms": a.MS}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A call still sleeping (a cancelled run's) is cancelled after 1 s.
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		defer scancel()
		_ = tsrv.Stop(sctx)
	})
	e.runs, err = client.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.NATSURL = stack.URL()
	cfg.User = "console test"
	e.console, err = console.New(e.nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.console.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.url = e.console.URL()
	e.token = cfg.Token
	waitStored(t, e, wantSeqs)
	return e
}

// waitStored waits until the registry serves the fixture's sequences and
// skills.
func waitStored(t *testing.T, e *env, wantSeqs int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var seqs struct {
			Sequences []struct{ Name string } `json:"sequences"`
		}
		var skills struct {
			Skills []struct{ Name string } `json:"skills"`
		}
		err1 := getJSONAuth(e.url+"api/seqs", e.token, &seqs)
		err2 := getJSONAuth(e.url+"api/skills", e.token, &skills)
		if err1 == nil && err2 == nil && len(seqs.Sequences) == wantSeqs && len(skills.Skills) == 3 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not store the fixture in 30 s: %v %v %+v %+v", err1, err2, seqs, skills)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

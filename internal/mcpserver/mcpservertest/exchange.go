// Package mcpservertest is the conformance exchange of `skillbus mcp
// serve`, run by the tests of internal/mcpserver (in memory and over
// streamable HTTP) and of the command line (a child process over stdio,
// and over HTTP): a model-style exchange through the official MCP Go
// SDK's client against a real skillbus.
package mcpservertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillbus/skillbus/pkg/seq"
)

// Handbook is a skill long enough to have sections, with a subsection.
const Handbook = `---
name: handbook
description: How to release the service, step by step.
when_to_use: When the user asks to ship or release.
allowed-tools: "fs.read fs.list"
---
# Handbook

Read the whole handbook before a release.

## Install steps

Run the installer.

### Offline install

Copy the bundle to the host first.

## Rollback

Revert the last release.
`

// quietSkill is a model-only skill: a resource, but no prompt.
const quietSkill = `---
name: quiet
description: Background conventions the model applies on its own.
user-invocable: false
---
# Quiet

Use tabs.
`

// surveySeq is a stored sequence of two groups over the built-in tools.
const surveySeq = `name: tree-survey
description: List the root and count lines, then render a line.
groups:
  - name: tree-look
    in: {root: string}
    out: {top: object, languages: object}
    tools:
      - {tool: fs.list, args: {path: $args.root}, as: top}
      - {tool: fs.lines, args: {path: $args.root}, as: languages}
  - name: tree-say
    in: {top: object}
    out: {line: string}
    tools:
      - tool: text.render
        args: {template: "{{len .top.entries}} entries", data: {top: $args.top}}
        as: line
`

// readme is the README of the tools' root (25 bytes).
const readme = "# Demo\n\nA small project.\n"

// ModelSequence is a sequence in the JSON form as a model writes it: one
// string, with the tools string inside.
const ModelSequence = `{"name": "readme-brief", "description": "Read the README, then count its lines.",
 "groups": [
  {"name": "brief-read", "in": {"path": "string"}, "out": {"readme": "object"},
   "tools": "{\"tool\":\"fs.read\",\"args\":{\"path\":\"$args.path\"},\"as\":\"readme\"};"},
  {"name": "brief-say", "in": {"readme": "object"}, "out": {"summary": "string"},
   "tools": "{\"tool\":\"text.render\",\"args\":{\"template\":\"README of {{.r.size}} bytes; done\",\"data\":{\"r\":\"$args.readme\"}},\"as\":\"summary\"};"}
 ]}`

// Fixture writes the definitions directory (skills and a sequence) and
// the built-in tools' root, and returns both.
func Fixture(t *testing.T) (defs, root string) {
	t.Helper()
	defs, root = t.TempDir(), t.TempDir()
	write(t, filepath.Join(defs, "skills", "handbook", "SKILL.md"), Handbook)
	write(t, filepath.Join(defs, "skills", "quiet", "SKILL.md"), quietSkill)
	write(t, filepath.Join(defs, "flows", "tree-survey.seq.yaml"), surveySeq)
	write(t, filepath.Join(root, "README.md"), readme)
	write(t, filepath.Join(root, "main.go"), "package main\n\nfunc main() {}\n")
	return defs, root
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Recorder keeps the notifications a client received.
type Recorder struct {
	mu       sync.Mutex
	progress []string
	changed  []string // "prompts", "resources", "tools", "updated:URI"
}

func (r *Recorder) add(list *[]string, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*list = append(*list, s)
}

// Progress returns the progress messages received so far.
func (r *Recorder) Progress() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.progress)
}

// Changed returns the list-changed and resource-updated notifications
// received so far.
func (r *Recorder) Changed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.changed)
}

// NewClient returns an SDK client recording its notifications in r.
func NewClient(r *Recorder) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "skillbus-conformance", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.add(&r.progress, req.Params.Message)
		},
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { r.add(&r.changed, "prompts") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { r.add(&r.changed, "resources") },
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { r.add(&r.changed, "tools") },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			r.add(&r.changed, "updated:"+req.Params.URI)
		},
	})
}

// ModelTools are the tools every server serves; ReadOnlyTools those of
// --read-only.
var (
	ModelTools    = []string{"schedule_list", "schedule_pause", "schedule_trigger", "schedule_unpause", "seq_call", "seq_cancel", "seq_create", "seq_delete", "seq_list", "seq_retry", "seq_run", "seq_show", "seq_signal", "seq_status", "skill_info", "skill_list"}
	ReadOnlyTools = []string{"schedule_list", "seq_list", "seq_show", "seq_status", "skill_info", "skill_list"}
)

// Call calls a tool with arguments given as JSON text (a model's output)
// and returns its result; a protocol error fails the test.
func Call(t *testing.T, cs *mcp.ClientSession, tool, args string) *mcp.CallToolResult {
	t.Helper()
	return CallWith(t, cs, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
}

// CallWith is Call with the whole parameters.
func CallWith(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", p.Name, err)
	}
	return res
}

// Text returns the text content of a result.
func Text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Structured decodes a result's structured content into v.
func Structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// Eventually waits until cond holds (up to 30 s on a loaded machine).
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Exchange runs the model-style exchange against a session of a server
// serving defs (from Fixture) with the built-in tools on root: list the
// tools, create a sequence from the JSON a model writes, run it with
// progress, read the result, read a skill section, get a prompt, read the
// resources, and see list-changed and resource-updated notifications
// after file edits.
func Exchange(t *testing.T, cs *mcp.ClientSession, r *Recorder, defs string) {
	ctx := context.Background()

	// The tools, each with a schema and a description a model can use.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		schema, _ := json.Marshal(tl.InputSchema)
		if !strings.Contains(string(schema), `"type":"object"`) || !strings.Contains(tl.Description, "Example") {
			t.Errorf("tool %s: schema %s, description %q; want an object schema and an example", tl.Name, schema, tl.Description)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, ModelTools) {
		t.Fatalf("tools = %v; want %v", names, ModelTools)
	}

	// Create a sequence from the JSON a model writes.
	res := Call(t, cs, "seq_create", ModelSequence)
	if res.IsError || !strings.Contains(Text(res), "(path: string)") || !strings.Contains(Text(res), `seq_run {"sequence": "readme-brief"`) {
		t.Fatalf("seq_create: error=%v %q; want the signature (path: string) and how to run it", res.IsError, Text(res))
	}
	// An invalid one: every problem, located, in one answer.
	res = Call(t, cs, "seq_create", `{"name": "broken", "groups": [{"name": "b1", "timeout": "soon", "on_error": "sometimes", "tools": "{\"tool\":\"fs.read\"}"}]}`)
	for _, want := range []string{"problem(s)", `group 1 "b1": timeout`, `on_error`, "tools", "call seq_create again"} {
		if !res.IsError || !strings.Contains(Text(res), want) {
			t.Errorf("seq_create(invalid): error=%v %q; want an error mentioning %q", res.IsError, Text(res), want)
		}
	}

	// Run it, with a progress token: one notification per finished group.
	res = CallWith(t, cs, &mcp.CallToolParams{Name: "seq_run", Arguments: json.RawMessage(`{"sequence": "readme-brief", "args": {"path": "README.md"}, "wait_seconds": 120}`),
		Meta: mcp.Meta{"progressToken": "run-1"}})
	var run struct {
		RunID   string                     `json:"run_id"`
		Status  string                     `json:"status"`
		Outputs map[string]json.RawMessage `json:"outputs"`
	}
	Structured(t, res, &run)
	if res.IsError || run.Status != "succeeded" || string(run.Outputs["summary"]) != fmt.Sprintf(`"README of %d bytes; done"`, len(readme)) {
		t.Fatalf("seq_run: error=%v status %q outputs %s; text %q", res.IsError, run.Status, run.Outputs["summary"], Text(res))
	}
	if !strings.Contains(Text(res), "brief-say: succeeded") || !strings.Contains(Text(res), fmt.Sprintf("README of %d bytes; done", len(readme))) {
		t.Errorf("seq_run text %q; want each group and the output", Text(res))
	}
	Eventually(t, "two progress notifications", func() bool { return len(r.Progress()) >= 2 })
	if p := r.Progress(); !strings.Contains(p[0], `group 1 of 2 "brief-read" succeeded`) || !strings.Contains(p[1], `group 2 of 2 "brief-say"`) {
		t.Errorf("progress = %q; want one message per group, in order", p)
	}
	// Read the result again, one output alone.
	res = Call(t, cs, "seq_status", `{"run_id": "`+run.RunID+`", "output": "readme"}`)
	var one struct {
		Outputs map[string]json.RawMessage `json:"outputs"`
	}
	Structured(t, res, &one)
	if res.IsError || len(one.Outputs) != 1 || !strings.Contains(string(one.Outputs["readme"]), "A small project.") {
		t.Errorf("seq_status(output readme): error=%v outputs %s; want the readme output alone", res.IsError, one.Outputs)
	}

	// A stored sequence: shown in the JSON form a model can store again.
	res = Call(t, cs, "seq_show", `{"name": "tree-survey"}`)
	var shown struct {
		Sequence json.RawMessage `json:"sequence"`
	}
	Structured(t, res, &shown)
	if q, err := seq.ParseJSON(shown.Sequence); res.IsError || err != nil || len(q.Groups) != 2 || q.Signature["root"] != "string" {
		t.Errorf("seq_show: the JSON form %s does not parse back (%v)", shown.Sequence, err)
	}
	res = Call(t, cs, "seq_call", `{"group": "tree-look", "args": {"root": "."}}`)
	if res.IsError || !strings.Contains(Text(res), "main.go") {
		t.Errorf("seq_call(tree-look): error=%v %q; want the listing with main.go", res.IsError, Text(res))
	}
	// An inline run that fails is an answer, with the failed call.
	res = Call(t, cs, "seq_run", `{"inline": {"name": "one-off", "groups": [{"name": "one-off-read", "tools": "{\"tool\":\"fs.read\",\"args\":{\"path\":\"../outside\"}};"}]}}`)
	if res.IsError || !strings.Contains(Text(res), "failed") || !strings.Contains(Text(res), "fs.read") {
		t.Errorf("seq_run(inline failing): error=%v %q; want a failed run naming the call", res.IsError, Text(res))
	}
	// Run arguments that do not fit the signature: refused before any run
	// starts, each named with the fix, as `skillbus run` and the console do.
	res = Call(t, cs, "seq_run", `{"sequence": "readme-brief", "args": {"path": 5, "colour": "red"}}`)
	for _, want := range []string{"the run was not started", `args.path: path is declared string; give a JSON string such as "text", not an integer 5`, `args.colour: unknown argument "colour"`} {
		if !res.IsError || !strings.Contains(Text(res), want) {
			t.Errorf("seq_run(wrong args) = error %v %q; want it to say %q", res.IsError, Text(res), want)
		}
	}
	res = Call(t, cs, "seq_run", `{"sequence": "readme-brief", "args": {}}`)
	if !res.IsError || !strings.Contains(Text(res), "args.path: missing: path is a run argument of type string") {
		t.Errorf("seq_run(missing args) = error %v %q; want the missing argument named", res.IsError, Text(res))
	}
	// Arguments a model gets wrong: every problem, with the fix.
	res = Call(t, cs, "seq_status", `{"runid": "x", "wait_seconds": "soon"}`)
	for _, want := range []string{`unknown argument "runid" (did you mean "run_id"?)`, `argument "run_id" is missing`, `"wait_seconds" must be an integer`, "seq_status takes:"} {
		if !res.IsError || !strings.Contains(Text(res), want) {
			t.Errorf("seq_status(bad args) = %q; want it to say %q", Text(res), want)
		}
	}

	// Skills: one section with its subsections, as the registry serves it.
	res = Call(t, cs, "skill_info", `{"name": "handbook", "section": "install steps"}`)
	if res.IsError || !strings.Contains(Text(res), "Run the installer") || !strings.Contains(Text(res), "Copy the bundle") || strings.Contains(Text(res), "Revert") {
		t.Errorf("skill_info(handbook, install steps) = %q; want the section and its subsection only", Text(res))
	}
	res = Call(t, cs, "skill_info", `{"name": "handbook", "section": "deploy"}`)
	if !res.IsError || !strings.Contains(Text(res), "Rollback") {
		t.Errorf("skill_info(unknown section) = %q; want an error listing the sections", Text(res))
	}

	// Prompts: the user-invocable skills, with task and section.
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "handbook" || len(prompts.Prompts[0].Arguments) != 2 {
		t.Fatalf("prompts = %+v; want handbook alone (quiet is model-only) with task and section", prompts.Prompts)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "handbook", Arguments: map[string]string{"task": "ship 2.0", "section": "rollback"}})
	if err != nil {
		t.Fatal(err)
	}
	text := got.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"Revert the last release", "Task: ship 2.0", "use only these tools: fs.read, fs.list"} {
		if !strings.Contains(text, want) || strings.Contains(text, "Run the installer") {
			t.Errorf("prompt handbook = %q; want %q and only the section", text, want)
		}
	}

	// Resources: every skill, and a section through the template.
	resources, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, rs := range resources.Resources {
		uris = append(uris, rs.URI)
	}
	slices.Sort(uris)
	if !slices.Equal(uris, []string{"skill://handbook", "skill://quiet"}) {
		t.Errorf("resources = %v", uris)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://handbook/Install%20steps"})
	if err != nil || !strings.Contains(read.Contents[0].Text, "Offline install") || strings.Contains(read.Contents[0].Text, "Rollback") {
		t.Errorf("read skill://handbook/Install%%20steps = %v, %v", read, err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "skill://handbook"}); err != nil {
		t.Fatal(err)
	}

	// Edits: a new skill is a new prompt and resource (list-changed); an
	// edited one is announced to its subscribers.
	write(t, filepath.Join(defs, "skills", "oncall", "SKILL.md"), "---\nname: oncall\ndescription: Take over the pager.\n---\n# Oncall\n\nAnswer pages.\n")
	Eventually(t, "prompts and resources list-changed after adding a skill", func() bool {
		c := r.Changed()
		return slices.Contains(c, "prompts") && slices.Contains(c, "resources")
	})
	prompts, err = cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 2 {
		t.Errorf("prompts after the edit = %+v, %v; want handbook and oncall", prompts, err)
	}
	write(t, filepath.Join(defs, "skills", "handbook", "SKILL.md"), strings.Replace(Handbook, "Revert the last release.", "Revert the last two releases.", 1))
	Eventually(t, "resource updated after editing the skill", func() bool { return slices.Contains(r.Changed(), "updated:skill://handbook") })
	read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "skill://handbook"})
	if err != nil || !strings.Contains(read.Contents[0].Text, "last two releases") {
		t.Errorf("read skill://handbook after the edit = %v, %v", read, err)
	}

	// Clean up what the model made.
	res = Call(t, cs, "seq_delete", `{"name": "readme-brief"}`)
	if res.IsError {
		t.Errorf("seq_delete: %q", Text(res))
	}
	res = Call(t, cs, "seq_delete", `{"name": "tree-survey"}`)
	if !res.IsError || !strings.Contains(Text(res), "tree-survey.seq.yaml") {
		t.Errorf("seq_delete(file sequence) = %q; want an error naming the file", Text(res))
	}
}

package integration

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestCLIRunProjectSurvey runs the README's main job — the project-survey
// example — with no NATS_URL (the in-process stack) on a real project tree
// and checks the report, the progress lines, the JSON form and that a root
// outside the tools' root is refused.
func TestCLIRunProjectSurvey(t *testing.T) {
	t.Setenv(cli.EnvNATSURL, "")
	proj := cliProject(t)
	file := cliRepoFile(t, "examples/sequences/project-survey.seq.yaml")

	code, out, errOut := cliRun(t, "run", file, "--arg", "root=.", "--tools-root", proj)
	if code != cli.ExitOK {
		t.Fatalf("run project-survey = %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"# Project survey of .",
		"| Go | 2 | 8 |",
		"| Markdown | 3 | 7 |",
		"| TypeScript | 1 | 1 |",
		"- go.mod",
		"2 found in 7 files searched",
		"- internal/w/w.go:3: // FIXME: too slow",
		"- main.go:3: // TODO: parse flags",
		"> Widgets for everyone.",
		"3 survey-report",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run project-survey stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, ".git") {
		t.Errorf("the report lists the hidden .git directory:\n%s", out)
	}
	for _, want := range []string{"✓ group 1/3 survey-inventory: succeeded", "    fs.grep → todos: succeeded", "✓ group 3/3 survey-report: succeeded", " succeeded in "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("run progress (stderr) lacks %q:\n%s", want, errOut)
		}
	}

	// A sub-directory, as JSON.
	code, out, errOut = cliRun(t, "run", file, "--arg", "root=internal", "--tools-root", proj, "--json", "--quiet")
	if code != cli.ExitOK || errOut != "" {
		t.Fatalf("run --json = %d, stderr %q", code, errOut)
	}
	var st events.RunState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("run --json output is not a run state: %v\n%s", err, out)
	}
	var langs struct{ Files, Lines int }
	json.Unmarshal(st.Slots["languages"], &langs)
	if st.Status != events.StatusSucceeded || langs.Files != 2 || langs.Lines != 5 || !strings.Contains(string(st.Slots["report"]), "no README.md in internal") {
		t.Errorf("run --json root=internal = status %s, languages %+v, report %s; want succeeded, 2 files, 5 lines, no README", st.Status, langs, st.Slots["report"])
	}
	var res seq.Result
	json.Unmarshal(st.Result, &res)
	if len(res.Groups) != 3 || res.Groups[1].Status != seq.GroupPartial || res.Groups[1].Calls[2].Status != seq.CallFailed || res.Groups[0].Duration <= 0 {
		t.Errorf("run result groups = %+v; want 3 groups, survey-details partial (README missing), durations measured", res.Groups)
	}

	// Escape attempts end the run with the tool's refusal.
	for _, root := range []string{"..", "/etc"} {
		code, _, errOut = cliRun(t, "run", file, "--arg", "root="+root, "--tools-root", proj, "--quiet")
		if code != cli.ExitFailure || !strings.Contains(errOut, "code 403") {
			t.Errorf("run root=%s = %d, %q; want 1 and a 403 refusal", root, code, errOut)
		}
	}
}

func TestCLIRunErrors(t *testing.T) {
	t.Setenv(cli.EnvNATSURL, "")
	dir := t.TempDir()
	survey := cliRepoFile(t, "examples/sequences/project-survey.seq.yaml")
	bad := filepath.Join(dir, "bad.seq.yaml")
	os.WriteFile(bad, []byte("name: bad\ngroups:\n  - name: g\n    tools:\n      - tool: x\n        args: {p: $args.nope}\n"), 0o644)
	typed := filepath.Join(dir, "typed.seq.yaml")
	os.WriteFile(typed, []byte("name: typed\ngroups:\n  - name: cli-typed\n    in: {n: integer, who: string}\n    tools:\n      - tool: text.render\n        args: {template: \"{{.n}} {{.who}}\", data: {n: $args.n, who: $args.who}}\n"), 0o644)
	badArgs := filepath.Join(dir, "bad-args.json")
	os.WriteFile(badArgs, []byte(`{"n": "5", "who": "a"}`), 0o644)
	fails := filepath.Join(dir, "fails.seq.yaml")
	os.WriteFile(fails, []byte("name: fails\ngroups:\n  - name: cli-read-missing\n    tools:\n      - tool: fs.read\n        args: {path: no-such-file.txt}\n"), 0o644)

	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no sequence", []string{"run"}, cli.ExitUsage, "give exactly one SEQUENCE"},
		{"missing file", []string{"run", "nope/x.seq.yaml"}, cli.ExitUsage, "no sequence file nope/x.seq.yaml"},
		{"stored name without NATS", []string{"run", "project-survey"}, cli.ExitUsage, "needs NATS_URL"},
		{"invalid sequence", []string{"run", bad}, cli.ExitFailure, `group 1 "g": tool 1 "x"`},
		{"unknown argument", []string{"run", survey, "--arg", "rot=."}, cli.ExitUsage, `unknown argument "rot"; the sequence takes (root: string)`},
		{"missing argument", []string{"run", survey}, cli.ExitUsage, "missing argument(s) root"},
		{"args file value of the wrong type", []string{"run", typed, "--args-file", badArgs}, cli.ExitUsage, "--args-file " + badArgs + `: line 1: n is declared integer; give a whole number such as 10, not a string "5"`},
		{"repeated --arg key", []string{"run", survey, "--arg", "root=a", "--arg", "root=b"}, cli.ExitUsage, `argument "root" is given more than once`},
		{"bad flag", []string{"run", survey, "--nope"}, cli.ExitUsage, "unknown flag --nope"},
		{"bad run id", []string{"run", survey, "--arg", "root=.", "--run-id", "a.b"}, cli.ExitUsage, "--run-id"},
		{"tool fails", []string{"run", fails, "--tools-root", dir}, cli.ExitFailure, `no file or directory "no-such-file.txt"`},
		{"missing tools root", []string{"run", survey, "--arg", "root=.", "--tools-root", filepath.Join(dir, "none")}, cli.ExitUsage, "--tools-root " + filepath.Join(dir, "none") + ": no such directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := cliRun(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("skillbus %q = %d, stderr %q; want %d and %q", tc.args, code, errOut, tc.code, tc.stderr)
			}
		})
	}
	// A failed run still prints its state with --json.
	code, out, _ := cliRun(t, "run", fails, "--tools-root", dir, "--json", "--quiet")
	var st events.RunState
	if code != cli.ExitFailure || json.Unmarshal([]byte(out), &st) != nil || st.Status != events.StatusFailed {
		t.Errorf("run failing --json = %d, %q; want 1 and a failed run state", code, out)
	}
}

// TestCLIRunArgsFileStdin runs a sequence (the in-process stack) with its
// arguments from standard input (--args-file -) and an --arg that replaces
// one of them: the --arg wins, and stderr says which file value it
// replaced and on which line. A file that gives a key twice is refused
// before anything starts, naming the key and both lines.
func TestCLIRunArgsFileStdin(t *testing.T) {
	t.Setenv(cli.EnvNATSURL, "")
	dir := t.TempDir()
	typed := filepath.Join(dir, "typed.seq.yaml")
	os.WriteFile(typed, []byte("name: typed\ngroups:\n  - name: cli-stdin\n    in: {n: integer, who: string}\n    out: {text: string}\n    tools:\n      - tool: text.render\n        args: {template: \"{{.n}} {{.who}}\", data: {n: $args.n, who: $args.who}}\n        as: text\n"), 0o644)
	run := func(stdin string, args ...string) (int, string, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var out, errb cliBuf
		code := cli.Main(ctx, args, strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errOut := run("{\n  \"n\": 1,\n  \"who\": \"file\"\n}\n", "run", typed, "--args-file", "-", "--arg", "who=flag", "--tools-root", dir, "--json", "--quiet")
	if code != cli.ExitOK {
		t.Fatalf("run --args-file - = %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var st events.RunState
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("run --json output is not a run state: %v\n%s", err, out)
	}
	if got := string(st.Slots["text"]); got != `"1 flag"` {
		t.Errorf("slot text = %s; want \"1 flag\" (n from standard input, who from --arg)", got)
	}
	if want := `skillbus run: note: --arg who=flag replaces "who": "file" from --args-file - (standard input) line 3 (--arg wins over --args-file)`; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q; want %q", errOut, want)
	}
	code, _, errOut = run("{\"n\": 1,\n \"who\": \"a\",\n \"n\": 2}", "run", typed, "--args-file", "-", "--tools-root", dir)
	if want := `skillbus run: --args-file - (standard input): line 3: the argument "n" is given twice (first at line 1); give each argument once`; code != cli.ExitUsage || !strings.Contains(errOut, want) {
		t.Errorf("run with a key twice on stdin = %d, stderr %q; want 2 and %q", code, errOut, want)
	}
}

// cliNoInternals fails when a message shows what only the code knows: a
// Go package's prefix, a Go type, a raw context error.
func cliNoInternals(t *testing.T, msg string) {
	t.Helper()
	for _, leak := range []string{"seqworker: ", "client: ", "registry: ", "toolcall: ", "natsconn: ", "context deadline exceeded", "nats: ", "json: ", "map[", "*errors."} {
		if strings.Contains(msg, leak) {
			t.Errorf("message shows %q: %s", leak, msg)
		}
	}
}

var cliCommands = []string{"validate", "sections", "run", "dev", "skills", "seqs", "call", "watch", "tools", "agent-ready", "mcp", "ui"}

func TestCLIHelp(t *testing.T) {
	for _, c := range cliCommands {
		for _, args := range [][]string{{c, "--help"}, {c, "-h"}, {"help", c}} {
			code, out, errOut := cliRun(t, args...)
			if code != cli.ExitOK || !strings.Contains(out, "Usage: skillbus "+c) || !strings.Contains(out, "Example") || !strings.Contains(out, "Exit codes") || errOut != "" {
				t.Errorf("skillbus %q = %d, stdout %q, stderr %q; want 0 and usage with examples and exit codes", args, code, out, errOut)
			}
		}
	}
	code, out, _ := cliRun(t, "help")
	for _, c := range cliCommands {
		if !strings.Contains(out, "  "+c+" ") {
			t.Errorf("help lists no %q:\n%s", c, out)
		}
	}
	if code != cli.ExitOK {
		t.Errorf("help = %d; want 0", code)
	}
	if code, _, _ := cliRun(t); code != cli.ExitUsage {
		t.Errorf("no arguments = %d; want 2", code)
	}
	if code, _, errOut := cliRun(t, "frobnicate"); code != cli.ExitUsage || !strings.Contains(errOut, "skillbus help") {
		t.Errorf("unknown command = %d, %q; want 2 and a pointer to help", code, errOut)
	}
}

func TestCLINeedsNATS(t *testing.T) {
	t.Setenv(cli.EnvNATSURL, "")
	for _, args := range [][]string{
		{"skills"}, {"skills", "info", "x"}, {"seqs"}, {"seqs", "show", "x"}, {"seqs", "rm", "x"}, {"call", "g"},
		{"watch"}, {"tools"}, {"tools", "serve"}, {"agent-ready", "a"}, {"mcp", "--", "true"}, {"ui"},
	} {
		code, _, errOut := cliRun(t, args...)
		if code != cli.ExitFailure || !strings.Contains(errOut, "NATS_URL is not set") || !strings.Contains(errOut, "skillbus dev") {
			t.Errorf("skillbus %q without NATS_URL = %d, %q; want 1 and how to get a NATS_URL", args, code, errOut)
		}
	}
	t.Setenv(cli.EnvNATSURL, "nats://127.0.0.1:1")
	want := "skillbus seqs ls: cannot connect to NATS at nats://127.0.0.1:1 (NATS_URL): no NATS server answers there (nothing listens on that address, or a firewall drops the connection); check the URL, or start a local stack with `skillbus dev`\n"
	if code, _, errOut := cliRun(t, "seqs"); code != cli.ExitFailure || errOut != want {
		t.Errorf("seqs with a dead NATS_URL = %d, %q; want 1 and %q", code, errOut, want)
	}
}

const cliSkill = "---\nname: cli-skill\ndescription: A skill for the CLI tests.\n---\n# Usage\n\nRun it.\n\n# Limits\n\nNone.\n"

const cliBootSeq = `name: cli-boot
boot: true
groups:
  - name: cli-boot-look
    tools:
      - {tool: fs.list, args: {path: "."}}
`

// TestCLIAgainstStack runs every NATS command against one stack with
// definitions, as a user would after `skillbus dev`.
func TestCLIAgainstStack(t *testing.T) {
	proj := cliProject(t)
	defs := t.TempDir()
	cliCopy(t, "examples/sequences/project-survey.seq.yaml", defs)
	os.MkdirAll(filepath.Join(defs, "cli-skill"), 0o755)
	os.WriteFile(filepath.Join(defs, "cli-skill", "SKILL.md"), []byte(cliSkill), 0o644)
	os.WriteFile(filepath.Join(defs, "cli-boot.seq.yaml"), []byte(cliBootSeq), 0o644)
	stack := cliStack(t, defs, proj)

	check := func(t *testing.T, args []string, code int, want ...string) string {
		t.Helper()
		c, out, errOut := cliRun(t, args...)
		if c != code {
			t.Fatalf("skillbus %q = %d; want %d\nstdout:\n%s\nstderr:\n%s", args, c, code, out, errOut)
		}
		for _, w := range want {
			if !strings.Contains(out+errOut, w) {
				t.Errorf("skillbus %q output lacks %q:\nstdout:\n%s\nstderr:\n%s", args, w, out, errOut)
			}
		}
		return out
	}

	t.Run("skills", func(t *testing.T) {
		check(t, []string{"skills"}, 0, "cli-skill", "cli-skill/SKILL.md", "A skill for the CLI tests.")
		check(t, []string{"skills", "ls", "--json"}, 0, `"name": "cli-skill"`)
		check(t, []string{"skills", "info", "cli-skill"}, 0, "# Usage", "# Limits")
		out := check(t, []string{"skills", "info", "cli-skill", "limits"}, 0, "None.")
		if strings.Contains(out, "Run it.") {
			t.Errorf("skills info cli-skill limits shows another section:\n%s", out)
		}
		check(t, []string{"skills", "info", "cli-skill", "nowhere"}, 1, "nowhere")
		// The registry's 404 says what is stored; the command adds how to list it.
		out = check(t, []string{"skills", "info", "no-skill"}, 1, "skillbus skills info: no skill named \"no-skill\" (1 skill is stored); list the skills with `skillbus skills`")
		cliNoInternals(t, out)
		check(t, []string{"skills", "frob"}, 2, `skillbus skills: unknown subcommand "frob"`)
	})

	t.Run("seqs", func(t *testing.T) {
		check(t, []string{"seqs"}, 0, "project-survey", "survey-inventory, survey-details, survey-report", "(root: string)", "cli-boot", "boot")
		out := check(t, []string{"seqs", "ls", "--json"}, 0)
		var list registry.SeqList
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Sequences) != 2 {
			t.Errorf("seqs --json = %v, %s; want 2 sequences", err, out)
		}
		check(t, []string{"seqs", "show", "project-survey"}, 0, "project-survey (root: string)", "1. survey-inventory  (parallel, timeout 1m0s, missing: fail, on_error: abort)", "on_error: continue", "- text.render")
		out = check(t, []string{"seqs", "show", "project-survey", "--json"}, 0)
		if _, err := seq.Decode([]byte(out)); err != nil {
			t.Errorf("seqs show --json is not a stored sequence: %v", err)
		}
		check(t, []string{"seqs", "graph", "project-survey"}, 0, "flowchart LR", "g1c2 -. languages .-> g3")
		check(t, []string{"seqs", "graph", "project-survey", "--format", "dot"}, 0, "digraph", "cluster_3")
		check(t, []string{"seqs", "show", "nope"}, 1, `"nope"`, "skillbus seqs")
		check(t, []string{"seqs", "rm", "project-survey"}, 1, "delete that file")
		// A sequence created over NATS can be removed.
		nc := cliConn(t, stack.URL())
		body := `{"name":"cli-scratch","groups":[{"name":"cli-scratch-g","tools":"{\"tool\":\"fs.list\"};"}]}`
		if msg, err := nc.Request(registry.SubjectSeqCreate, []byte(body), 10*time.Second); err != nil || msg.Header.Get("Nats-Service-Error-Code") != "" {
			t.Fatalf("seq.create: %v %s", err, msg.Data)
		}
		check(t, []string{"seqs", "rm", "cli-scratch"}, 0, "deleted sequence cli-scratch")
		check(t, []string{"seqs", "rm", "cli-scratch"}, 1, "cli-scratch")
		check(t, []string{"seqs", "show"}, 2, "skillbus seqs show: got none: give one NAME")
	})

	var runID string
	t.Run("run stored", func(t *testing.T) {
		out := check(t, []string{"run", "project-survey", "--arg", "root=.", "--json", "--quiet", "--run-id", "cli-run-1"}, 0)
		var st events.RunState
		json.Unmarshal([]byte(out), &st)
		if st.RunID != "cli-run-1" || st.Status != events.StatusSucceeded {
			t.Fatalf("run project-survey = %+v; want run cli-run-1 succeeded", st)
		}
		runID = st.RunID
		check(t, []string{"run", "no-such-seq"}, 1, `"no-such-seq"`)
		// A run id used before, with other arguments: the seqworker's 409
		// in words, without the Go packages it passed through.
		c, _, errOut := cliRun(t, "run", "project-survey", "--arg", "root=internal", "--run-id", "cli-run-1")
		if want := `skillbus run: the run was not accepted: run id "cli-run-1" was already used for sequence "project-survey" with other arguments or another definition; omit the run id to get a new one`; c != cli.ExitFailure || !strings.Contains(errOut, want) {
			t.Errorf("run with a used run id = %d, stderr %q; want 1 and %q", c, errOut, want)
		}
		cliNoInternals(t, errOut)
		check(t, []string{"run", "project-survey", "--arg", "x=1"}, 2, `unknown argument "x"`)
	})

	t.Run("watch run", func(t *testing.T) {
		check(t, []string{"watch", runID}, 0, "run cli-run-1: project-survey started", "group 2 survey-details succeeded", "project-survey succeeded")
		out := check(t, []string{"watch", runID, "--json"}, 0)
		if n := strings.Count(out, "\n"); n != 5 || !strings.Contains(out, `"subject":"events.run.cli-run-1.finished"`) {
			t.Errorf("watch --json = %d lines:\n%s\nwant 5 JSON lines (started, 3 groups, finished)", n, out)
		}
		check(t, []string{"watch", "a.b"}, 2, "not a run id")
	})

	t.Run("watch a run not started yet", func(t *testing.T) {
		check(t, []string{"watch", runID}, 0, "skillbus watch: run cli-run-1 of project-survey is known (status succeeded)")
		stdout, stderr, stop := cliBackground(t, "watch", "cli-late-run")
		stderr.waitFor(t, "watch to say it waits", "no run cli-late-run is known yet; waiting for it to start (Ctrl-C to stop)")
		time.Sleep(1500 * time.Millisecond) // past a fetch wait: it must still be waiting
		if stdout.String() != "" {
			t.Errorf("watch of an unknown run printed %q before the run started", stdout.String())
		}
		check(t, []string{"run", "project-survey", "--arg", "root=.", "--quiet", "--run-id", "cli-late-run"}, 0)
		stdout.waitFor(t, "watch to follow the late run to its end", "run cli-late-run: project-survey succeeded")
		if code := stop(); code != cli.ExitOK {
			t.Errorf("watch cli-late-run = %d; want 0", code)
		}
	})

	t.Run("call", func(t *testing.T) {
		check(t, []string{"call", "survey-inventory", "--arg", "root=internal"}, 0, "Group survey-inventory of project-survey: succeeded", "fs.lines → languages", `"lines":5`)
		out := check(t, []string{"call", "survey-inventory", "--arg", "root=.", "--json"}, 0)
		var reply events.SeqCallReply
		if err := json.Unmarshal([]byte(out), &reply); err != nil || reply.Slots["top"] == nil {
			t.Errorf("call --json = %v, %s; want the group's slots", err, out)
		}
		check(t, []string{"call", "survey-inventory", "--arg", "root=.."}, 1, "code 403")
		check(t, []string{"call", "survey-inventory"}, 2, "missing argument(s) root")
		check(t, []string{"call", "no-such-group"}, 1, "no stored sequence has a group named")
	})

	t.Run("tools", func(t *testing.T) {
		check(t, []string{"tools"}, 0, "fs.read", "skillbus-builtin", "text.render")
		out := check(t, []string{"tools", "--json"}, 0)
		var list []cli.ToolInfo
		json.Unmarshal([]byte(out), &list)
		found := false
		for _, ti := range list {
			if ti.Tool == "fs.grep" && ti.Subject == "tool.fs.grep" && strings.Contains(string(ti.Schema), `"pattern"`) && ti.Instances == 1 {
				found = true
			}
			if ti.Tool == "cmd.run" {
				t.Errorf("cmd.run is served without --allow-cmd")
			}
		}
		if !found {
			t.Errorf("tools --json lacks fs.grep with its schema:\n%s", out)
		}
		check(t, []string{"tools", "frob"}, 2, "unknown subcommand")
	})

	t.Run("agent-ready and watch", func(t *testing.T) {
		stdout, stderr, stop := cliBackground(t, "watch")
		stderr.waitFor(t, "watch to follow the events", "watching events") // said once it follows the stream
		check(t, []string{"agent-ready", "cli-agent", "--boot-id", "b1"}, 0, "agent_ready published for agent cli-agent, boot id b1")
		id := seqworker.BootRunID("cli-agent", "b1", "cli-boot")
		// watch follows a run not started yet until it ends: no retries.
		if c, out, errOut := cliRun(t, "watch", id, "--json"); c != 0 || !strings.Contains(out, "succeeded") {
			t.Fatalf("watch %s --json = %d\n%s\n%s\nwant the boot run succeeded", id, c, out, errOut)
		}
		stdout.waitFor(t, "watch to print agent_ready", "agent_ready cli-agent (boot b1)", "run "+id+": cli-boot succeeded")
		if code := stop(); code != cli.ExitOK {
			t.Errorf("watch stopped with %d; want 0", code)
		}
		check(t, []string{"agent-ready", "bad.agent"}, 2, "letters, digits")
		check(t, []string{"agent-ready"}, 2, "AGENT")
	})
}

func cliConn(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestCLIDev runs `skillbus dev` as a user would: it prints the URL, the
// other commands work against it, the boot sequence runs on the
// agent_ready it publishes, Ctrl-C stops it with 0, and its store survives
// a restart.
func TestCLIDev(t *testing.T) {
	proj := cliProject(t)
	defs := t.TempDir()
	os.WriteFile(filepath.Join(defs, "cli-boot.seq.yaml"), []byte(cliBootSeq), 0o644)
	data := t.TempDir()
	urlRe := regexp.MustCompile(`NATS_URL=(nats://[0-9.:]+)`)

	start := func() (string, *cliBuf, func() int) {
		stdout, stderr, stop := cliBackground(t, "dev", "--port", "0", "--data", data, "--dir", defs, "--tools-root", proj, "--agent", "cli-dev")
		var url string
		stdout.waitUntil(t, "dev to print its URL", func(text string) bool {
			m := urlRe.FindStringSubmatch(text)
			if m != nil {
				url = m[1]
			}
			return m != nil && strings.Contains(text, "Press Ctrl-C")
		})
		if strings.Contains(stderr.String(), "not published") {
			t.Fatalf("dev: %s", stderr.String())
		}
		return url, stdout, stop
	}
	url, stdout, stop := start()
	if !strings.Contains(stdout.String(), `Published agent_ready for agent "cli-dev"`) {
		t.Errorf("dev output lacks the agent_ready line:\n%s", stdout.String())
	}
	t.Setenv(cli.EnvNATSURL, url)
	if code, out, _ := cliRun(t, "seqs"); code != 0 || !strings.Contains(out, "cli-boot") {
		t.Errorf("seqs against dev = %d, %q; want cli-boot", code, out)
	}
	nc := cliConn(t, url)
	var st events.RunState
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	swUntilAll(t, js, 30*time.Second, "the boot sequence run", func(runs map[string]events.RunState) bool {
		for k, r := range runs {
			if strings.HasPrefix(k, "boot-cli-dev-cli-boot-") && r.Status == events.StatusSucceeded {
				st = r
				return true
			}
		}
		return false
	})
	nc.Close()
	if code := stop(); code != cli.ExitOK {
		t.Fatalf("dev stopped with %d; want 0", code)
	}

	// Same store: the run is still there after a restart.
	url, _, stop = start()
	nc = cliConn(t, url)
	b, _ := json.Marshal(&events.SeqStatusRequest{V: 1, RunID: st.RunID})
	msg, err := nc.Request(events.SeqStatusSubject, b, 5*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), st.RunID) {
		t.Errorf("after a restart on the same --data, run %s = %v, %s; want it kept", st.RunID, err, msg.Data)
	}
	if code := stop(); code != cli.ExitOK {
		t.Errorf("dev stopped with %d; want 0", code)
	}

	if code, _, errOut := cliRun(t, "dev", "--dir", filepath.Join(defs, "missing")); code != cli.ExitUsage || !strings.Contains(errOut, "not a directory") {
		t.Errorf("dev --dir missing = %d, %q; want 2", code, errOut)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	if code, _, errOut := cliRun(t, "dev", "--port", busyPort, "--data", t.TempDir(), "--dir", defs); code != cli.ExitFailure || !strings.Contains(errOut, "cannot listen on 127.0.0.1:"+busyPort) {
		t.Errorf("dev on a busy port = %d, %q; want 1 and the port named", code, errOut)
	}
	if code, _, _ := cliRun(t, "dev", "--port", "70000"); code != cli.ExitUsage {
		t.Errorf("dev --port 70000 = %d; want 2", code)
	}
}

// TestCLIDevRegistryProblems checks that `skillbus dev` prints invalid
// files and name clashes in --dir on stderr, one readable line each, at
// start and after a live edit.
func TestCLIDevRegistryProblems(t *testing.T) {
	defs := t.TempDir()
	os.WriteFile(filepath.Join(defs, "bad.seq.yaml"), []byte("name: bad\ngroups:\n  - name: g\n    tools:\n      - tool: x\n        args: {p: $args.nope}\n"), 0o644)
	os.WriteFile(filepath.Join(defs, "a.seq.yaml"), []byte("name: a\ngroups:\n  - name: same\n    tools:\n      - tool: fs.list\n"), 0o644)
	os.WriteFile(filepath.Join(defs, "b.seq.yaml"), []byte("name: b\ngroups:\n  - name: same\n    tools:\n      - tool: fs.list\n"), 0o644)
	_, stderr, stop := cliBackground(t, "dev", "--port", "0", "--data", t.TempDir(), "--dir", defs, "--tools-root", defs, "--agent", "")
	stderr.waitFor(t, "dev to report the invalid file and the clash",
		`skillbus dev: invalid bad.seq.yaml:6: group 1 "g": tool 1 "x": args: reads $args.nope`,
		`skillbus dev: clash: group name "same" is defined by both a.seq.yaml (sequence "a") and b.seq.yaml (sequence "b")`)
	os.WriteFile(filepath.Join(defs, "later.seq.json"), []byte(`{"name": "later", "groups": [{"name": "later-g", "tools": "{\"tool\": \"fs.list\", \"bogus\": 1};"}]}`), 0o644)
	stderr.waitFor(t, "dev to report a file broken while it runs", "skillbus dev: invalid later.seq.json")
	if code := stop(); code != cli.ExitOK {
		t.Errorf("dev stopped with %d; want 0", code)
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if !strings.HasPrefix(l, "skillbus dev: ") {
			t.Errorf("dev stderr line %q is not a one-line report", l)
		}
	}
}

// TestCLIToolsServe serves the built-in tools from `skillbus tools serve`
// against a stack without its own tools, and calls them through NATS.
func TestCLIToolsServe(t *testing.T) {
	proj := cliProject(t)
	stack := cliStack(t, "", "")
	stdout, _, stop := cliBackground(t, "tools", "serve", "--root", proj, "--allow-cmd", "echo", "--max-read", "6")
	stdout.waitFor(t, "tools serve to start", "serving fs.list")
	nc := cliConn(t, stack.URL())
	call := func(tool, args string) (string, string) {
		msg, err := nc.Request("tool."+tool, []byte(args), 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return string(msg.Data), msg.Header.Get("Nats-Service-Error-Code")
	}
	if out, code := call("fs.read", `{"path":"README.md"}`); code != "" || !strings.Contains(out, `"content":"# Widg","truncated":true`) {
		t.Errorf("fs.read README.md = %s (code %q); want 6 bytes, truncated", out, code)
	}
	if _, code := call("fs.read", `{"path":"../secret.txt"}`); code != "403" {
		t.Errorf("fs.read ../secret.txt code %q; want 403", code)
	}
	if out, code := call("cmd.run", `{"command":"echo","args":["hi"]}`); code != "" || !strings.Contains(out, `"stdout":"hi\n"`) {
		t.Errorf("cmd.run echo hi = %s (code %q)", out, code)
	}
	if _, code := call("cmd.run", `{"command":"rm","args":["-rf","."]}`); code != "403" {
		t.Errorf("cmd.run rm code %q; want 403", code)
	}
	if code := stop(); code != cli.ExitOK {
		t.Errorf("tools serve stopped with %d; want 0", code)
	}
	if msg, err := nc.Request("tool.fs.read", []byte(`{"path":"README.md"}`), time.Second); err == nil {
		t.Errorf("tool.fs.read still answers after tools serve stopped: %s %v", msg.Data, msg.Header)
	}
	if code, _, errOut := cliRun(t, "tools", "serve", "--root", filepath.Join(proj, "missing")); code != cli.ExitUsage || !strings.Contains(errOut, "no such directory") {
		t.Errorf("tools serve --root missing = %d, %q; want 2", code, errOut)
	}
	if code, _, errOut := cliRun(t, "tools", "serve", "--allow-cmd", "git log"); code != cli.ExitUsage || !strings.Contains(errOut, "without arguments") {
		t.Errorf("tools serve --allow-cmd 'git log' = %d, %q; want 2", code, errOut)
	}
}

// TestCLIDevStoppedWhileStarting: Ctrl-C while `skillbus dev` is still
// starting is a stop (exit 0, "stopped while starting"), at whatever
// moment it comes — before, within the first half second it exited 1 with
// "registry: registry: list SKILLS: context canceled".
func TestCLIDevStoppedWhileStarting(t *testing.T) {
	defs := t.TempDir()
	os.WriteFile(filepath.Join(defs, "a.seq.yaml"), []byte("name: a\ngroups:\n  - name: a-g\n    tools:\n      - tool: fs.list\n"), 0o644)
	for _, after := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond} {
		_, stderr, stop := cliBackground(t, "dev", "--port", "0", "--ui-port", "-1", "--data", t.TempDir(), "--dir", defs, "--agent", "")
		time.Sleep(after)
		if code := stop(); code != cli.ExitOK {
			t.Errorf("Ctrl-C %s after dev started = exit %d; want 0\n%s", after, code, stderr.String())
		}
		if e := stderr.String(); strings.Contains(e, "context canceled") || !strings.Contains(e, "skillbus dev: stopped") {
			t.Errorf("Ctrl-C %s after dev started: stderr %q; want only that it stopped", after, e)
		}
	}
}

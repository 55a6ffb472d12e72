package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestCLIExamplesRunClean runs, with `skillbus run` on the in-process
// stack, every shipped example sequence whose tools are all built-in tools
// (agent-boot, project-survey, file-sizes with its for_each, and any added
// later) on a small git
// workspace, and checks that every group ran and every call succeeded — so
// an example that passes arguments the built-in tools do not accept (a 400
// at every `skillbus dev` start) cannot ship. At least agent-boot and
// project-survey must be among them.
func TestCLIExamplesRunClean(t *testing.T) {
	t.Setenv(cli.EnvNATSURL, "")
	proj := cliProject(t) // has .git, README.md, Go and Markdown files

	p, err := builtin.New(builtin.Config{Root: proj, AllowCommands: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	builtins := map[string]bool{}
	for _, tl := range p.Tools() {
		builtins[tl.Name] = true
	}
	p.Close()

	files, err := filepath.Glob(cliRepoFile(t, "examples/sequences") + "/*.seq.*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example sequences: %v", err)
	}
	ran := map[string]bool{}
	for _, f := range files {
		if registry.FileKind(f) != "sequence" {
			continue // an editor's backup (my.seq.yaml~) is no example
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := seq.ParseFile(f, data)
		if err != nil {
			t.Fatalf("example %s: %v", f, err)
		}
		onlyBuiltin := true
		for _, g := range s.Groups {
			for _, c := range g.Tools {
				onlyBuiltin = onlyBuiltin && builtins[c.Tool] && (c.Fallback == "" || builtins[c.Fallback])
			}
		}
		if !onlyBuiltin {
			continue
		}
		ran[s.Name] = true
		t.Run(s.Name, func(t *testing.T) {
			args := []string{"run", f, "--tools-root", proj, "--json", "--quiet"}
			// A value of each type the examples take, that the workspace has.
			values := map[seq.Type]string{"string": ".", "array<string>": `["README.md","."]`}
			for k, ty := range s.Signature {
				v, ok := values[ty]
				if !ok {
					t.Fatalf("example %s takes %s %s; give it a value here", s.Name, k, ty)
				}
				args = append(args, "--arg", k+"="+v)
			}
			code, out, errOut := cliRun(t, args...)
			var st events.RunState
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatalf("skillbus %q = %d, not a run state: %v\nstdout:\n%s\nstderr:\n%s", args, code, err, out, errOut)
			}
			var res seq.Result
			if err := json.Unmarshal(st.Result, &res); err != nil {
				t.Fatalf("run %s result: %v", s.Name, err)
			}
			if code != cli.ExitOK || st.Status != events.StatusSucceeded {
				t.Errorf("run %s = %d, %s (%s); want 0 and succeeded", s.Name, code, st.Status, st.Error)
			}
			for _, g := range res.Groups {
				if g.Status != seq.GroupSucceeded {
					t.Errorf("run %s: group %q %s (%s%s); want every group to run and succeed", s.Name, g.Name, g.Status, g.Reason, g.Error)
				}
				for _, c := range g.Calls {
					if c.Status != seq.CallSucceeded {
						t.Errorf("run %s: group %q: %s %s: %s; want succeeded", s.Name, g.Name, c.Tool, c.Status, c.Error)
					}
				}
			}
			if s.Name == "file-sizes" && !strings.Contains(string(st.Slots["report"]), "README.md: ") {
				t.Errorf("file-sizes report = %s; want a line for README.md", st.Slots["report"])
			}
			if s.Name == "agent-boot" && !strings.Contains(string(st.Slots["brief"]), "a git repository") {
				t.Errorf("agent-boot brief = %s; want it to say the workspace is a git repository", st.Slots["brief"])
			}
		})
	}
	for _, want := range []string{"agent-boot", "project-survey", "file-sizes"} {
		if !ran[want] {
			t.Errorf("example %s was not run: it calls a tool that is not built in", want)
		}
	}
}

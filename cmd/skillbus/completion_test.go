package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/devstack"
)

// completionStack starts an all-in-one skillbus with one stored sequence
// and one skill and returns its NATS URL.
func completionStack(t *testing.T) string {
	t.Helper()
	defs := t.TempDir()
	files := map[string]string{
		"inventory.seq.yaml":     "name: inventory\ngroups:\n  - name: inventory-list\n    tools:\n      - tool: fs.list\n        args: {path: .}\n",
		"skills/triage/SKILL.md": "---\nname: triage\ndescription: Triage an incident.\n---\n# Steps\n\nLook.\n",
	}
	for name, text := range files {
		p := filepath.Join(defs, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stack, err := devstack.Start(ctx, devstack.Config{DataDir: t.TempDir(), Dir: defs, Tools: builtin.Config{Root: defs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = stack.Stop(sctx)
	})
	return stack.URL()
}

// shellEnv is the environment of a shell running the completion script:
// the built skillbus first on PATH, NATS_URL as given ("" unset).
func shellEnv(bin, natsURL string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NATS_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if natsURL != "" {
		env = append(env, "NATS_URL="+natsURL)
	}
	return env
}

// bashCompletion is a bash program that loads bash-completion and the
// script, shows the registration (complete -p) and completes each line of
// stdin as if Tab were pressed at its end, printing the candidates and a
// line "--" after each.
const bashCompletion = `
source /usr/share/bash-completion/bash_completion
source <(skillbus completion bash)
complete -p skillbus
while IFS= read -r line; do
  read -ra COMP_WORDS <<< "$line"
  [[ $line == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMP_LINE=$line
  COMP_POINT=${#line}
  COMP_TYPE=9
  COMPREPLY=()
  __start_skillbus skillbus "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null # compopt: only in a real Tab
  printf '%s\n' "${COMPREPLY[@]}"
  echo --
done
`

// TestBashCompletion runs the bash script under a real bash with
// bash-completion (as a user's shell has it) and checks the candidates of
// each line: commands, subcommands, flags, flag values, and the stored
// names of a running skillbus.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := os.Stat("/usr/share/bash-completion/bash_completion"); err != nil {
		t.Skip("the bash-completion package is not installed (apt-get install bash-completion; .ci/run installs it)")
	}
	bin := build(t)
	url := completionStack(t)
	lines := []struct {
		line string
		want []string
		not  []string
	}{
		{"skillbus se", []string{"seqs", "sections"}, []string{"run"}},
		{"skillbus seqs ", []string{"ls", "show", "graph", "rm"}, nil},
		{"skillbus runs ls --status f", []string{"failed"}, []string{"queued"}},
		{"skillbus runs ls --status=s", []string{"succeeded"}, nil},
		{"skillbus seqs show x -o ", []string{"json", "yaml"}, []string{"wide"}},
		{"skillbus seqs graph --fo", []string{"--format"}, nil},
		{"skillbus runs cancel --no", []string{"--no-wait"}, nil},
		{"skillbus seqs show inv", []string{"inventory"}, nil},
		{"skillbus run ", []string{"inventory"}, nil},
		{"skillbus skills info ", []string{"triage"}, nil},
		{"skillbus call inventory-", []string{"inventory-list"}, nil},
		{"skillbus --ver", []string{"--version"}, nil},
		{"skillbus completion ", []string{"bash", "fish", "zsh"}, nil},
	}
	var stdin strings.Builder
	for _, l := range lines {
		stdin.WriteString(l.line + "\n")
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", bashCompletion)
	cmd.Env = shellEnv(bin, url)
	cmd.Stdin = strings.NewReader(stdin.String())
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	text := string(out)
	reg, rest, _ := strings.Cut(text, "\n")
	if !strings.HasPrefix(reg, "complete ") || !strings.HasSuffix(reg, " skillbus") || !strings.Contains(reg, "-F __start_skillbus") {
		t.Errorf("complete -p skillbus = %q; want the registration of __start_skillbus", reg)
	}
	blocks := strings.Split(strings.TrimSuffix(rest, "--\n"), "--\n")
	if len(blocks) != len(lines) {
		t.Fatalf("%d answers for %d lines:\n%s", len(blocks), len(lines), text)
	}
	for i, l := range lines {
		var got []string
		for _, c := range strings.Split(strings.TrimSpace(blocks[i]), "\n") {
			if f := strings.Fields(c); len(f) > 0 {
				got = append(got, f[0]) // a candidate, without a description
			}
		}
		for _, w := range l.want {
			if !slices.Contains(got, w) {
				t.Errorf("bash: %q → %q; want %q among them", l.line, got, w)
			}
		}
		for _, n := range l.not {
			if slices.Contains(got, n) {
				t.Errorf("bash: %q → %q; want no %q", l.line, got, n)
			}
		}
	}
}

// TestFishCompletion loads the fish script in a real fish and asks it for
// candidates (complete -C), as fish does on Tab.
func TestFishCompletion(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("no fish (apt-get install fish; .ci/run installs it)")
	}
	bin := build(t)
	url := completionStack(t)
	script := filepath.Join(t.TempDir(), "skillbus.fish")
	out, err := exec.Command(bin, "completion", "fish").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, out, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"skillbus seqs ", []string{"ls", "show", "graph", "rm"}},
		{"skillbus runs ls -o ", []string{"json", "yaml", "wide"}},
		{"skillbus seqs rm ", []string{"inventory"}},
		{"skillbus skills info ", []string{"triage"}},
	} {
		cmd := exec.Command(fish, "--no-config", "-c", "source "+script+"; complete -C '"+tc.line+"'")
		cmd.Env = shellEnv(bin, url)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("fish %q: %v\n%s", tc.line, err, out)
			continue
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			name, _, _ := strings.Cut(l, "\t")
			got = append(got, name)
		}
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("fish: %q → %q; want %q among them", tc.line, got, w)
			}
		}
	}
}

// TestZshCompletion checks that the zsh script parses and defines its
// completion function under compinit.
func TestZshCompletion(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Skip("no zsh (apt-get install zsh; .ci/run installs it)")
	}
	bin := build(t)
	script := filepath.Join(t.TempDir(), "_skillbus")
	out, err := exec.Command(bin, "completion", "zsh").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(zsh, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	cmd := exec.Command(zsh, "-f", "-c", "autoload -U compinit && compinit -u -D && source "+script+" && (( $+functions[_skillbus] )) && print ok")
	cmd.Env = shellEnv(bin, "")
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("zsh: %v %q; want _skillbus defined", err, out)
	}
}

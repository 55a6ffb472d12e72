package cli

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/seq"
)

const graphSeq = `
name: g-demo
groups:
  - name: g-fetch
    in: {repo: string}
    out: {meta: object, files: array<string>}
    tools:
      - {tool: gh.meta, args: {repo: $args.repo}, as: meta}
      - {tool: gh.ls, args: {repo: $args.repo}, as: files}
      - {tool: gh.ls, args: {repo: "other"}, as: files}
  - name: g-sum
    in: {meta: object, files: array<string>}
    out: {summary: string}
    parallel: false
    when: $args.meta != null
    tools:
      - {tool: llm.sum, args: {d: $args.meta}, as: summary}
      - {tool: log.write, args: {x: "done"}}
`

func parseGraphSeq(t *testing.T) *seq.Sequence {
	t.Helper()
	s, err := seq.ParseYAML([]byte(graphSeq))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGraphMermaid(t *testing.T) {
	got := GraphMermaid(parseGraphSeq(t))
	for _, want := range []string{
		"flowchart LR",
		`subgraph g1["1. g-fetch"]`,
		`g1c2["gh.ls → files"]`,
		`subgraph g2["2. g-sum — when $args.meta != null"]`,
		"g2c1 --> g2c2",       // parallel: false chains the calls
		"g1 ==> g2",           // stage order
		"args -. repo .-> g1", // a run argument
		"g1c1 -. meta .-> g2",
		"g1c2 -. files .-> g2", // an array slot: both writers
		"g1c3 -. files .-> g2",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("GraphMermaid lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "g1c1 --> g1c2") {
		t.Errorf("GraphMermaid chains the calls of a parallel group:\n%s", got)
	}
}

// TestGraphMermaidEscapes: label text cannot inject HTML or entity codes.
func TestGraphMermaidEscapes(t *testing.T) {
	s, err := seq.ParseYAML([]byte("name: esc\ngroups:\n  - name: g\n    in: {a: string}\n    when: '$args.a != \"<br>#quot;\"'\n    tools: [{tool: t}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := GraphMermaid(s)
	if want := `when $args.a != #quot;#lt;br#gt;#35;quot;#quot;`; !strings.Contains(got, want) {
		t.Errorf("GraphMermaid label = \n%s\nwant it to contain %q", got, want)
	}
	if strings.Contains(got, "<br>") {
		t.Errorf("GraphMermaid passes raw HTML through:\n%s", got)
	}
}

func TestGraphDOT(t *testing.T) {
	got := GraphDOT(parseGraphSeq(t))
	for _, want := range []string{
		`digraph "g-demo" {`,
		"subgraph cluster_1 {",
		`label="2. g-sum\nwhen $args.meta != null";`,
		"g1c1 -> g2c1 [ltail=cluster_1, lhead=cluster_2, style=bold];",
		`g1c3 -> g2c1 [lhead=cluster_2, style=dashed, label="files"];`,
		`args -> g1c1 [lhead=cluster_1, style=dashed, label="repo"];`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("GraphDOT lacks %q:\n%s", want, got)
		}
	}
	// When Graphviz is installed, it must accept the output.
	if dot, err := exec.LookPath("dot"); err == nil {
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = strings.NewReader(got)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("dot rejects the graph: %v\n%s", err, got)
		}
	}
}

func TestGraphExamples(t *testing.T) {
	for _, f := range []string{"../../examples/sequences/project-survey.seq.yaml", "../../examples/sequences/repo-survey.seq.yaml"} {
		code, out, errOut := runCLI(t, "seqs", "graph", f)
		if code != ExitOK || !strings.Contains(out, "flowchart LR") {
			t.Errorf("seqs graph %s = %d, %q, %q; want 0 and a flowchart", f, code, out, errOut)
		}
		code, out, _ = runCLI(t, "seqs", "graph", f, "--format", "dot")
		if code != ExitOK || !strings.HasPrefix(out, "digraph") {
			t.Errorf("seqs graph %s --format dot = %d, %q; want 0 and a digraph", f, code, out)
		}
	}
	if code, _, errOut := runCLI(t, "seqs", "graph", "../../examples/sequences/project-survey.seq.yaml", "--format", "svg"); code != ExitUsage || !strings.Contains(errOut, "want mermaid or dot") {
		t.Errorf("seqs graph --format svg = %d, %q; want 2 and the formats", code, errOut)
	}
}

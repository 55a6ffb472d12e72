package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/sections"
)

// runCLI runs the command line with args and returns its exit code, stdout
// and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const sectionsDoc = "---\nname: demo\n---\nIntro\n# Guide\n```sh\n# not a heading\n```\n## Install\nsteps\n\nSetup\n-----\n"

func TestSectionsText(t *testing.T) {
	p := writeFile(t, t.TempDir(), "demo.md", sectionsDoc)
	code, out, errs := runCLI(t, "sections", p)
	want := "(front matter and text before the first heading)  lines 1–4 (4 lines)\n" +
		"# Guide  lines 5–8 (4 lines)\n" +
		"  ## Install  lines 9–11 (3 lines)\n" +
		"  ## Setup  lines 12–13 (2 lines)\n"
	if code != ExitOK || out != want {
		t.Errorf("skillbus sections %s = %d, %q, %q; want 0 and\n%s", p, code, out, errs, want)
	}
}

func TestSectionsJSON(t *testing.T) {
	p := writeFile(t, t.TempDir(), "demo.md", sectionsDoc)
	code, out, _ := runCLI(t, "sections", "--json", p)
	var got []map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != ExitOK {
		t.Fatalf("sections --json = %d, %q: %v", code, out, err)
	}
	want := []map[string]any{
		{"level": 0.0, "title": "", "start": 0.0, "end": 4.0},
		{"level": 1.0, "title": "Guide", "start": 4.0, "end": 8.0},
		{"level": 2.0, "title": "Install", "start": 8.0, "end": 11.0},
		{"level": 2.0, "title": "Setup", "start": 11.0, "end": 13.0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections --json = %v; want %v", got, want)
	}
	// The JSON is exactly what the library returns.
	var secs []sections.Section
	_ = json.Unmarshal([]byte(out), &secs)
	if !reflect.DeepEqual(secs, sections.Split(sectionsDoc)) {
		t.Errorf("sections --json = %v; library says %v", secs, sections.Split(sectionsDoc))
	}
}

// TestSectionsFlagsAnywhere: --json after the path (issue 12 item 5), and
// -- ending the flags so a file named like a flag can be read.
func TestSectionsFlagsAnywhere(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "demo.md", sectionsDoc)
	_, before, _ := runCLI(t, "sections", "--json", p)
	code, after, errs := runCLI(t, "sections", p, "--json")
	if code != ExitOK || after != before || !strings.HasPrefix(after, "[") {
		t.Errorf("sections FILE --json = %d, %q (stderr %q); want the output of sections --json FILE", code, after, errs)
	}
	odd := writeFile(t, dir, "--json", "# Odd\n")
	t.Chdir(dir)
	code, out, errs := runCLI(t, "sections", "--", filepath.Base(odd))
	if code != ExitOK || !strings.Contains(out, "# Odd") {
		t.Errorf("sections -- --json = %d, %q (stderr %q); want the file named --json split", code, out, errs)
	}
	code, out, _ = runCLI(t, "sections", "--json", "--", "--json")
	if code != ExitOK || !strings.Contains(out, `"title": "Odd"`) {
		t.Errorf("sections --json -- --json = %d, %q", code, out)
	}
}

// TestSectionsFIFO: a named pipe is refused at once, not opened.
func TestSectionsFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pipe.md")
	mkfifo(t, p)
	done := make(chan int, 1)
	go func() { code, _, _ := runCLI(t, "sections", p); done <- code }()
	select {
	case code := <-done:
		if code != ExitFailure {
			t.Errorf("sections FIFO = %d; want %d", code, ExitFailure)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sections on a FIFO hangs")
	}
}

func TestSectionsEmptyJSON(t *testing.T) {
	p := writeFile(t, t.TempDir(), "empty.md", "")
	code, out, _ := runCLI(t, "sections", "--json", p)
	if code != ExitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("sections --json on an empty file = %d, %q; want 0 and []", code, out)
	}
}

func TestSectionsUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no path", []string{"sections"}, ExitUsage, "give exactly one PATH"},
		{"two paths", []string{"sections", "a", "b"}, ExitUsage, "give exactly one PATH"},
		{"bad flag", []string{"sections", "--jsn", "a"}, ExitUsage, "unknown flag --jsn; did you mean --json?"},
		{"missing file", []string{"sections", filepath.Join(t.TempDir(), "nope.md")}, ExitUsage, "skillbus sections: no file "},
		{"directory", []string{"sections", t.TempDir()}, ExitUsage, "is a directory; give the path of a Markdown file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(errs, tt.err) {
				t.Errorf("skillbus %q = %d, stderr %q; want %d containing %q", tt.args, code, errs, tt.code, tt.err)
			}
		})
	}
}

// TestSectionsHelpSaysEveryLevel checks the usage describes what Split
// does: it splits at headings of every level, not only top-level ones.
func TestSectionsHelpSaysEveryLevel(t *testing.T) {
	code, out, _ := runCLI(t, "sections", "--help")
	if code != ExitOK || strings.Contains(out, "top-level") || !strings.Contains(out, "every heading, of any level") {
		t.Errorf("sections --help = %d:\n%s\nwant it to say it splits at every heading level", code, out)
	}
	_, out, _ = runCLI(t, "sections", writeFile(t, t.TempDir(), "x.md", "# A\n## B\n### C\n"))
	if strings.Count(out, "lines ") != 3 {
		t.Errorf("sections of three nested headings = %q; want three sections", out)
	}
}

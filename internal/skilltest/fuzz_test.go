package skilltest

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseFile: no text makes the parser panic; it gives a file or an
// error.
func FuzzParseFile(f *testing.F) {
	for _, p := range []string{"jetstream-incident", "k8s-rollout-check", "release-train"} {
		if b, err := os.ReadFile(filepath.Join("../../examples/skills", p, FileName)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("cases:\n  - name: a\n    message: m\n    history: [1, {message: *x}]\n    expect: {skills: {a: [b]}, tool_limits: {T: [1]}, listing: {entries: -1}}\n"))
	f.Add([]byte("a: &x [*x]\ncases: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFile("skill.test.yaml", data)
		if err == nil && len(file.Cases) == 0 {
			t.Fatalf("ParseFile gave a file of no case: %q", data)
		}
	})
}

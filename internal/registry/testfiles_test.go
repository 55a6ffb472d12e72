package registry

import (
	"os"
	"path/filepath"
	"testing"
)

// Test files of `skillbus test` (NAME.test.yaml beside NAME.seq.yaml,
// docs/testing.md) are not definitions: the registry neither loads them
// as sequences nor warns that it ignores them.
func TestTestFilesAreIgnored(t *testing.T) {
	if k := FileKind("flows/survey.test.yaml"); k != kindNone {
		t.Fatalf("FileKind(survey.test.yaml) = %q; want none", k)
	}
	dir := t.TempDir()
	seqText := "name: survey\ngroups:\n  - name: g\n    out: {x: object}\n    tools:\n      - {tool: t.x, as: x}\n"
	testText := "cases:\n  - name: one\n    mocks: {t.x: {result: {}}}\n    expect: {status: succeeded, groups: {g: succeeded}}\n"
	for name, text := range map[string]string{"survey.seq.yaml": seqText, "survey.test.yaml": testText} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reports, err := Check([]string{dir}, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if filepath.Base(r.Path) == "survey.test.yaml" {
			t.Errorf("the test file was reported: %+v", r)
		}
	}
	if len(reports) != 1 || reports[0].Kind != kindSequence || !reports[0].Valid {
		t.Errorf("reports = %+v; want the one valid sequence", reports)
	}
}

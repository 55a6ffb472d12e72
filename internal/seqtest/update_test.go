package seqtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --update rewrites the expected slots of the cases marked update: true
// from the actual ones and keeps the file's comments; other cases and
// predicates are left alone, and the rewritten file passes.
func TestUpdateRewritesMarkedSlots(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.seq.yaml"), []byte(testSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.test.yaml")
	text := `# The tests of fetch-and-post.
cases:
  # the popular repo
  - name: marked
    update: true
    args: {repo: a/b}
    mocks:
      gh.info: {result: {stars: 50, name: b}}
      chat.post: {result: {posted: true}}
    expect:
      status: succeeded
      slots:
        meta: {stars: 1}   # stars from GitHub
        posted:
          posted: false

  - name: not marked
    args: {repo: a/b}
    mocks:
      gh.info: {result: {stars: 5}}
      chat.post: {result: {}}
    expect:
      slots: {meta: {stars: 1}}
`
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	n, err := Update(f, RunFile(context.Background(), f, nil))
	if err != nil || n != 2 {
		t.Fatalf("Update = %d, %v; want 2 slots rewritten", n, err)
	}
	b, _ := os.ReadFile(p)
	got := string(b)
	wantText := strings.Replace(strings.Replace(text, "meta: {stars: 1}   # stars", "meta: {name: b, stars: 50} # stars", 1), "posted: false", "posted: true", 1)
	if got != wantText {
		t.Errorf("updated file:\n%s\nwant only the two values changed:\n%s", got, wantText)
	}
	for _, want := range []string{"# The tests of fetch-and-post.", "# the popular repo", "meta: {name: b, stars: 50} # stars from GitHub", "posted:\n          posted: true", "slots: {meta: {stars: 1}}"} {
		if !strings.Contains(got, want) {
			t.Errorf("updated file lacks %q:\n%s", want, got)
		}
	}
	f, err = Load(p)
	if err != nil {
		t.Fatalf("the updated file does not parse: %v\n%s", err, got)
	}
	rs := RunFile(context.Background(), f, nil)
	if !rs[0].Passed || rs[1].Passed {
		t.Errorf("after the update: marked passed=%v, not marked passed=%v; want true, false (not marked is left failing)", rs[0].Passed, rs[1].Passed)
	}
	if n, err := Update(f, rs); n != 0 || err != nil {
		t.Errorf("a second Update = %d, %v; want nothing to do", n, err)
	}
}

// A block value that becomes a scalar cannot be replaced in its lines:
// the file is re-encoded from the node tree, comments kept.
func TestUpdateFallsBackToReencoding(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.seq.yaml"), []byte(testSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "x.test.yaml")
	text := "cases:\n  - name: a # the case\n    update: true\n    args: {repo: a/b}\n    mocks:\n      gh.info: {result: 7}\n      chat.post: {result: {}}\n    expect:\n      status: failed\n      slots:\n        meta:\n          stars: 1\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := Update(f, RunFile(context.Background(), f, nil)); n != 1 || err != nil {
		t.Fatalf("Update = %d, %v", n, err)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "meta: 7") || !strings.Contains(string(b), "# the case") {
		t.Errorf("updated file:\n%s", b)
	}
	f, err = Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if rs := RunFile(context.Background(), f, nil); !rs[0].Passed {
		t.Errorf("after the update the case fails: %v", rs[0].Failures)
	}
}

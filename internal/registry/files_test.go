package registry

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// writeTree writes files (slash paths relative to root) with their text.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// scanWithin runs scan and fails the test when it takes longer than d (a
// walk of the whole file system, or a blocking open, would).
func scanWithin(t *testing.T, d time.Duration, root string, limit int64, others bool) scanResult {
	t.Helper()
	done := make(chan scanResult, 1)
	go func() { done <- scan(root, limit, others) }()
	select {
	case res := <-done:
		return res
	case <-time.After(d):
		t.Fatalf("scan(%s) still running after %s: it blocks or walks outside the tree", root, d)
		return scanResult{}
	}
}

func TestScanSymlinksStayInTheTree(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	writeTree(t, root, map[string]string{
		"skills/a/SKILL.md":  "a",
		".git/x/SKILL.md":    "hidden",
		"skills/a/notes.md":  "not a definition",
		"flows/in.seq.yaml":  "in",
		"node_modules/x.seq": "skipped",
	})
	writeTree(t, outside, map[string]string{"linked/SKILL.md": "linked", "secret.seq.yaml": "secret"})
	link := func(target, name string) { t.Helper(); must(t, os.Symlink(target, filepath.Join(root, name))) }
	link(filepath.Join(outside, "linked"), "skills/linked")                  // a folder outside: refused
	link("/", "skills/root")                                                 // the whole file system: refused
	link("..", "skills/up")                                                  // the parent of skills/, still inside: a second path to a seen dir
	link("../..", "skills/a/up2")                                            // the root itself: seen already
	link(filepath.Dir(root), "skills/above")                                 // above the root: refused
	link(root, "skills/a/loop")                                              // loop back to the root
	link(filepath.Join(root, "skills/a"), "skills/z-again")                  // the same folder twice
	link(filepath.Join(root, "nowhere"), "skills/dangling")                  // dangling: not there
	link(filepath.Join(outside, "secret.seq.yaml"), "flows/secret.seq.yaml") // a definition file outside: refused
	link("/dev/zero", "flows/zero.seq.yaml")                                 // a device outside: refused, never opened
	link("in.seq.yaml", "flows/alias.seq.yaml")                              // a file inside: read
	link(filepath.Join(outside, "secret.seq.yaml"), "flows/notes.txt")       // outside but not a definition: ignored

	res := scanWithin(t, 10*time.Second, root, 1<<20, false)
	got := map[string]string{}
	for rel, f := range res.files {
		switch {
		case f.err == nil:
			got[rel] = "read " + string(f.data)
		case errors.Is(f.err, ErrOutsideTree):
			got[rel] = "outside " + f.kind
		default:
			got[rel] = "error " + f.err.Error()
		}
	}
	want := map[string]string{
		"skills/a/SKILL.md":     "read a",
		"flows/in.seq.yaml":     "read in",
		"flows/alias.seq.yaml":  "read in",
		"skills/linked":         "outside tree",
		"skills/root":           "outside tree",
		"skills/above":          "outside tree",
		"flows/secret.seq.yaml": "outside sequence",
		"flows/zero.seq.yaml":   "outside sequence",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scan files =\n%v\nwant\n%v", got, want)
	}
	msg := refusalMessage(res.files["skills/root"].err)
	if !strings.Contains(msg, "not followed: a symlink to the directory /, outside the tree") {
		t.Errorf("refusal of a link to / = %q", msg)
	}
	for _, d := range res.dirs {
		if strings.Contains(d, "root") || strings.Contains(d, "above") || strings.Contains(d, "linked") {
			t.Errorf("scan watches %s, outside the tree", d)
		}
	}
}

func TestScanRefusesNonRegularFiles(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"ok/SKILL.md": "fine", "big.seq.yaml": strings.Repeat("x", 5000)})
	fifo := filepath.Join(root, "x.seq.yaml")
	mkfifo(t, fifo)
	must(t, os.MkdirAll(filepath.Join(root, "pipe"), 0o755))
	mkfifo(t, filepath.Join(root, "pipe", "SKILL.md"))
	must(t, os.Symlink("x.seq.yaml", filepath.Join(root, "via-link.seq.yaml"))) // a link inside the tree to the FIFO

	res := scanWithin(t, 10*time.Second, root, 4096, false)
	for _, rel := range []string{"x.seq.yaml", "pipe/SKILL.md", "via-link.seq.yaml"} {
		f := res.files[rel]
		if f == nil || !errors.Is(f.err, ErrNotRegular) {
			t.Errorf("scan %s = %+v; want ErrNotRegular", rel, f)
			continue
		}
		if msg := refusalMessage(f.err); !strings.Contains(msg, "a named pipe (FIFO), not a regular file") {
			t.Errorf("refusal of %s = %q", rel, msg)
		}
	}
	if f := res.files["big.seq.yaml"]; f == nil || !errors.Is(f.err, ErrTooLarge) || f.data != nil {
		t.Errorf("scan big.seq.yaml (5000 bytes, limit 4096) = %+v; want ErrTooLarge and no data", f)
	} else if msg := refusalMessage(f.err); !strings.Contains(msg, "at most 4096 bytes here (max_payload 8192") {
		t.Errorf("too-large message = %q", msg)
	}
	if f := res.files["ok/SKILL.md"]; f == nil || f.err != nil || string(f.data) != "fine" {
		t.Errorf("scan ok/SKILL.md = %+v", f)
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	must(t, os.WriteFile(p, []byte("12345"), 0o644))
	if data, _, err := readRegular(p, 5); err != nil || string(data) != "12345" {
		t.Errorf("readRegular(5 bytes, limit 5) = %q, %v", data, err)
	}
	if _, _, err := readRegular(p, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("readRegular(5 bytes, limit 4) = %v; want ErrTooLarge", err)
	}
	if _, _, err := readRegular(dir, 100); err == nil {
		t.Errorf("readRegular(a directory) = nil error")
	}
	if _, _, err := readRegular("/dev/zero", 100); !errors.Is(err, ErrNotRegular) {
		t.Errorf("readRegular(/dev/zero) = %v; want ErrNotRegular", err)
	}
	l := filepath.Join(dir, "l")
	must(t, os.Symlink(p, l))
	if _, _, err := readRegular(l, 100); err == nil {
		t.Errorf("readRegular(a symlink) = nil error; want a refusal (callers pass resolved paths)")
	}
}

func TestScanUnreadableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{"locked/a/SKILL.md": "x"})
	must(t, os.Chmod(filepath.Join(root, "locked"), 0))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(root, "locked"), 0o755) })
	res := scan(root, 1<<20, false)
	if f := res.files["locked"]; f == nil || f.kind != kindTree || !errors.Is(f.err, ErrUnreadableDir) {
		t.Errorf("scan(unreadable dir) = %+v; want a kindTree ErrUnreadableDir", f)
	}
}

func TestMisnamed(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // substring of the warning; "" for none
	}{
		{"deploy.yaml", "name: deploy\ngroups:\n  - name: g\n    tools: [{tool: t}]\n", "rename it to deploy.seq.yaml"},
		{"flow.yml", "name: f\ngroups: []\n", "rename it to flow.seq.yml"},
		{"flow.json", `{"name": "f", "groups": []}`, "rename it to flow.seq.json"},
		{"flow.seq.YAML", "name: f\ngroups: []\n", "rename it to flow.seq.yaml"},
		{"values.yaml", "replicas: 3\ngroups: [a]\n", ""},
		{"list.yaml", "- name: x\n  groups: []\n", ""},
		{"package.json", `{"name": "x", "version": "1"}`, ""},
		{"skill.md", "---\nname: x\n---\n", "rename it to SKILL.md"},
		{"Skill.md", "", "rename it to SKILL.md"},
		{"SKILL.yaml", "", "rename it to skill.yaml"},
		{"skill.yml", "", "rename it to skill.yaml"},
		{"README.md", "", ""},
	}
	// A backup named on the command line (validate FILE) is told no
	// rename to its own name ("rename it to flow.seq.yaml~").
	for _, n := range []string{"flow.seq.yaml~", "flow.seq.yaml.bak"} {
		if got := misnameProblem(n, []byte("name: f\ngroups: []\n")); !strings.Contains(got, "editor's backup") || strings.Contains(got, "rename it to") {
			t.Errorf("misnameProblem(%q) = %q; want it to say a backup is ignored, with no rename to its own name", n, got)
		}
	}
	for _, tt := range tests {
		if !misnameCandidate(tt.name) {
			if tt.want != "" {
				t.Errorf("misnameCandidate(%q) = false; want true", tt.name)
			}
			continue
		}
		got := misnameProblem(tt.name, []byte(tt.text))
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("misnameProblem(%q) = %q; want %q", tt.name, got, tt.want)
		}
	}
	for _, n := range []string{"SKILL.md", "skill.yaml", "a.seq.yaml", "a.seq.json"} {
		if misnameCandidate(n) {
			t.Errorf("misnameCandidate(%q) = true for a name the registry loads", n)
		}
	}
}

func TestScanOthers(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/skill.md": "x", "ci/deploy.yaml": "name: d\ngroups: []\n", "a/SKILL.md.bak": "x"})
	res := scan(root, 1<<20, true)
	var got []string
	for _, o := range res.others {
		got = append(got, o.rel)
	}
	sort.Strings(got)
	if want := []string{"a/skill.md", "ci/deploy.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("scan others = %q; want %q", got, want)
	}
}

// kubeletVolume lays dir out as the kubelet mounts a ConfigMap volume:
// the files in dir/..<timestamp>/, dir/..data a link to it, and each
// top-level name a link through ..data. It returns the timestamped
// directory's name.
func kubeletVolume(t *testing.T, dir, stamp string, files map[string]string) string {
	t.Helper()
	ts := "..2026_01_02_15_04_05." + stamp
	writeTree(t, filepath.Join(dir, ts), files)
	must(t, os.Symlink(ts, filepath.Join(dir, "..data")))
	top := map[string]bool{}
	for rel := range files {
		top[strings.SplitN(rel, "/", 2)[0]] = true
	}
	for name := range top {
		must(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
	}
	return ts
}

// TestScanConfigMapVolume: the mount point of a ConfigMap volume is read
// once, under the names the ConfigMap gives its files: the kubelet's
// "..data" link and "..<timestamp>" directory (and any other entry whose
// name starts with "..") are skipped. Before, each top-level file was read
// twice (a clash with itself) and the rest under the timestamped path.
func TestScanConfigMapVolume(t *testing.T) {
	dir := t.TempDir()
	kubeletVolume(t, dir, "123456789", map[string]string{
		"smoke.seq.yaml":        "smoke",
		"skills/hello/SKILL.md": "hello",
	})
	writeTree(t, dir, map[string]string{"..stray/x.seq.yaml": "a dot-dot name anywhere is skipped", "skills-extra/..old/SKILL.md": "skipped too"})
	res := scanWithin(t, 10*time.Second, dir, 1<<20, false)
	got := map[string]string{}
	for rel, f := range res.files {
		if f.err != nil {
			t.Errorf("%s: %v", rel, f.err)
		}
		got[rel] = string(f.data)
	}
	want := map[string]string{"smoke.seq.yaml": "smoke", "skills/hello/SKILL.md": "hello"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scan of a ConfigMap volume =\n%v\nwant\n%v", got, want)
	}
	for _, d := range res.dirs {
		if strings.Contains(d, "..") {
			t.Errorf("scan watches %s, a kubelet directory", d)
		}
	}
}

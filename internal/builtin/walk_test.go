package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/skillbus/skillbus/pkg/tool"
)

// bigTree makes a tree under a temp dir: depth levels of fan directories
// each, every directory holding files Go files of two lines. It returns
// the root and the number of files.
func bigTree(t testing.TB, depth, fan, files int) (string, int) {
	t.Helper()
	root := t.TempDir()
	n := 0
	var mk func(dir string, d int)
	mk = func(dir string, d int) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range files {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", i)), []byte("package x\n// TODO\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if d < depth {
			for i := range fan {
				mk(filepath.Join(dir, fmt.Sprintf("d%d", i)), d+1)
			}
		}
	}
	mk(root, 0)
	return root, n
}

// oldGlob is fs.glob as it was before its own walk: doublestar.GlobWalk
// and the hidden filter. The new walk must find the same paths.
func oldGlob(t *testing.T, root, pat string, withHidden bool) []string {
	t.Helper()
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := []string{}
	err = doublestar.GlobWalk(r.FS(), pat, func(m string, d fs.DirEntry) error {
		if !withHidden && slices.ContainsFunc(strings.Split(m, "/"), hidden) {
			return nil
		}
		out = append(out, m)
		return nil
	}, doublestar.WithNoFollow())
	if err != nil {
		t.Fatalf("GlobWalk(%q): %v", pat, err)
	}
	sort.Strings(out)
	return slices.Compact(out) // {a/b,a}/** found some twice
}

// TestGlobAgreesWithDoublestar: the walk fs.glob now runs itself finds
// what doublestar.GlobWalk found, for patterns of every shape.
func TestGlobAgreesWithDoublestar(t *testing.T) {
	root, _ := project(t)
	for _, name := range []string{"lib/deep/a/b/x.go", "lib/deep/x.go", "docs/x", "x", ".hid/x.go", "lib/.h/y.go", "a{b/c.txt"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := newProvider(t, Config{Root: root})
	for _, pat := range []string{
		"**", "*", "**/*.go", "lib/**", "lib/**/*.go", "**/x", "**/x.go", "*/x.go", "*/*/x.go",
		"lib/deep/*/b/x.go", "README.md", "lib", "lib/util.go", "nope/**", "nope", "**/deep/**",
		"{lib,docs}/**/x*", "{lib/deep,docs}/*", "lib/{deep/a,deep}/**", "**/[xy].go", "?ib/*",
		".hid/*", "**/.h/*", "**/*", "lib/*/", "a\\{b/*", "**/b/x.go", "x/**",
	} {
		for _, withHidden := range []bool{false, true} {
			args, _ := json.Marshal(GlobArgs{Pattern: pat, Hidden: withHidden})
			res, code, err := call(t, p, "fs.glob", string(args))
			if err != nil {
				if pat == "lib/*/" && code == "" {
					continue
				}
				t.Errorf("fs.glob(%s): code %s: %v", args, code, err)
				continue
			}
			var got GlobResult
			if err := json.Unmarshal(res, &got); err != nil {
				t.Fatal(err)
			}
			clean, _ := local(pat)
			if want := oldGlob(t, root, clean, withHidden); !slices.Equal(got.Matches, want) {
				t.Errorf("fs.glob(%s) = %q; doublestar.GlobWalk finds %q", args, got.Matches, want)
			}
		}
	}
}

// TestGlobFoldsDoublestars: repeated ** segments are one, in fs.glob's
// pattern and fs.grep's include, so they match the same paths.
func TestGlobFoldsDoublestars(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"**/**/x", "**/x"},
		{"**/**/**/**/**/**/**/**/x", "**/x"},
		{"a/**/**/b/**/**", "a/**/b/**"},
		{"{a/**/**/b,c}", "{a/**/b,c}"},
		{"**x/**/**", "**x/**"},
		{"***/**", "***/**"},
	} {
		got, err := checkGlob("pattern", tc.in)
		if err != nil || got != tc.want {
			t.Errorf("checkGlob(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := checkGlob("pattern", strings.Repeat("{a,b}", 13)); err == nil || !strings.Contains(err.Error(), "alternatives") {
		t.Errorf("checkGlob of 13 two-way groups = %v; want an error naming the alternatives", err)
	}
}

// walkCalls are calls that walk the whole tree of bigTree: a pathological
// glob (the old walk took minutes), a grep and a line count.
var walkCalls = []struct{ tool, args string }{
	{"fs.glob", `{"pattern":"**/**/**/**/**/**/**/**/x"}`},
	{"fs.glob", `{"pattern":"**/**/**/**/**/**/**/**/*.go"}`},
	{"fs.grep", `{"pattern":"nothing matches (this)+","include":"**/**/**/**/**/**/*.go"}`},
	{"fs.lines", `{}`},
}

// TestWalksStopAtTheirDeadline: each walk over a tree of 9,330 files
// given 200 ms returns within 100 ms of its deadline, with the deadline's
// error (code 504 on the wire), or its result before it. Before, the
// glob ignored its context between matches and ran for minutes.
func TestWalksStopAtTheirDeadline(t *testing.T) {
	root, n := bigTree(t, 4, 6, 6)
	p := newProvider(t, Config{Root: root, MaxWalkEntries: 1 << 30, MaxWalkBytes: 1 << 40})
	const deadline = 200 * time.Millisecond
	for _, wc := range walkCalls {
		t.Run(wc.tool, func(t *testing.T) {
			f := toolFunc(t, p, wc.tool)
			// A loaded machine (-race, other tests) can delay one call
			// past the bound by scheduling alone: the call gets three
			// tries to return within it. A walk that ignores its deadline
			// fails all three (it takes seconds).
			var took time.Duration
			var err error
			for try := 0; try < 3; try++ {
				var ok bool
				took, err, ok = timedCall(f, wc.args, deadline)
				if !ok {
					t.Fatalf("%s(%s) did not return within 10 s of a %v deadline", wc.tool, wc.args, deadline)
				}
				t.Logf("%s(%s) over %d files: %v after %v", wc.tool, wc.args, n, err, took.Round(time.Millisecond))
				if took <= deadline+100*time.Millisecond {
					break
				}
			}
			if took > deadline+100*time.Millisecond {
				t.Errorf("%s(%s) returned %v after its start in three tries; want at most %v (deadline %v + 100 ms)", wc.tool, wc.args, took, deadline+100*time.Millisecond, deadline)
			}
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s(%s) = %v; want its result or context.DeadlineExceeded", wc.tool, wc.args, err)
			}
		})
	}
}

// timedCall calls f with args under a deadline and returns how long it took
// and its error; ok is false when it had not returned 10 s after its start.
func timedCall(f tool.Func, args string, deadline time.Duration) (time.Duration, error, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := f(ctx, json.RawMessage(args))
		done <- err
	}()
	select {
	case err := <-done:
		return time.Since(start), err, true
	case <-time.After(10 * time.Second):
		return 0, nil, false
	}
}

// toolFunc returns the function of p's tool name.
func toolFunc(t *testing.T, p *Provider, name string) tool.Func {
	t.Helper()
	for _, tl := range p.Tools() {
		if tl.Name == name {
			return tl.Func
		}
	}
	t.Fatalf("tool %s is not served", name)
	return nil
}

// TestWalkBudget: a call that visits more entries, or reads more bytes,
// than the provider's budget fails with code 413 naming the budget, its
// flag and what to narrow; a call within it is answered as before.
func TestWalkBudget(t *testing.T) {
	root, _ := bigTree(t, 2, 4, 5) // 21 directories, 105 files
	many := filepath.Join(root, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 600 {
		if err := os.WriteFile(filepath.Join(many, fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	small := newProvider(t, Config{Root: root, MaxWalkEntries: 100, MaxWalkBytes: 200})
	for _, tc := range []struct{ tool, args, want string }{
		{"fs.glob", `{"pattern":"**/*.go"}`, "--max-walk-entries"},
		{"fs.glob", `{"pattern":"**/**/**/nothing"}`, "--max-walk-entries"},
		{"fs.grep", `{"pattern":"TODO","path":"d0"}`, "--max-walk-bytes"},
		{"fs.lines", `{"path":"d1"}`, "--max-walk-bytes"},
		{"fs.grep", `{"pattern":"x","include":"*.md"}`, "--max-walk-entries"},
		{"fs.list", `{"path":"many"}`, "--max-walk-entries"},
	} {
		res, code, err := call(t, small, tc.tool, tc.args)
		if code != "413" || !strings.Contains(fmt.Sprint(err), tc.want) || !strings.Contains(fmt.Sprint(err), "narrow") {
			t.Errorf("%s(%s) with a small budget = %s, code %q, %v; want code 413 naming %s and what to narrow", tc.tool, tc.args, res, code, err, tc.want)
		}
	}
	// Within the budget: the same calls are answered.
	p := newProvider(t, Config{Root: root})
	for _, tc := range []struct{ tool, args, want string }{
		{"fs.glob", `{"pattern":"d0/**/**/f1.go"}`, `["d0/d0/f1.go","d0/d1/f1.go","d0/d2/f1.go","d0/d3/f1.go","d0/f1.go"]`},
		{"fs.lines", `{}`, `"files":105,"lines":210`},
		{"fs.list", `{"path":"many"}`, `{"name":"599","type":"file"}`},
	} {
		res, _, err := call(t, p, tc.tool, tc.args)
		if err != nil || !strings.Contains(string(res), tc.want) {
			t.Errorf("%s(%s) = %s, %v; want it to hold %s", tc.tool, tc.args, res, err, tc.want)
		}
	}
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/seqtest"
	"github.com/skillbus/skillbus/internal/skilltest"
)

// devTestsEvery is how often `skillbus dev` looks for changed test files
// and definitions under --dir.
const devTestsEvery = time.Second

// watchTests runs the test files of skillbus test (docs/testing.md) under
// dir in the background, as `skillbus dev` does: all of them once at the
// start, then a test file again whenever it or a definition it tests (its
// sequence; its skill and the skills it loads) changes, checked every
// `every`. Each run prints one line on w,
//
//	skillbus dev: tests FILE: N passed, N failed
//
// followed by a "--- FAIL" line per failing case, or the file's parse
// error. The returned stop ends the watch and waits for it.
func watchTests(ctx context.Context, w io.Writer, dir string, every time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]string{} // test file → the fingerprint it last ran with
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			files, _ := seqtest.Find([]string{dir})
			for _, p := range files {
				if ctx.Err() != nil {
					return
				}
				fp := testInputs(p)
				if seen[p] == fp {
					continue
				}
				seen[p] = fp
				fmt.Fprint(w, devTestText(ctx, p))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// devTestText runs the test file p and renders its result lines.
func devTestText(ctx context.Context, p string) string {
	results, err := runTestFile(ctx, p, nil, false, seqtest.Options{}, Env{Stderr: io.Discard})
	if err != nil {
		var pe *seqtest.ParseError
		if errors.As(err, &pe) {
			var b strings.Builder
			for _, q := range pe.All() { // every problem of the file, each at its line
				fmt.Fprintf(&b, "skillbus dev: tests %s\n", q.Error())
			}
			return b.String()
		}
		return fmt.Sprintf("skillbus dev: tests %s: %v\n", p, err)
	}
	var b strings.Builder
	passed, failed := 0, 0
	for _, r := range results {
		if r.Passed {
			passed++
		} else {
			failed++
		}
	}
	fmt.Fprintf(&b, "skillbus dev: tests %s: %d passed, %d failed\n", p, passed, failed)
	for _, r := range results {
		if !r.Passed {
			first, _, _ := strings.Cut(r.Failures[0], "\n")
			fmt.Fprintf(&b, "skillbus dev:   --- FAIL: %s:%d: %s: %s\n", r.File, r.Line, r.Case, first)
		}
	}
	return b.String()
}

// testInputs fingerprints a test file and the definition files it tests
// (their sizes and modification times): a change of any changes it. A
// file that does not parse is fingerprinted alone.
func testInputs(p string) string {
	paths := []string{p}
	if skilltest.IsSkillTest(p) {
		if f, err := skilltest.Load(p); err == nil {
			for _, d := range append([]string{f.Skill}, f.Skills...) {
				paths = append(paths, filepath.Join(d, "SKILL.md"), filepath.Join(d, "skill.yaml"), d)
			}
		}
	} else if f, err := seqtest.Load(p); err == nil {
		paths = append(paths, f.Sequence)
	}
	sort.Strings(paths[1:])
	var b strings.Builder
	for _, q := range paths {
		if st, err := os.Stat(q); err == nil && !st.IsDir() {
			fmt.Fprintf(&b, "%s %d %d\n", q, st.Size(), st.ModTime().UnixNano())
		}
	}
	return b.String()
}

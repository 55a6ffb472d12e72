// Command testsummary reads `go test -json` on stdin and prints what a plain
// `go test` prints (each package's ok/FAIL line, the output of failed tests
// and of failed builds), then a summary of every skipped test with the
// reason it gave, so a skip is never silent, and last the FAIL lines of
// the packages that failed again (or one line saying all passed), so the
// end of the log says how the run went. It exits 1 when a test or a build
// failed. .ci/run pipes the README's test command through it:
//
//	go test -race -json ./... | go run ./.ci/testsummary
//
// It lives under .ci (a directory `./...` does not match), so it is no
// package of the module's API.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output, build-fail
	FailedBuild string
}

type key struct{ pkg, test string }

func main() {
	failed, err := run(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// run copies the plain test output of r to w, then the skip summary; it
// reports whether anything failed.
func run(r io.Reader, w io.Writer) (bool, error) {
	out := map[key][]string{} // a test's output lines so far
	skips := map[key]string{} // skipped test -> its reason
	failed := false
	var pkgs int
	var failLines []string // go test's "FAIL\tpkg\t..." lines
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// Not an event (a build error printed as text): show it.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if e.Test == "" {
				if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" {
					fmt.Fprint(w, e.Output)
				}
				if strings.HasPrefix(e.Output, "FAIL\t") {
					failLines = append(failLines, e.Output)
				}
				continue
			}
			out[k] = append(out[k], e.Output)
		case "skip":
			if e.Test != "" {
				skips[k] = reason(out[k])
			}
			delete(out, k)
		case "fail":
			failed = true
			if e.Test == "" {
				pkgs++
			}
			if e.Test != "" {
				// As plain go test: the --- FAIL line, then what the test logged.
				for _, l := range out[k] {
					if strings.HasPrefix(strings.TrimSpace(l), "--- FAIL") {
						fmt.Fprint(w, l)
					}
				}
				for _, l := range out[k] {
					if t := strings.TrimSpace(l); !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- FAIL") {
						fmt.Fprint(w, l)
					}
				}
			}
			delete(out, k)
		case "pass":
			if e.Test == "" {
				pkgs++
			}
			delete(out, k)
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	keys := make([]key, 0, len(skips))
	for k := range skips {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].pkg != keys[j].pkg {
			return keys[i].pkg < keys[j].pkg
		}
		return keys[i].test < keys[j].test
	})
	fmt.Fprintf(w, "\n== skipped tests: %d\n", len(keys))
	for _, k := range keys {
		fmt.Fprintf(w, "SKIP %s %s: %s\n", k.pkg, k.test, skips[k])
	}
	fmt.Fprintln(w)
	switch {
	case len(failLines) > 0:
		for _, l := range failLines {
			fmt.Fprint(w, l)
		}
	case failed:
		fmt.Fprintln(w, "FAIL (a build failed: see above)")
	default:
		fmt.Fprintf(w, "ok: %d packages passed\n", pkgs)
	}
	return failed, nil
}

// reason is what a skipped test printed (t.Skip's message), on one line,
// without the "=== RUN" and "--- SKIP" lines.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}

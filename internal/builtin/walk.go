package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/skillbus/skillbus/pkg/tool"
)

// budget is one call's share of the provider's walk budget
// (Config.MaxWalkEntries, Config.MaxWalkBytes; docs/tools.md, "Built-in
// tools: limits") and its cancellation: every entry a walk visits and every
// byte a tool reads is counted, and each count checks the call's context,
// so a walk stops within one directory entry (or one file read) of its
// deadline or its caller's cancel.
type budget struct {
	ctx        context.Context
	tool       string // the tool's name, for the error
	entries    int
	maxEntries int
	bytes      int64
	maxBytes   int64
}

func (p *Provider) budget(ctx context.Context, toolName string) *budget {
	return &budget{ctx: ctx, tool: toolName, maxEntries: p.cfg.MaxWalkEntries, maxBytes: int64(p.cfg.MaxWalkBytes)}
}

// visit counts one directory entry. It returns the context's error once
// the call is over, or a "413" tool error once the entries are spent.
func (b *budget) visit() error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	b.entries++
	if b.entries > b.maxEntries {
		return tool.Errorf("413", "%s stopped after visiting %d entries, the provider's walk budget (--max-walk-entries, default %d): narrow the path or the pattern (for example src/**/*.go rather than **/*.go), or serve the tools with a larger --max-walk-entries", b.tool, b.maxEntries, DefaultMaxWalkEntries)
	}
	return nil
}

// read counts n bytes read. It returns the context's error once the call
// is over, or a "413" tool error once the bytes are spent.
func (b *budget) read(n int) error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	b.bytes += int64(n)
	if b.bytes > b.maxBytes {
		return tool.Errorf("413", "%s stopped after reading %d bytes, the provider's read budget for one call (--max-walk-bytes, default %d): narrow the path or the include pattern, or serve the tools with a larger --max-walk-bytes", b.tool, b.maxBytes, DefaultMaxWalkBytes)
	}
	return nil
}

// maxAlternatives caps the product of a glob's {…} alternative counts: the
// matcher tries alternatives by backtracking, so {a,b}{a,b}… doubles its
// work with every group.
const maxAlternatives = 4096

// checkGlob validates a glob (fs.glob's pattern, fs.grep's include) and
// returns it with repeated ** segments folded into one ("**/**/x" matches
// what "**/x" matches, and each ** multiplies the matcher's backtracking).
// Errors: a "400" tool error naming what names the pattern (arg).
func checkGlob(arg, pat string) (string, error) {
	if !doublestar.ValidatePattern(pat) {
		return "", tool.Errorf("400", "%s %q is not a valid glob: check brackets and braces", arg, pat)
	}
	segs := strings.Split(pat, "/")
	folded := segs[:0:0]
	for i, s := range segs {
		if s == "**" && i > 0 && segs[i-1] == "**" {
			continue
		}
		folded = append(folded, s)
	}
	pat = strings.Join(folded, "/")
	if n := alternatives(pat); n > maxAlternatives {
		return "", tool.Errorf("400", "%s %q has too many {…} alternatives (%d combinations, at most %d): split it into several calls", arg, pat, n, maxAlternatives)
	}
	return pat, nil
}

// alternatives returns the product of the alternative counts of pat's
// brace groups (an upper bound for nested groups), capped just above
// maxAlternatives.
func alternatives(pat string) int {
	total := 1
	var counts []int // one per open group
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '{':
			counts = append(counts, 1)
		case ',':
			if len(counts) > 0 {
				counts[len(counts)-1]++
			}
		case '}':
			if len(counts) > 0 {
				total *= counts[len(counts)-1]
				counts = counts[:len(counts)-1]
				if total > maxAlternatives {
					return maxAlternatives + 1
				}
			}
		}
	}
	return total
}

// globSegments splits a folded glob into its '/'-separated segments for
// pruning, or returns nil when a brace group holds a '/' (then a segment
// of the pattern is not a segment of the path, and the walk prunes
// nothing).
func globSegments(pat string) []string {
	depth := 0
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case '/':
			if depth > 0 {
				return nil
			}
		}
	}
	return strings.Split(pat, "/")
}

// mayHoldMatch reports whether a directory at dir (a path relative to the
// root, '/'-separated) can hold a path matching the glob of segs: it runs
// the segments as an automaton over dir's parts, ** staying on any part.
func mayHoldMatch(segs []string, dir string) bool {
	n := len(segs)
	closure := func(states []int) []int {
		for i := 0; i < len(states); i++ {
			if s := states[i]; s < n && segs[s] == "**" && !slices.Contains(states, s+1) {
				states = append(states, s+1)
			}
		}
		return states
	}
	states := closure([]int{0})
	for _, part := range strings.Split(dir, "/") {
		var next []int
		for _, s := range states {
			switch {
			case s == n:
			case segs[s] == "**":
				if !slices.Contains(next, s) {
					next = append(next, s)
				}
			case doublestar.MatchUnvalidated(segs[s], part):
				if !slices.Contains(next, s+1) {
					next = append(next, s+1)
				}
			}
		}
		states = closure(next)
		if len(states) == 0 {
			return false
		}
	}
	return slices.ContainsFunc(states, func(s int) bool { return s < n })
}

// globWalk calls fn with every path under the root matching pat (valid and
// folded: checkGlob), in walk order, without following symlinks and
// without entering hidden directories unless withHidden. It reads only the
// directories that can hold a match, counts every entry on b and stops at
// b's first error (the call's end, the budget), or when fn returns
// errStopWalk (then it returns nil). A base directory that does not exist
// or cannot be read has no matches.
func (p *Provider) globWalk(b *budget, pat string, withHidden bool, fn func(name string) error) error {
	base, _ := doublestar.SplitPattern(pat)
	segs := globSegments(pat)
	err := fs.WalkDir(p.root.FS(), base, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == base {
				return fs.SkipAll
			}
			return nil // an unreadable subdirectory is left out
		}
		if err := b.visit(); err != nil {
			return err
		}
		if name != base && !withHidden && hidden(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		// The base itself matches only as a directory (lib for lib/**),
		// and the root only for **, as doublestar.GlobWalk has them.
		if (name != base || d.IsDir()) && (name != "." || pat == "**") && doublestar.MatchUnvalidated(pat, name) {
			if err := fn(name); err != nil {
				return err
			}
		}
		if d.IsDir() && name != "." && segs != nil && !mayHoldMatch(segs, name) {
			return fs.SkipDir
		}
		return nil
	})
	if err == errStopWalk {
		return nil
	}
	return err
}

// walkStopped names the tool in a walk's error when it is the context's
// (the budget's errors name it already); errors.Is still sees the
// context's error, so a deadline is code "504" on the wire.
func walkStopped(toolName string, err error) error {
	var te *tool.Error
	if errors.As(err, &te) {
		return err
	}
	return fmt.Errorf("%s stopped: %w", toolName, err)
}

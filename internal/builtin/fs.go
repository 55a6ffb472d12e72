package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/skillbus/skillbus/pkg/tool"
)

// Entry is one item of fs.list.
type Entry struct {
	Name string `json:"name"`
	// Type is "file", "dir", "symlink" or "other".
	Type string `json:"type"`
	// Size in bytes (files only).
	Size int64 `json:"size,omitempty"`
}

// ListResult is fs.list's reply.
type ListResult struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated,omitempty"`
}

// StatResult is fs.stat's reply.
type StatResult struct {
	Path     string    `json:"path"`
	Type     string    `json:"type"`
	Size     int64     `json:"size"`
	Mode     string    `json:"mode"`
	Modified time.Time `json:"modified"`
}

// ReadResult is fs.read's reply. Content is the text (invalid UTF-8
// replaced); Truncated says the file was longer than the limit.
type ReadResult struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
}

// GlobResult is fs.glob's reply: matching paths relative to the root,
// sorted.
type GlobResult struct {
	Pattern   string   `json:"pattern"`
	Matches   []string `json:"matches"`
	Truncated bool     `json:"truncated,omitempty"`
}

// GrepMatch is one matching line of fs.grep: Line is 1-based; Text is cut at
// 300 bytes.
type GrepMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// GrepResult is fs.grep's reply. Count is the number of matches returned;
// Truncated says more matched.
type GrepResult struct {
	Pattern       string      `json:"pattern"`
	Matches       []GrepMatch `json:"matches"`
	Count         int         `json:"count"`
	FilesSearched int         `json:"files_searched"`
	Truncated     bool        `json:"truncated,omitempty"`
}

// LanguageCount is one language of fs.lines.
type LanguageCount struct {
	Language string `json:"language"`
	Files    int    `json:"files"`
	Lines    int    `json:"lines"`
}

// LinesResult is fs.lines's reply: languages sorted by lines, most first.
type LinesResult struct {
	Path      string          `json:"path"`
	Files     int             `json:"files"`
	Lines     int             `json:"lines"`
	Languages []LanguageCount `json:"languages"`
	// Skipped counts files not counted: binary or larger than the limit.
	Skipped int `json:"skipped,omitempty"`
}

// decodeArgs reads a tool's arguments strictly: a field the tool does not
// have is an error naming it, never ignored.
func decodeArgs(args json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "json: ")
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			msg = fmt.Sprintf("argument %q: got a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
		}
		return tool.Errorf("400", "bad arguments: %s", msg)
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool", "ptr":
		return "a boolean"
	case "int", "int64":
		return "an integer"
	case "slice":
		return "an array"
	}
	return "another type"
}

// local checks a tool path and returns it cleaned, in the form os.Root
// wants. "" means the root itself. Absolute paths and paths climbing above
// the root are refused with code 403.
func local(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if strings.ContainsRune(p, 0) || !utf8.ValidString(p) {
		return "", tool.Errorf("400", "path %q holds a NUL byte or is not valid UTF-8", p)
	}
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) || (len(p) > 1 && p[1] == ':') {
		return "", tool.Errorf("403", "path %q is absolute: give a path relative to the tool root (for example %q)", p, strings.TrimLeft(p, `/\`))
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", tool.Errorf("403", "path %q leads outside the tool root: only files under the root can be reached", p)
	}
	return c, nil
}

// file checks a tool path as local does and, when it ends in "/" (or
// "/."), that it names a directory, as the OS does: "go.mod/" is refused
// with code "400" (not a directory) rather than read as "go.mod". Used by
// the tools that take a file (fs.read, fs.stat) or a file or directory
// (fs.grep, fs.lines); docs/tools.md states the rule.
func (p *Provider) file(given string) (string, error) {
	name, err := local(given)
	if err != nil || name == "." || !(strings.HasSuffix(given, "/") || strings.HasSuffix(given, "/.")) {
		return name, err
	}
	fi, err := p.root.Stat(name)
	if err == nil && !fi.IsDir() {
		return "", tool.Errorf("400", "path %q is not a directory: it ends in / but %q is a %s; drop the trailing slash to name the file", given, name, typeOf(fi.Mode()))
	}
	return name, nil
}

// fsError maps an error from the root onto a tool error with a code.
func fsError(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), "escapes from parent"):
		// os.Root's own refusal: a symlink (or ..) pointing outside.
		return tool.Errorf("403", "path %q leads outside the tool root (through a symlink): only files under the root can be reached", p)
	case errors.Is(err, fs.ErrNotExist):
		return tool.Errorf("404", "no file or directory %q under the tool root", p)
	case errors.Is(err, fs.ErrPermission):
		return tool.Errorf("403", "permission denied reading %q", p)
	case errors.Is(err, syscall.ELOOP):
		// The caller's path, not the provider's failure: os.Root gives
		// ELOOP for a loop and for more than 8 links in a row.
		return tool.Errorf("400", "path %q is a symlink loop (a link leading, through others, back to itself) or goes through more than 8 symlinks: it leads to no file; fix or remove the link", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return tool.Errorf("500", "%s: %v", p, err)
}

// openFile opens a regular file under the root for reading. A FIFO, a
// device or a socket is refused (code "400") after a stat through the root,
// before any open, so that a named pipe cannot block the call; the open
// itself is non-blocking and the opened file is checked again, so a file
// swapped for a pipe in between is refused too.
func (p *Provider) openFile(name string) (*os.File, fs.FileInfo, error) {
	fi, err := p.root.Stat(name)
	if err != nil {
		return nil, nil, fsError(name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(name, fi.Mode())
	}
	f, err := p.root.OpenFile(name, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, nil, fsError(name, err)
	}
	fi, err = f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, nil, fsError(name, err)
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, nil, notRegular(name, fi.Mode())
	}
	return f, fi, nil
}

// notRegular is the error for a path that is not a regular file.
func notRegular(name string, m fs.FileMode) error {
	if m.IsDir() {
		return tool.Errorf("400", "%q is a directory, not a file: list it with fs.list", name)
	}
	return tool.Errorf("400", "%q is a %s, not a regular file: the file tools read regular files only", name, kindOf(m))
}

// kindOf names a file type for messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

func typeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

func hidden(name string) bool { return len(name) > 1 && name[0] == '.' && name != ".." }

func (p *Provider) list(ctx context.Context, args json.RawMessage) (any, error) {
	var in ListArgs
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	dir, err := local(in.Path)
	if err != nil {
		return nil, err
	}
	des, err := p.readDir(p.budget(ctx, "fs.list"), dir)
	var te *tool.Error
	if err != nil && (errors.As(err, &te) || ctx.Err() != nil) {
		return nil, walkStopped("fs.list", err)
	}
	if err != nil {
		if fi, serr := p.root.Stat(dir); serr == nil && !fi.IsDir() {
			// The caller's mistake, not the provider's failure.
			what := "a file"
			if !fi.Mode().IsRegular() {
				what = "not a directory (" + typeOf(fi.Mode()) + ")"
			}
			return nil, tool.Errorf("400", "path %q is %s: fs.list lists directories; read a file with fs.read, or get its size and type with fs.stat", dir, what)
		}
		return nil, fsError(dir, err)
	}
	out := ListResult{Path: dir, Entries: []Entry{}}
	for _, de := range des {
		if !in.Hidden && hidden(de.Name()) {
			continue
		}
		if len(out.Entries) == p.cfg.MaxResults {
			out.Truncated = true
			break
		}
		e := Entry{Name: de.Name(), Type: typeOf(de.Type())}
		if e.Type == "file" {
			if fi, err := de.Info(); err == nil {
				e.Size = fi.Size()
			}
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// readDir reads the directory dir sorted by name, a batch at a time,
// counting its entries on b, so a directory of a million entries ends at
// the budget or the call's end rather than after reading them all.
func (p *Provider) readDir(b *budget, dir string) ([]fs.DirEntry, error) {
	f, err := p.root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var des []fs.DirEntry
	for {
		batch, err := f.ReadDir(256)
		for range batch {
			if err := b.visit(); err != nil {
				return nil, err
			}
		}
		des = append(des, batch...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return des, nil
}

func (p *Provider) stat(ctx context.Context, args json.RawMessage) (any, error) {
	var in StatArgs
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	name, err := p.file(in.Path)
	if err != nil {
		return nil, err
	}
	fi, err := p.root.Stat(name)
	if err != nil {
		return nil, fsError(name, err)
	}
	return StatResult{Path: name, Type: typeOf(fi.Mode()), Size: fi.Size(), Mode: fi.Mode().Perm().String(), Modified: fi.ModTime().UTC()}, nil
}

func (p *Provider) read(ctx context.Context, args json.RawMessage) (any, error) {
	var in ReadArgs
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if in.Path == "" {
		return nil, tool.Errorf("400", "bad arguments: path is required (a file relative to the tool root)")
	}
	if in.MaxBytes < 0 {
		return nil, tool.Errorf("400", "bad arguments: max_bytes %d is negative", in.MaxBytes)
	}
	limit := p.cfg.MaxReadBytes
	if in.MaxBytes > 0 && in.MaxBytes < limit {
		limit = in.MaxBytes
	}
	name, err := p.file(in.Path)
	if err != nil {
		return nil, err
	}
	f, fi, err := p.openFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fsError(name, err)
	}
	out := ReadResult{Path: name, Size: fi.Size()}
	if len(buf) > limit {
		buf, out.Truncated = buf[:limit], true
	}
	if bytes.IndexByte(buf[:min(len(buf), 8000)], 0) >= 0 {
		return nil, tool.Errorf("415", "%q is a binary file: fs.read returns text only", name)
	}
	out.Content = strings.ToValidUTF8(string(buf), "\uFFFD")
	return out, nil
}

func (p *Provider) glob(ctx context.Context, args json.RawMessage) (any, error) {
	var in GlobArgs
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if in.Pattern == "" {
		return nil, tool.Errorf("400", "bad arguments: pattern is required, for example \"**/*.go\"")
	}
	pat, err := local(in.Pattern)
	if err != nil {
		return nil, err
	}
	if pat, err = checkGlob("pattern", pat); err != nil {
		return nil, err
	}
	out := GlobResult{Pattern: in.Pattern, Matches: []string{}}
	err = p.globWalk(p.budget(ctx, "fs.glob"), pat, in.Hidden, func(m string) error {
		if !in.Hidden && slices.ContainsFunc(strings.Split(m, "/"), hidden) {
			return nil
		}
		if len(out.Matches) == p.cfg.MaxResults {
			out.Truncated = true
			return errStopWalk
		}
		out.Matches = append(out.Matches, m)
		return nil
	})
	if err != nil {
		return nil, walkStopped("fs.glob", err)
	}
	sort.Strings(out.Matches)
	return out, nil
}

// walkFiles calls fn for every regular file under dir (not following
// symlinks, skipping hidden names unless withHidden), counting every entry
// on b and stopping at b's first error (the call's end, the budget) or
// when fn returns errStopWalk.
func (p *Provider) walkFiles(b *budget, dir string, withHidden bool, fn func(name string) error) error {
	fi, err := p.root.Stat(dir)
	if err != nil {
		return fsError(dir, err)
	}
	if fi.Mode().IsRegular() {
		return fn(dir)
	}
	err = fs.WalkDir(p.root.FS(), dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == dir {
				return err
			}
			return nil // an unreadable subdirectory is left out
		}
		if err := b.visit(); err != nil {
			return err
		}
		if name != dir && !withHidden && hidden(d.Name()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return fn(name)
	})
	if errors.Is(err, errStopWalk) {
		return nil
	}
	var te *tool.Error
	if err != nil && b.ctx.Err() == nil && !errors.As(err, &te) {
		return fsError(dir, err)
	}
	return err
}

var errStopWalk = errors.New("stop walk")

// readChunk is how much readText reads between two checks of the budget.
const readChunk = 64 << 10

// readText reads a file for grep and lines, counting the bytes on b: nil
// when it is not a regular file, binary or larger than 16× MaxReadBytes;
// an error only from b (the call's end, the read budget).
func (p *Provider) readText(b *budget, name string) ([]byte, error) {
	f, fi, err := p.openFile(name)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	limit := int64(p.cfg.MaxReadBytes) * 16
	if fi.Size() > limit {
		return nil, nil
	}
	buf := make([]byte, 0, min(fi.Size()+1, limit+1))
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, readChunk)
		}
		n, rerr := f.Read(buf[len(buf):min(cap(buf), len(buf)+readChunk)])
		buf = buf[:len(buf)+n]
		if err := b.read(n); err != nil {
			return nil, err
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, nil
		}
	}
	if int64(len(buf)) > limit || bytes.IndexByte(buf[:min(len(buf), 8000)], 0) >= 0 {
		return nil, nil
	}
	return buf, nil
}

func (p *Provider) grep(ctx context.Context, args json.RawMessage) (any, error) {
	var in GrepArgs
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if in.Pattern == "" {
		return nil, tool.Errorf("400", "bad arguments: pattern is required (an RE2 regular expression, for example \"TODO|FIXME\")")
	}
	expr := in.Pattern
	if in.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, tool.Errorf("400", "pattern %q is not a valid RE2 regular expression: %v", in.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	include := in.Include
	if include != "" {
		if include, err = checkGlob("include", include); err != nil {
			return nil, err
		}
	}
	if in.MaxMatches < 0 {
		return nil, tool.Errorf("400", "bad arguments: max_matches %d is negative", in.MaxMatches)
	}
	limit := min(100, p.cfg.MaxResults)
	if in.MaxMatches > 0 {
		limit = min(in.MaxMatches, p.cfg.MaxResults)
	}
	dir, err := p.file(in.Path)
	if err != nil {
		return nil, err
	}
	out := GrepResult{Pattern: in.Pattern, Matches: []GrepMatch{}}
	bud := p.budget(ctx, "fs.grep")
	err = p.walkFiles(bud, dir, in.Hidden, func(name string) error {
		if include != "" && !doublestar.MatchUnvalidated(include, name) && !doublestar.MatchUnvalidated(include, path.Base(name)) {
			return nil
		}
		b, err := p.readText(bud, name)
		if b == nil {
			return err
		}
		out.FilesSearched++
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64<<10), len(b)+1)
		for n := 1; sc.Scan(); n++ {
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			line := sc.Bytes()
			if !re.Match(line) {
				continue
			}
			if len(out.Matches) == limit {
				out.Truncated = true
				return errStopWalk
			}
			out.Matches = append(out.Matches, GrepMatch{Path: name, Line: n, Text: clipText(string(line), 300)})
		}
		return nil
	})
	if err != nil {
		return nil, walkStopped("fs.grep", err)
	}
	out.Count = len(out.Matches)
	return out, nil
}

// clipText cuts s to at most n bytes on a rune boundary, trimming spaces
// and marking a cut with "…".
func clipText(s string, n int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func (p *Provider) lines(ctx context.Context, args json.RawMessage) (any, error) {
	var in LinesArgs
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	dir, err := p.file(in.Path)
	if err != nil {
		return nil, err
	}
	out := LinesResult{Path: dir, Languages: []LanguageCount{}}
	byLang := map[string]*LanguageCount{}
	bud := p.budget(ctx, "fs.lines")
	err = p.walkFiles(bud, dir, in.Hidden, func(name string) error {
		lang := Language(name)
		if lang == "" {
			return nil
		}
		b, err := p.readText(bud, name)
		if err != nil {
			return err
		}
		if b == nil {
			out.Skipped++
			return nil
		}
		n := bytes.Count(b, []byte{'\n'})
		if len(b) > 0 && b[len(b)-1] != '\n' {
			n++
		}
		lc := byLang[lang]
		if lc == nil {
			lc = &LanguageCount{Language: lang}
			byLang[lang] = lc
		}
		lc.Files++
		lc.Lines += n
		out.Files++
		out.Lines += n
		return nil
	})
	if err != nil {
		return nil, walkStopped("fs.lines", err)
	}
	for _, lc := range byLang {
		out.Languages = append(out.Languages, *lc)
	}
	sort.Slice(out.Languages, func(i, j int) bool {
		a, b := out.Languages[i], out.Languages[j]
		if a.Lines != b.Lines {
			return a.Lines > b.Lines
		}
		return a.Language < b.Language
	})
	return out, nil
}

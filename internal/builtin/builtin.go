// Package builtin is skillbus's standard tool provider (issue 8): file-system
// tools confined to one root directory, a command runner limited to an
// explicit allow-list, and a text renderer for reports. `skillbus tools serve`
// serves them over pkg/tool; `skillbus dev` and `skillbus run` (without
// NATS_URL) serve them in-process.
//
// # Tools
//
//	fs.list    {path, hidden}                         → {path, entries: [{name, type, size}], truncated}
//	fs.stat    {path}                                 → {path, type, size, mode, modified}
//	fs.read    {path, max_bytes}                      → {path, size, content, truncated}
//	fs.glob    {pattern, hidden}                      → {pattern, matches: [path], truncated}
//	fs.grep    {pattern, path, include, ignore_case, max_matches, hidden}
//	                                                  → {pattern, matches: [{path, line, text}], count, files_searched, truncated}
//	fs.lines   {path, hidden}                         → {path, files, lines, languages: [{language, files, lines}]}
//	cmd.run    {command, args, dir, timeout, check}   → {command, exit_code, stdout, stderr, truncated, duration}
//	text.render {template, data}                      → the rendered text (a JSON string)
//
// Every path is relative to the provider's root, written with '/' and
// resolved through an os.Root, so a path that leaves the root is refused:
// an absolute path, a path whose ".." climbs above the root, and a symlink
// that points outside it (code "403"). Walks (glob, grep, lines) never follow
// symlinks and skip hidden entries (a name starting with '.') unless hidden
// is true. cmd.run is served only when the allow-list is not empty.
//
// Error codes (pkg/tool Error): "400" bad arguments, "403" refused (outside
// the root, command not allowed), "404" not found, "413" a file larger than
// the read limit or output beyond the limit with check, or text.render
// output over DefaultMaxRenderBytes, or a walk over its budget), "500"
// other failures, "504" a command that ran past its timeout (and any tool
// stopped by the caller's deadline).
//
// Walks (fs.glob, fs.grep, fs.lines, and fs.list's read of a directory)
// check the call's context at every entry and every 64 KiB read, so they
// stop within milliseconds of the caller's deadline or cancel, and count
// the call's work: more than Config.MaxWalkEntries entries visited or
// Config.MaxWalkBytes bytes read ends the call with code "413" naming the
// budget. fs.glob folds repeated ** segments ("**/**/x" is "**/x"),
// reads only directories that can hold a match, and refuses a pattern of
// more than 4,096 {…} combinations (docs/tools.md, "Built-in tools:
// limits").
// text.render also stops after MaxRenderSteps range iterations and template
// calls (code "400"), so a template cannot spin without writing, and its
// string-building functions (printf, print, println, html, js, urlquery,
// join, json, upper, lower, trunc, lines, keys) reserve their result's size
// before building it: one result over the output limit, or more than
// MaxRenderWorkBytes built in one render, is code "413" — a printf width of
// a million cannot make the provider allocate it. JSON integers in
// text.render's data keep their exact value (9007199254740993 renders as
// such).
package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillbus/skillbus/internal/version"
	"github.com/skillbus/skillbus/pkg/tool"
)

// Defaults of Config.
const (
	DefaultMaxReadBytes   = 256 << 10 // 256 KiB: one fs.read, one file searched by fs.grep is 16×
	DefaultMaxResults     = 1000      // entries, matches or paths in one reply
	DefaultCommandTimeout = 30 * time.Second
	DefaultMaxOutputBytes = 64 << 10 // 64 KiB per stream of cmd.run
	DefaultMaxRenderBytes = 256 << 10
	DefaultMaxWalkEntries = 100_000  // directory entries one fs.glob, fs.grep, fs.lines or fs.list call visits
	DefaultMaxWalkBytes   = 64 << 20 // 64 MiB: file bytes one fs.grep or fs.lines call reads
)

// ErrConfig is returned by Config.Validate and New; the message names the
// field.
var ErrConfig = errors.New("builtin: invalid configuration")

// Config configures the provider. Root is required; every other field has a
// default.
type Config struct {
	// Root is the directory the fs.* tools (and cmd.run's working
	// directories) are confined to; required, must exist.
	Root string
	// MaxReadBytes caps what fs.read returns (a larger file is cut and
	// marked truncated) and, times 16, the size of a file fs.grep and
	// fs.lines read; default DefaultMaxReadBytes (256 KiB). Keep it well
	// under the NATS server's max_payload (1 MiB by default).
	MaxReadBytes int
	// MaxResults caps the entries, paths or matches of one reply (the
	// reply says truncated); default DefaultMaxResults (1,000).
	MaxResults int
	// AllowCommands is cmd.run's allow-list: command names looked up in
	// PATH ("git") or absolute paths; a request must name one of them
	// exactly. Empty (default): cmd.run is not served at all.
	AllowCommands []string
	// CommandTimeout is the longest a cmd.run call may run (a request may
	// ask for less); default DefaultCommandTimeout (30 s).
	CommandTimeout time.Duration
	// MaxOutputBytes caps each of cmd.run's stdout and stderr; default
	// DefaultMaxOutputBytes (64 KiB). Output beyond it is dropped and the
	// reply says truncated.
	MaxOutputBytes int
	// MaxWalkEntries caps the directory entries one call of fs.glob,
	// fs.grep, fs.lines or fs.list visits; beyond it the call fails with
	// code "413" naming the budget (docs/tools.md, "Built-in tools:
	// limits"). Default DefaultMaxWalkEntries (100,000).
	MaxWalkEntries int
	// MaxWalkBytes caps the file bytes one call of fs.grep or fs.lines
	// reads; beyond it the call fails with code "413" naming the budget.
	// Default DefaultMaxWalkBytes (64 MiB).
	MaxWalkBytes int
	// Prefix, when set, is put before every tool name: with Prefix "web"
	// the tools are web.fs.read, web.fs.list, ... (subjects
	// tool.web.fs.read, ...), so providers with different roots can share
	// a bus without answering for each other. Dots separate parts;
	// letters, digits, '-' and '_' within parts. Default none.
	Prefix string
}

// Validate reports the first invalid field. Errors: ErrConfig.
func (c Config) Validate() error {
	switch {
	case c.Root == "":
		return fmt.Errorf("%w: Root is empty: give the directory the file tools may read (for example --root .)", ErrConfig)
	case c.MaxReadBytes < 0:
		return fmt.Errorf("%w: MaxReadBytes %d is negative", ErrConfig, c.MaxReadBytes)
	case c.MaxResults < 0:
		return fmt.Errorf("%w: MaxResults %d is negative", ErrConfig, c.MaxResults)
	case c.CommandTimeout < 0:
		return fmt.Errorf("%w: CommandTimeout %v is negative", ErrConfig, c.CommandTimeout)
	case c.MaxOutputBytes < 0:
		return fmt.Errorf("%w: MaxOutputBytes %d is negative", ErrConfig, c.MaxOutputBytes)
	case c.MaxWalkEntries < 0:
		return fmt.Errorf("%w: MaxWalkEntries %d is negative", ErrConfig, c.MaxWalkEntries)
	case c.MaxWalkBytes < 0:
		return fmt.Errorf("%w: MaxWalkBytes %d is negative", ErrConfig, c.MaxWalkBytes)
	}
	if c.Prefix != "" {
		for _, part := range strings.Split(c.Prefix, ".") {
			if part == "" || strings.IndexFunc(part, func(r rune) bool {
				return !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
			}) >= 0 {
				return fmt.Errorf("%w: Prefix %q: use letters, digits, '-' and '_', with dots between parts", ErrConfig, c.Prefix)
			}
		}
	}
	for _, a := range c.AllowCommands {
		if a == "" || strings.ContainsAny(a, " \t\n") {
			return fmt.Errorf("%w: AllowCommands entry %q: give a command name (git) or an absolute path, without arguments", ErrConfig, a)
		}
		if strings.ContainsRune(a, filepath.Separator) && !filepath.IsAbs(a) {
			return fmt.Errorf("%w: AllowCommands entry %q: a command with a path must be absolute", ErrConfig, a)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MaxReadBytes == 0 {
		c.MaxReadBytes = DefaultMaxReadBytes
	}
	if c.MaxResults == 0 {
		c.MaxResults = DefaultMaxResults
	}
	if c.CommandTimeout == 0 {
		c.CommandTimeout = DefaultCommandTimeout
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.MaxWalkEntries == 0 {
		c.MaxWalkEntries = DefaultMaxWalkEntries
	}
	if c.MaxWalkBytes == 0 {
		c.MaxWalkBytes = DefaultMaxWalkBytes
	}
	return c
}

// Provider holds the open root and serves the tools. Create it with New and
// Close it when done.
type Provider struct {
	cfg     Config
	root    *os.Root
	rootAbs string                     // the root's absolute path with symlinks resolved
	schemas map[string]json.RawMessage // argument schemas by tool name
}

// New opens cfg.Root and returns the provider. Errors: ErrConfig, or the
// error opening the root (it does not exist, is not a directory).
func New(cfg Config) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	abs, err := filepath.Abs(cfg.Root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("builtin: tool root %q: %w", cfg.Root, err)
	}
	sch, err := schemas()
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("builtin: tool root %q: %w", cfg.Root, err)
	}
	cfg.AllowCommands = slices.Clone(cfg.AllowCommands)
	return &Provider{cfg: cfg, root: r, rootAbs: abs, schemas: sch}, nil
}

// Root returns the absolute path of the root, symlinks resolved.
func (p *Provider) Root() string { return p.rootAbs }

// Close releases the root. Tools called afterwards fail.
func (p *Provider) Close() error { return p.root.Close() }

// Tools returns the tools to serve: the fs.* tools and text.render always,
// cmd.run only when Config.AllowCommands is not empty; each named with
// Config.Prefix before it when set.
func (p *Provider) Tools() []tool.Tool {
	ts := []tool.Tool{
		{Name: "fs.list", Description: "List a directory under the tool root: names, types and sizes.", Func: p.list},
		{Name: "fs.stat", Description: "Describe a file or directory under the tool root.", Func: p.stat},
		{Name: "fs.read", Description: "Read a text file under the tool root, up to a size limit.", Func: p.read},
		{Name: "fs.glob", Description: "Find paths under the tool root matching a glob (** for any depth).", Func: p.glob},
		{Name: "fs.grep", Description: "Search text files under the tool root for a regular expression (RE2).", Func: p.grep},
		{Name: "fs.lines", Description: "Count files and lines by language under a directory of the tool root.", Func: p.lines},
		{Name: "text.render", Description: "Render a Go text/template with the given data; returns the text.", Func: render},
	}
	if len(p.cfg.AllowCommands) > 0 {
		ts = append(ts, tool.Tool{Name: "cmd.run", Description: "Run an allow-listed command (" + strings.Join(p.cfg.AllowCommands, ", ") + ") in a directory of the tool root.", Func: p.run})
	}
	for i := range ts {
		ts[i].Schema = p.schemas[ts[i].Name]
		if p.cfg.Prefix != "" {
			ts[i].Name = p.cfg.Prefix + "." + ts[i].Name
		}
	}
	return ts
}

// Config returns the provider's configuration in readable form: the
// resolved root, the allow-list, the prefix, the limits and the skillbus
// version — what makes two providers answer the same call differently.
func (p *Provider) Config() string {
	allow := slices.Clone(p.cfg.AllowCommands)
	slices.Sort(allow)
	return fmt.Sprintf("root=%s allow-cmd=%s prefix=%s max-read=%d max-results=%d cmd-timeout=%s max-output=%d max-walk-entries=%d max-walk-bytes=%d version=%s",
		p.rootAbs, strings.Join(allow, ","), p.cfg.Prefix, p.cfg.MaxReadBytes, p.cfg.MaxResults, p.cfg.CommandTimeout, p.cfg.MaxOutputBytes, p.cfg.MaxWalkEntries, p.cfg.MaxWalkBytes, version.String())
}

// Metadata returns the micro service metadata to serve the tools with
// (tool.ServerConfig.Metadata): the configuration (Config) and its
// fingerprint, so that `skillbus tools` and other providers can tell when
// instances of one tool disagree.
func (p *Provider) Metadata() map[string]string {
	cfg := p.Config()
	return map[string]string{tool.MetadataConfig: cfg, tool.MetadataFingerprint: tool.Fingerprint(cfg)}
}

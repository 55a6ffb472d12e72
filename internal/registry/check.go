package registry

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// FileReport is the verdict of Check on one file (or one refused
// directory).
type FileReport struct {
	// Path is the file as Check names it: a path given to Check, or a
	// directory given to Check joined with the file's path under it.
	Path string `json:"file"`
	// Kind is "skill", "sequence", "tree" (a refused directory) or ""
	// (a file the registry ignores because of its name).
	Kind string `json:"kind"`
	// Name is the skill or sequence name of a valid definition.
	Name string `json:"name,omitempty"`
	// Summary is a valid definition's one-line description: a sequence's
	// signature, a skill's format and size.
	Summary string `json:"summary,omitempty"`
	// Valid is true when no problem is an error (warnings allowed): the
	// registry would load the file. A file it ignores (Kind "") is valid:
	// it has warnings only.
	Valid bool `json:"valid"`
	// Problems are the file's problems, errors and warnings, in file
	// order, with File set to Path; never nil.
	Problems []Problem `json:"problems"`
}

// CheckOptions tunes Check. The zero value judges by a default NATS
// server.
type CheckOptions struct {
	// MaxPayload is the max_payload of the server the definitions are
	// meant for, in bytes; 0 means DefaultMaxPayload (1 MiB). Files and
	// stored definitions larger than MaxDefinitionBytes(MaxPayload) are
	// errors, as in the registry.
	MaxPayload int64
}

// Check judges paths (files and directories) by the registry's rules,
// without NATS — the rules of `skillbus validate`, which are the
// registry's own:
//
//   - a directory is walked as the registry walks its tree (scan): the
//     same file names, skipped directories, symlink and file-type rules;
//     each refusal is an error of its path;
//   - each definition file is loaded as the registry loads it (loadFile):
//     regular files within the size limit, parsed and validated, stored
//     form within the limit;
//   - across all files given: skill names, sequence names and group names
//     are resolved as the registry resolves them (resolve): a definition
//     the registry would ignore because its name is taken gets an error
//     naming the kept file;
//   - a file the registry ignores because of its name but that looks like
//     a definition (a sequence in a *.yaml file without .seq., a skill.md)
//     gets a warning saying how to rename it.
//
// A path given explicitly is checked even when its name is not a
// definition name (as a sequence, with that warning); a file through a
// symlink only when the link leads inside the file's own directory (as
// named) or the current directory (ReadArg), as the registry follows links
// only inside its tree. Reports are sorted by path. Errors: a path that does not exist
// or cannot be read (fs errors, wrapped).
func Check(paths []string, opt CheckOptions) ([]FileReport, error) {
	if opt.MaxPayload <= 0 {
		opt.MaxPayload = DefaultMaxPayload
	}
	limit := MaxDefinitionBytes(opt.MaxPayload)
	type entry struct {
		f       *scanned
		display string
		def     *definition
		probs   []Problem
		other   bool // a misnamed candidate, not a definition
	}
	var entries []*entry
	seen := map[string]bool{}
	add := func(e *entry) {
		// One path given twice (a file and its directory, ./x and x) is
		// checked once; a symlink is a path of its own, as in the registry.
		id, err := filepath.Abs(e.display)
		if err != nil {
			id = e.display
		}
		if seen[id] {
			return
		}
		seen[id] = true
		entries = append(entries, e)
	}
	for _, root := range paths {
		st, err := os.Stat(root)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			kind := FileKind(root)
			if kind == kindNone {
				kind = kindSequence // an explicit file is checked as a sequence
			}
			f := &scanned{rel: filepath.ToSlash(root), dir: filepath.Dir(root), kind: kind}
			f.data, f.abs, f.mtime, f.err = ReadArg(root, limit)
			add(&entry{f: f, display: root})
			continue
		}
		res := scan(root, limit, true)
		if len(res.dirs) == 0 {
			if _, err := os.ReadDir(root); err != nil {
				return nil, err
			}
		}
		for _, rel := range sortedKeys(res.files) {
			add(&entry{f: res.files[rel], display: filepath.Join(root, filepath.FromSlash(rel))})
		}
		for _, o := range res.others {
			add(&entry{f: o, display: filepath.Join(root, filepath.FromSlash(o.rel)), other: true})
		}
	}

	// Per file, in parallel as the registry does.
	next := make(chan *entry)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(entries), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range next {
				if e.other {
					e.probs = otherProblems(e.f, limit)
					continue
				}
				f := *e.f
				f.rel = filepath.ToSlash(e.display) // problems and sources name the display path
				e.def, e.probs = loadFile(&f, limit)
				if FileKind(e.display) == kindNone && e.f.kind != kindTree {
					msg := misnameProblem(filepath.Base(e.display), e.f.data)
					if msg == "" {
						msg = "the registry loads sequences only from files named *.seq.json, *.seq.yaml or *.seq.yml (and skills only from SKILL.md and skill.yaml), so it would ignore this file"
					}
					e.probs = append(e.probs, Problem{Message: msg, Warning: true})
				}
			}
		}()
	}
	for _, e := range entries {
		next <- e
	}
	close(next)
	wg.Wait()

	// Across files, as the registry resolves them.
	defs := map[string]*definition{}
	for _, e := range entries {
		if e.def != nil {
			defs[e.def.source] = e.def
		}
	}
	_, _, clashes := resolve(defs, nil, storedSeqs{})
	byDisplay := map[string]*entry{}
	for _, e := range entries {
		byDisplay[filepath.ToSlash(e.display)] = e
	}
	for _, c := range clashes {
		if e := byDisplay[c.otherSrc]; e != nil {
			e.probs = append(e.probs, Problem{Message: c.problem()})
		}
	}

	reports := make([]FileReport, 0, len(entries))
	for _, e := range entries {
		if e.other && len(e.probs) == 0 {
			continue
		}
		r := FileReport{Path: e.display, Kind: e.f.kind, Problems: []Problem{}}
		if e.other {
			r.Kind = kindNone
		}
		for _, p := range e.probs {
			p.File = e.display
			r.Problems = append(r.Problems, p)
		}
		r.Valid = !hasError(r.Problems)
		if e.def != nil && r.Valid {
			r.Name, r.Summary = e.def.name, e.def.summary
		}
		reports = append(reports, r)
	}
	sort.SliceStable(reports, func(i, j int) bool { return reports[i].Path < reports[j].Path })
	return reports, nil
}

// otherProblems reads a misnamed candidate (when its name alone does not
// decide) and returns its warning, if any.
func otherProblems(f *scanned, limit int64) []Problem {
	name := filepath.Base(f.rel)
	var data []byte
	if lower := strings.ToLower(name); lower != "skill.md" && lower != "skill.yaml" && lower != "skill.yml" {
		var err error
		if data, _, err = readRegular(f.abs, limit); err != nil {
			return nil // gone, too large to be a definition, or unreadable: nothing to suggest
		}
	}
	if msg := misnameProblem(name, data); msg != "" {
		return []Problem{{Message: msg, Warning: true}}
	}
	return nil
}

package registry

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File kinds of the tree (the same rule as `skillbus validate`,
// internal/cli/validate.go fileKind).
const (
	kindNone     = ""
	kindSkill    = "skill"
	kindSequence = "sequence"
)

// FileKind classifies a path: "sequence" for *.seq.json, *.seq.yaml and
// *.seq.yml; "skill" for files named SKILL.md or skill.yaml; "" otherwise.
func FileKind(path string) string {
	base := filepath.Base(path)
	switch {
	case strings.HasSuffix(base, ".seq.json"), strings.HasSuffix(base, ".seq.yaml"), strings.HasSuffix(base, ".seq.yml"):
		return kindSequence
	case base == "SKILL.md", base == "skill.yaml":
		return kindSkill
	}
	return kindNone
}

// scanned is one definition file found in the tree.
type scanned struct {
	abs  string // path to open (through symlinks as found)
	rel  string // slash path relative to the root: the file's identity
	kind string
	data []byte
	err  error // reading failed
}

// scanResult is a walk of the tree: the definition files by rel path and
// the directories to watch (as paths under the root, symlinks unresolved).
type scanResult struct {
	files map[string]*scanned
	dirs  []string
}

// skippedDirs are never walked: version-control metadata and dependency
// caches, which hold no definitions of this tree. Other hidden directories
// (.claude/skills, .agents) are walked.
var skippedDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true, "node_modules": true}

// scan walks root, following symlinked directories. Each real directory is
// visited once, in sorted order, so a symlink loop ends and a folder
// reachable twice is loaded from its first path only (deterministic).
// skippedDirs are skipped. Unreadable entries are skipped (a file that
// vanished mid-walk is simply not there).
func scan(root string) scanResult {
	res := scanResult{files: map[string]*scanned{}}
	seen := map[string]bool{}
	var walk func(dir, rel string)
	walk = func(dir, rel string) {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || seen[real] {
			return
		}
		seen[real] = true
		res.dirs = append(res.dirs, dir)
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, e := range ents {
			name := e.Name()
			p := filepath.Join(dir, name)
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			isDir := e.IsDir()
			if e.Type()&os.ModeSymlink != 0 {
				st, err := os.Stat(p)
				if err != nil {
					continue // dangling link
				}
				isDir = st.IsDir()
			}
			if isDir {
				if skippedDirs[name] {
					continue
				}
				walk(p, r)
				continue
			}
			k := FileKind(name)
			if k == kindNone {
				continue
			}
			data, err := os.ReadFile(p)
			if err != nil && os.IsNotExist(err) {
				continue
			}
			res.files[r] = &scanned{abs: p, rel: r, kind: k, data: data, err: err}
		}
	}
	walk(root, "")
	return res
}

package skill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// fileRefProblem words what is wrong with the value of a `type: file` ref
// by its text alone: an absolute path, or one that climbs out of the
// skill's directory with "..". "" when the text is a path inside it
// (whether it exists is CheckRefs's question). docs/skills.md, "Fields".
func fileRefProblem(v string) string {
	slash := strings.ReplaceAll(v, `\`, "/")
	if path.IsAbs(slash) || filepath.IsAbs(v) || (len(v) > 1 && v[1] == ':') {
		return fmt.Sprintf("file reference %q is an absolute path; a file ref is a path relative to the skill's directory and inside it — copy the file into the skill's directory, or refer to it by url", v)
	}
	if c := path.Clean(slash); c == ".." || strings.HasPrefix(c, "../") {
		return fmt.Sprintf("file reference %q leads outside the skill's directory; a file ref names a file inside it — copy the file into the skill's directory, or refer to it by url", v)
	}
	return ""
}

// CheckRefs checks the `type: file` refs of s (a skill.yaml's; a SKILL.md
// has none) against dir, the directory that holds its file, as the registry
// and `skillbus validate` read it (docs/skills.md, "Fields"): a ref that
// leads outside dir through a symlink is an error (a *FieldError wrapping
// ErrBadValue, in the returned joined error; the skill must not be
// loaded), and a ref to a file that does not exist (or cannot be resolved:
// a symlink loop) is a warning, returned and appended to s.Warnings. The
// text of each ref (absolute, "..") was checked by Parse. Problems name
// s.Source, or the file's format when Source is empty, at the ref's line
// when s came from Parse.
func CheckRefs(s *Skill, dir string) ([]Warning, error) {
	file := s.Source
	if file == "" {
		file = string(s.Format)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err == nil {
		realDir, err = filepath.Abs(realDir)
	}
	if err != nil {
		return nil, err
	}
	var warns []Warning
	var errs []error
	for i, r := range s.Refs {
		if r.Type != RefFile || r.Value == "" || fileRefProblem(r.Value) != "" {
			continue
		}
		field := fmt.Sprintf("refs[%d].value", i+1)
		full := filepath.Join(realDir, filepath.FromSlash(strings.ReplaceAll(r.Value, `\`, "/")))
		target, err := filepath.EvalSymlinks(full)
		if err != nil {
			what := "does not exist in the skill's directory"
			// EvalSymlinks words a loop "too many links" with no errno;
			// the link itself is there, or the kernel says ELOOP.
			fi, lerr := os.Lstat(full)
			switch {
			case errors.Is(err, fs.ErrNotExist): // a dangling link too
			case errors.Is(err, syscall.ELOOP) || errors.Is(lerr, syscall.ELOOP) || (lerr == nil && fi.Mode()&fs.ModeSymlink != 0):
				what = "is a symlink loop (or goes through too many symlinks)"
			default:
				what = "cannot be resolved (" + err.Error() + ")"
			}
			warns = append(warns, Warning{File: file, Line: r.line, Field: field,
				Message: fmt.Sprintf("refs[%d]: file reference %q %s; the model is told of a file it cannot read (create it, or fix the path)", i+1, r.Value, what)})
			continue
		}
		if rel, err := filepath.Rel(realDir, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			errs = append(errs, &FieldError{File: file, Line: r.line, Field: field, Err: ErrBadValue,
				Message: fmt.Sprintf("refs[%d]: file reference %q leads outside the skill's directory through a symlink (to %s); a file ref names a file inside it — copy the file in", i+1, r.Value, target)})
		}
	}
	s.Warnings = append(s.Warnings, warns...)
	return warns, errors.Join(errs...)
}

package registry

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File kinds of the tree: the one naming rule of the registry and of
// `skillbus validate` (docs/skills.md, docs/sequences.md).
const (
	kindNone     = ""
	kindSkill    = "skill"
	kindSequence = "sequence"
	// kindTree marks a problem of the tree itself (a directory refused),
	// not of one definition.
	kindTree = "tree"
)

// FileKind classifies a path: "sequence" for *.seq.json, *.seq.yaml and
// *.seq.yml; "skill" for files named SKILL.md or skill.yaml; "" otherwise.
// Names are compared exactly (case-sensitive).
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

// DefaultMaxPayload is nats-server's default max_payload (1 MiB): the
// largest message, and so the largest stored definition, a server accepts
// unless configured otherwise. `skillbus validate` judges by it.
const DefaultMaxPayload = 1 << 20

// headerRoom is the part of max_payload kept for a stored entry's headers
// (the source header, trace context, KV headers).
const headerRoom = 4096

// MaxDefinitionBytes returns the largest definition file, and the largest
// stored definition, for a server whose max_payload is maxPayload: one KV
// entry is one NATS message, less room for its headers. A file larger than
// that cannot be stored, so it is refused before it is read.
func MaxDefinitionBytes(maxPayload int64) int64 {
	return max(maxPayload-headerRoom, 0)
}

// Errors of reading definition files; each refusal is reported as a
// problem of the file (validate's problem lines, the registry's invalid
// events), never followed or read.
var (
	// ErrNotRegular: the path is a named pipe, a device, a socket or
	// another non-regular file; it is not opened for reading.
	ErrNotRegular = errors.New("registry: not a regular file")
	// ErrTooLarge: the file is larger than MaxDefinitionBytes.
	ErrTooLarge = errors.New("registry: file too large")
	// ErrOutsideTree: a symlink leads outside the tree being loaded.
	ErrOutsideTree = errors.New("registry: symlink leads outside the tree")
	// ErrUnreadableDir: a directory of the tree cannot be listed.
	ErrUnreadableDir = errors.New("registry: directory cannot be read")
	// ErrDanglingLink: a symlink named like a definition leads to nothing;
	// a warning (it loads nothing), so that a definition that went missing
	// behind a link is not silent.
	ErrDanglingLink = errors.New("registry: symlink leads to nothing")
)

// readRegular reads the regular file at path, at most limit bytes. It
// never blocks on a named pipe or a device: path is opened without
// following a final symlink and without blocking (openNoBlock), and the
// opened file's own mode must be regular before one byte is read. Errors:
// ErrNotRegular, ErrTooLarge (wrapped with the sizes), or the open error.
func readRegular(path string, limit int64) ([]byte, time.Time, error) {
	f, err := openNoBlock(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	if !st.Mode().IsRegular() {
		return nil, time.Time{}, fmt.Errorf("%w: %s", ErrNotRegular, describeMode(st.Mode()))
	}
	if st.Size() > limit {
		return nil, st.ModTime(), tooLarge(st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, st.ModTime(), err
	}
	if int64(len(data)) > limit { // it grew while we read it
		return nil, st.ModTime(), tooLarge(int64(len(data)), limit)
	}
	return data, st.ModTime(), nil
}

func tooLarge(size, limit int64) error {
	return fmt.Errorf("%w: the file has %d bytes or more; a definition is stored as one NATS message, so a file may have at most %d bytes here (max_payload %d less %d bytes for headers): split it, or raise the server's max_payload",
		ErrTooLarge, size, limit, limit+headerRoom, headerRoom)
}

// describeMode names a non-regular file type in words.
func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "not a regular file (mode " + m.String() + ")"
}

// refusalMessage turns a read or walk error into the problem text.
func refusalMessage(err error) string {
	switch {
	case errors.Is(err, ErrNotRegular):
		return "not read: " + strings.TrimPrefix(err.Error(), ErrNotRegular.Error()+": ") + ", not a regular file; definitions are read only from regular files"
	case errors.Is(err, ErrTooLarge):
		return "not read: " + strings.TrimPrefix(err.Error(), ErrTooLarge.Error()+": ")
	case errors.Is(err, ErrOutsideTree):
		return "not followed: " + strings.TrimPrefix(err.Error(), ErrOutsideTree.Error()+": ")
	case errors.Is(err, ErrUnreadableDir):
		return "not read: " + strings.TrimPrefix(err.Error(), ErrUnreadableDir.Error()+": ")
	case errors.Is(err, ErrDanglingLink):
		return "not loaded: " + strings.TrimPrefix(err.Error(), ErrDanglingLink.Error()+": ")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return "cannot read the file: " + pe.Err.Error()
	}
	return "cannot read the file: " + err.Error()
}

// scanned is one entry of the tree: a definition file (read, or refused),
// or a refused directory (kind kindTree).
type scanned struct {
	abs   string // path opened (the resolved path; through symlinks)
	dir   string // the directory the entry is in (symlinks resolved): a skill's file refs are read from it
	rel   string // slash path relative to the root: the entry's identity
	kind  string
	data  []byte
	mtime time.Time // modification time of the file read
	err   error     // reading failed, or the entry was refused
	// refs is set by loadFile for a skill.yaml that parses: the paths of
	// its file refs, whose state (refsState) the registry adds to the
	// file's hash, so a ref file created, removed or relinked reloads it.
	refs []string
}

// refsState describes what each of paths is on disk (where it leads, or
// why it leads nowhere): a change of any is a change of the skill that
// names them (docs/skills.md, "File refs").
func refsState(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range paths {
		target, err := filepath.EvalSymlinks(p)
		fmt.Fprintf(&b, "\x00%s=%s|%v", p, target, err != nil)
	}
	return b.String()
}

// scanResult is a walk of the tree: the definition files by rel path, the
// directories to watch (as paths under the root, symlinks unresolved) and,
// when asked for, the other files whose names suggest a definition the
// registry would ignore (validate's naming rule).
type scanResult struct {
	files  map[string]*scanned
	dirs   []string
	others []*scanned
	// rootErr is why the root itself could not be read (it is gone, not
	// a directory, or cannot be listed); files is then empty and says
	// nothing about what the tree holds.
	rootErr error
}

// skippedDirs are never walked: version-control metadata and dependency
// caches, which hold no definitions of this tree. Other hidden directories
// (.claude/skills, .agents) are walked.
var skippedDirs = map[string]bool{".git": true, ".hg": true, ".svn": true, ".jj": true, "node_modules": true}

// skipped reports whether the walk leaves the entry named name alone:
// skippedDirs, and every name starting with "..". Those are the kubelet's
// own entries in a mounted ConfigMap or Secret volume — "..data", a link
// to the current "..2026_01_02_15_04_05.123456789" directory — through
// which every file of the volume is reachable a second time beside the
// volume's top-level links (docs/skills.md, "Loading").
func skipped(name string) bool { return skippedDirs[name] || strings.HasPrefix(name, "..") }

// within reports whether path (absolute, symlinks resolved) is root or
// lies under it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// scan walks root. Definition files (FileKind) are read with readRegular,
// at most limit bytes each. Its rules, shared by the registry and
// `skillbus validate`:
//
//   - skippedDirs and names starting with ".." (a Kubernetes volume's
//     "..data" and timestamped directory) are skipped, by name, whatever
//     they are (skipped);
//   - a symlink is followed only when it resolves inside the root (the
//     root's own symlinks resolved first); a symlinked directory or
//     definition file leading outside is refused (ErrOutsideTree), so a
//     link to / or .. never makes the walk leave the tree, and a link to
//     /dev/zero is never opened; a dangling link is not there;
//   - a definition file that is not regular (a FIFO, a device, a socket)
//     is refused (ErrNotRegular) without being opened;
//   - each real directory is visited once, in sorted order, so a symlink
//     loop ends and a folder reachable twice is loaded from its first path
//     only (deterministic);
//   - a directory that cannot be listed is refused (ErrUnreadableDir),
//     except the root itself, which the caller checked.
//
// Refused entries are in files with err set; refused directories have
// kind kindTree. When others is true, regular files that a person may take
// for definitions but the registry ignores (misnamed) are returned too.
func scan(root string, limit int64, others bool) scanResult {
	res := scanResult{files: map[string]*scanned{}}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		res.rootErr = err
		return res
	}
	if realRoot, err = filepath.Abs(realRoot); err != nil {
		res.rootErr = err
		return res
	}
	seen := map[string]bool{}
	refuse := func(rel, abs, kind string, err error) {
		res.files[rel] = &scanned{abs: abs, rel: rel, kind: kind, err: err}
	}
	var walk func(real, dir, rel string)
	walk = func(real, dir, rel string) {
		if seen[real] {
			return
		}
		seen[real] = true
		res.dirs = append(res.dirs, dir)
		ents, err := os.ReadDir(real)
		if err != nil {
			if rel == "" {
				res.rootErr = err
			} else {
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				refuse(rel, real, kindTree, fmt.Errorf("%w: the directory cannot be listed (%v); its definitions are not loaded", ErrUnreadableDir, err))
			}
			return
		}
		for _, e := range ents { // sorted by name
			name := e.Name()
			if skipped(name) {
				continue
			}
			p := filepath.Join(dir, name)
			abs := filepath.Join(real, name)
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			kind := FileKind(name)
			typ := e.Type()
			if typ&fs.ModeSymlink != 0 {
				target, err := filepath.EvalSymlinks(abs)
				if err != nil {
					if kind != kindNone {
						// Named like a definition, leading to nothing: said
						// (a warning) rather than silently not there.
						dest, _ := os.Readlink(abs)
						refuse(r, abs, kindTree, fmt.Errorf("%w: a symlink to %s, which does not exist", ErrDanglingLink, dest))
					}
					continue
				}
				st, err := os.Stat(target)
				if err != nil {
					continue
				}
				if !within(realRoot, target) {
					if st.IsDir() {
						refuse(r, abs, kindTree, fmt.Errorf("%w: a symlink to the directory %s, outside the tree %s; the registry reads only what is inside its directory (move or copy the folder in, or load a directory that holds both)", ErrOutsideTree, target, realRoot))
					} else if kind != kindNone {
						refuse(r, abs, kind, fmt.Errorf("%w: a symlink to %s, outside the tree %s; the registry reads only what is inside its directory (copy the file in)", ErrOutsideTree, target, realRoot))
					}
					continue
				}
				abs, typ = target, st.Mode().Type()
			}
			switch {
			case typ.IsDir():
				walk(abs, p, r)
			case kind != kindNone:
				if !typ.IsRegular() {
					refuse(r, abs, kind, fmt.Errorf("%w: %s", ErrNotRegular, describeMode(typ)))
					continue
				}
				data, mtime, err := readRegular(abs, limit)
				if err != nil && errors.Is(err, fs.ErrNotExist) {
					continue // vanished mid-walk: not there
				}
				res.files[r] = &scanned{abs: abs, dir: real, rel: r, kind: kind, data: data, mtime: mtime, err: err}
			case others && typ.IsRegular() && misnameCandidate(name):
				res.others = append(res.others, &scanned{abs: abs, rel: r})
			}
		}
	}
	walk(realRoot, root, "")
	return res
}

// ReadArg reads a definition file named on the command line (`skillbus
// validate FILE`, `skillbus run FILE`, `skillbus seqs show FILE`) by the
// rules the registry applies to the files of its tree (docs/skills.md,
// "Loading"): only a regular file is read, it is opened without blocking,
// at most limit bytes are read, and a symlink is followed only when it
// resolves inside the directory the path names (its parent as given:
// "skills" for skills/x.seq.yaml, the current directory for x.seq.yaml)
// or inside the current directory. A link that leads elsewhere — to
// /etc/passwd, to a device — is refused without being opened. It returns
// the bytes, the resolved path and the modification time. Errors:
// ErrOutsideTree, ErrNotRegular, ErrTooLarge (wrapped with the details;
// refusalMessage words them), or the fs error of a path that does not
// exist or cannot be read.
func ReadArg(path string, limit int64) (data []byte, abs string, mtime time.Time, err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, "", time.Time{}, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, "", time.Time{}, err
	}
	dir := filepath.Dir(path)
	realDir, err := filepath.EvalSymlinks(dir)
	if err == nil {
		realDir, err = filepath.Abs(realDir)
	}
	if err != nil {
		return nil, "", time.Time{}, err
	}
	inside := within(realDir, real)
	wd, werr := os.Getwd()
	if !inside && werr == nil {
		if realWD, err := filepath.EvalSymlinks(wd); err == nil {
			inside = within(realWD, real)
			wd = realWD
		}
	}
	if !inside {
		where := fmt.Sprintf("the directory %s", realDir)
		if werr == nil && wd != realDir {
			where += fmt.Sprintf(" and the current directory %s", wd)
		}
		return nil, real, time.Time{}, fmt.Errorf("%w: a symlink to %s, outside %s; a file named on the command line is read through a symlink only when it leads inside its own directory or the current directory, as the registry reads only what is inside its tree (name the target itself, or copy the file in)", ErrOutsideTree, real, where)
	}
	st, err := os.Stat(real)
	if err != nil {
		return nil, real, time.Time{}, err
	}
	if !st.Mode().IsRegular() {
		return nil, real, time.Time{}, fmt.Errorf("%w: %s", ErrNotRegular, describeMode(st.Mode()))
	}
	data, mtime, err = readRegular(real, limit)
	return data, real, mtime, err
}

// RefusalMessage words an error of ReadArg (or of reading a tree's file)
// as validate prints it: "not followed: a symlink to …", "not read: a named
// pipe (FIFO), not a regular file; …", "not read: the file has N bytes or
// more; …", "cannot read the file: …".
func RefusalMessage(err error) string { return refusalMessage(err) }

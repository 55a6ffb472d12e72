package k8s

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the main module, two levels up.
const repoRoot = "../.."

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Cmd  string // upper case: FROM, RUN, COPY, ...
	Args string
	Line int
}

// parseDockerfile splits a Dockerfile into instructions: comments and
// blank lines dropped, backslash continuations joined (the default escape
// character; parser directives other than syntax are not used here).
func parseDockerfile(t *testing.T, p string) []instruction {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	start, n := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		out = append(out, instruction{Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args), Line: start})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stage is one FROM ... section.
type stage struct {
	Image, Name string
	Insts       []instruction
}

var argRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}?`)

// dockerfileGoBuild returns the shell command of the Dockerfile's RUN that
// runs go build (its options such as --mount removed).
func dockerfileGoBuild(t *testing.T) string {
	t.Helper()
	for _, in := range parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile")) {
		if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
			run := in.Args
			for strings.HasPrefix(run, "--") {
				_, run, _ = strings.Cut(run, " ")
				run = strings.TrimSpace(run)
			}
			return run
		}
	}
	t.Fatal("the Dockerfile has no RUN go build")
	return ""
}

// TestDockerfile checks the invariants of the image (docs/deploy.md, "The
// image"): pinned base images (no latest), static binaries (CGO_ENABLED=0,
// -trimpath), the version stamped into the variable internal/version
// reads, a non-root final stage (USER 65532) on distroless static or
// scratch, the OCI labels, and every binary a manifest's container runs
// built from ./cmd/<name> and copied to the path the manifest names.
func TestDockerfile(t *testing.T) {
	insts := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	globalArgs := map[string]string{}
	var stages []*stage
	for _, in := range insts {
		switch {
		case in.Cmd == "ARG" && len(stages) == 0:
			k, v, _ := strings.Cut(in.Args, "=")
			globalArgs[k] = v
		case in.Cmd == "FROM":
			f := strings.Fields(in.Args)
			var s stage
			for i := 0; i < len(f); i++ {
				switch {
				case strings.HasPrefix(f[i], "--"):
				case strings.EqualFold(f[i], "AS") && i+1 < len(f):
					s.Name = f[i+1]
					i++
				default:
					s.Image = argRef.ReplaceAllStringFunc(f[i], func(ref string) string {
						m := argRef.FindStringSubmatch(ref)
						if v, ok := globalArgs[m[1]]; ok && v != "" {
							return v
						}
						t.Errorf("Dockerfile:%d: FROM uses $%s, which has no default: a plain `docker build .` cannot resolve it", in.Line, m[1])
						return ref
					})
				}
			}
			stages = append(stages, &s)
		case len(stages) > 0:
			stages[len(stages)-1].Insts = append(stages[len(stages)-1].Insts, in)
		}
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages; want a build stage and a final stage", len(stages))
	}
	names := map[string]bool{}
	for _, s := range stages {
		if names[s.Image] { // FROM an earlier stage
			continue
		}
		checkImage(t, "Dockerfile FROM", s.Image)
		names[s.Name] = true
	}

	final := stages[len(stages)-1]
	if !strings.HasPrefix(final.Image, "gcr.io/distroless/static-debian12:nonroot") && final.Image != "scratch" {
		t.Errorf("final stage FROM %s: want gcr.io/distroless/static-debian12:nonroot or scratch", final.Image)
	}
	var user string
	labels := map[string]bool{}
	copied := map[string]bool{} // absolute paths in the image
	for _, in := range final.Insts {
		switch in.Cmd {
		case "USER":
			user = in.Args
		case "LABEL":
			for _, m := range regexp.MustCompile(`([a-z.]+)=`).FindAllStringSubmatch(in.Args, -1) {
				labels[m[1]] = true
			}
		case "COPY":
			f := strings.Fields(in.Args)
			var srcs []string
			for _, a := range f {
				if !strings.HasPrefix(a, "--") {
					srcs = append(srcs, a)
				}
			}
			dst := srcs[len(srcs)-1]
			for _, s := range srcs[:len(srcs)-1] {
				p := dst
				if strings.HasSuffix(dst, "/") {
					p = path.Join(dst, path.Base(s))
				}
				copied[p] = true
			}
		case "ENTRYPOINT":
			t.Errorf("Dockerfile:%d: ENTRYPOINT: the container's command must pick the service", in.Line)
		}
	}
	if user != "65532" && user != "65532:65532" {
		t.Errorf("final stage USER %q: want 65532 (distroless nonroot), numeric so runAsNonRoot can verify it", user)
	}
	for _, l := range []string{"title", "description", "source", "version", "revision"} {
		if !labels["org.opencontainers.image."+l] {
			t.Errorf("final stage: no LABEL org.opencontainers.image.%s", l)
		}
	}

	// The go build: static, trimmed, stamped, and building each binary.
	var build string
	for _, s := range stages[:len(stages)-1] {
		for _, in := range s.Insts {
			if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
				build = in.Args
			}
		}
	}
	if build == "" {
		t.Fatal("no RUN go build in the build stages")
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath"} {
		if !strings.Contains(build, want) {
			t.Errorf("the go build lacks %s: %s", want, build)
		}
	}
	x := regexp.MustCompile(`-X\s+([\w./-]+)\.(\w+)=`).FindStringSubmatch(build)
	if x == nil {
		t.Errorf("the go build stamps no version (-ldflags -X): %s", build)
	} else {
		t.Run("version-variable", func(t *testing.T) { checkVersionVar(t, x[1], x[2]) })
	}

	// Every binary a manifest runs.
	for _, name := range []string{"overlays/dev", "overlays/prod"} {
		b := buildByName(t, name)
		for _, w := range b.workloads() {
			if !isSkillbus(w) {
				continue
			}
			for _, c := range w.tmpl.Spec.Containers {
				if len(c.Command) == 0 {
					t.Errorf("%s %s: no command: the image has no ENTRYPOINT, the command picks the service", name, w.obj)
					continue
				}
				bin := c.Command[0]
				if !copied[bin] {
					t.Errorf("%s %s: runs %s, which the Dockerfile does not copy into the image (copied: %v)", name, w.obj, bin, sortedKeys(copied))
				}
				pkg := "./cmd/" + path.Base(bin)
				if !slices.Contains(strings.Fields(build), pkg) {
					t.Errorf("%s %s: runs %s, but the go build does not build %s", name, w.obj, bin, pkg)
				}
				if _, err := os.Stat(filepath.Join(repoRoot, pkg, "main.go")); err != nil {
					t.Errorf("%s %s: %s is not a command of the main module: %v", name, w.obj, pkg, err)
				}
			}
		}
	}

	checkDockerignore(t)
}

// checkVersionVar: the -X target is a package-level string variable of
// the main module, or -X silently does nothing.
func checkVersionVar(t *testing.T, pkg, name string) {
	t.Helper()
	rel, ok := strings.CutPrefix(pkg, "github.com/skillbus/skillbus/")
	if !ok {
		t.Errorf("-X %s.%s: not a package of the main module", pkg, name)
		return
	}
	dir := filepath.Join(repoRoot, rel)
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		// The one version source (issue: every binary's --version) may not
		// have landed yet: say so, and check it as soon as it exists.
		t.Skipf("-X %s.%s: %s does not exist in the main module (yet): the image's binaries report no release version until it does", pkg, name, dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for _, n := range vs.Names {
					if n.Name == name {
						return
					}
				}
			}
		}
	}
	t.Errorf("-X %s.%s: %s declares no package-level variable %s, so the image's binaries would not report the release", pkg, name, dir, name)
}

// checkDockerignore: the build context keeps what the go build needs.
func checkDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatalf(".dockerignore: %v (without it the context carries .git and the data directories)", err)
	}
	var pats []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			pats = append(pats, strings.TrimPrefix(l, "/"))
		}
	}
	if !slices.Contains(pats, ".git") {
		t.Errorf(".dockerignore does not exclude .git")
	}
	for _, need := range []string{"go.mod", "go.sum", "cmd/registry/main.go", "internal/registry/registry.go", "pkg/seq/seq.go"} {
		for _, p := range pats {
			for _, pre := range prefixes(need) {
				if ok, _ := path.Match(p, pre); ok && !strings.HasPrefix(p, "!") {
					t.Errorf(".dockerignore pattern %q excludes %s, which the build needs", p, need)
				}
			}
		}
	}
}

// prefixes returns a path and each of its parent directories.
func prefixes(p string) []string {
	out := []string{p}
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}

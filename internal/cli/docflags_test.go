package cli

import (
	"bufio"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestDocumentedFlagsExist keeps README.md and docs/*.md in step with the
// binaries: every --flag the docs mention must exist in the flag set of the
// binary it is written for. A flag is written for a binary when it appears
// in a command line of it — a line of a code block or an inline code span
// that starts with `skillbus ...` (resolved to the subcommand, whose own
// flag set is checked), `registry`, `seqworker` or `skillface` — or right
// after "the seqworker's" and the like in the prose; any other mention must
// be a flag of some skillbus binary, or of a program the docs quote
// (foreignFlags). A renamed or removed flag (the seqworker's
// --shutdown-timeout, now --shutdown-budget) fails here, naming the file
// and line.
func TestDocumentedFlagsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the service binaries to read their flags")
	}
	services := serviceFlags(t)
	skillbusFlags := map[string]bool{}
	for _, p := range allCommands() {
		if in, ok := inspect(p.c, nil, nil); ok {
			in.fs.VisitAll(func(f *flag.Flag) { skillbusFlags[f.Name] = true })
		}
	}
	union := map[string]bool{}
	for _, set := range append([]map[string]bool{skillbusFlags}, services["registry"], services["seqworker"], services["skillface"]) {
		for k := range set {
			union[k] = true
		}
	}
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	checked := 0
	for _, file := range files {
		for _, m := range docMentions(t, file) {
			checked++
			where := filepath.Base(file) + ":" + strconv.Itoa(m.line)
			switch {
			case m.program == "skillbus":
				if msg := checkSkillbusLine(m.words); msg != "" {
					t.Errorf("%s: `%s`: %s", where, m.text, msg)
				}
			case services[m.program] != nil:
				for _, f := range m.flags {
					if formerFlags[f] && strings.Contains(m.context, "former") {
						continue
					}
					if !services[m.program][f] && f != "help" && f != "h" {
						t.Errorf("%s: `%s`: %s has no flag %s (its flags: `%s --help`)", where, m.text, m.program, dashFlag(f), m.program)
					}
				}
			default:
				for _, f := range m.flags {
					if f == "help" || f == "h" || formerFlags[f] && strings.Contains(m.context, "former") {
						continue
					}
					if !union[f] && !foreignFlags[f] {
						t.Errorf("%s: `%s`: no skillbus binary has a flag %s (nor is it one of the other programs' flags the docs quote, foreignFlags)", where, m.text, dashFlag(f))
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d flag mentions found in the docs: the extraction is broken", checked)
	}
}

// TestDocumentedFlagsCatchDrift: the check itself finds a flag that does
// not exist, for each way a flag is attributed.
func TestDocumentedFlagsCatchDrift(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "x.md")
	text := "Run `skillbus run f.seq.yaml --nope` or\n\n```sh\nskillbus runs --status failed ls --sinse 1h\n```\n\nthe seqworker's `--shutdown-timeout` (30 s).\n"
	if err := os.WriteFile(doc, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ms := docMentions(t, doc)
	var got []string
	for _, m := range ms {
		switch m.program {
		case "skillbus":
			got = append(got, checkSkillbusLine(m.words))
		default:
			got = append(got, m.program+":"+strings.Join(m.flags, ","))
		}
	}
	want := []string{"`skillbus run` has no flag --nope", "`skillbus runs ls` has no flag --sinse", "seqworker:shutdown-timeout"}
	if len(got) != len(want) {
		t.Fatalf("mentions %q; want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("mention %d: %q; want %q", i, got[i], want[i])
		}
	}
}

// foreignFlags are flags of other programs the docs show (go, the nats
// CLI, nats-server, kubectl, docker, npm, systemd, curl, the MCP
// clients); they are not checked.
var foreignFlags = map[string]bool{
	// go test / go build / go install
	"trimpath": true, "ldflags": true, "X": true, "buildvcs": true,
	"race": true, "run": true, "count": true, "bench": true, "benchtime": true, "short": true, "v": true, "timeout": true, "tags": true,
	// the nats CLI and nats-server
	"server": true, "inbox-prefix": true, "js": true, "sd": true, "config": true, "signal": true, "user": true, "password": true, "account": true,
	// kubectl, kustomize, docker, helm
	"namespace": true, "create-namespace": true, "from-file": true, "dry-run": true, "rm": true, "platform": true, "build-arg": true,
	"push": true, "image": true, "target": true, "for": true, "all": true, "cni": true, "set": true, "set-file": true,
	"link": true, "period": true, // git-sync
	// a placeholder: `--flag value`
	"flag": true,
	// git, curl, systemd, npm
	"depth": true, "ref": true, "repo": true, "global": true, "now": true, "fail": true, "silent": true, "show": true,
	// the MCP Inspector and clients
	"cli": true, "method": true, "transport": true, "tool-name": true, "tool-arg": true, "scope": true,
}

// formerFlags are flags that were removed; the docs may name them only
// as such, on a line that says "former" (for the upgrade notes).
var formerFlags = map[string]bool{"shutdown-timeout": true, "drain-timeout": true}

// docMention is one command line (or flag) of the docs.
type docMention struct {
	line    int
	text    string
	context string   // the whole line
	program string   // skillbus, registry, seqworker, skillface, or "" (unattributed)
	words   []string // skillbus: the words after "skillbus", cleaned
	flags   []string // the flag names it gives (before any "--")
}

var (
	codeSpan  = regexp.MustCompile("`([^`]+)`")
	flagToken = regexp.MustCompile(`^-{1,2}([a-zA-Z][a-zA-Z0-9-]*)(=.*)?$`)
	// "the seqworker's `--x`", "`seqworker`'s `--x`", "registry's `--dir`"
	possessive = regexp.MustCompile(`(registry|seqworker|skillface|skillbus)` + "`?" + `'s\s*$`)
)

// docMentions returns the command lines and flags of a Markdown file.
func docMentions(t *testing.T, file string) []docMention {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docMention
	inFence := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			code := line
			if i := strings.Index(code, " #"); i >= 0 {
				code = code[:i]
			}
			out = append(out, mentionsOf(n, code, "", line)...)
			continue
		}
		for _, loc := range codeSpan.FindAllStringSubmatchIndex(line, -1) {
			span := strings.ReplaceAll(line[loc[2]:loc[3]], `\|`, "|")
			out = append(out, mentionsOf(n, span, line[:loc[0]], line)...)
		}
	}
	return out
}

// mentionsOf splits a code text into its commands (at &&, ||, ;, |) and
// returns those that give flags.
func mentionsOf(n int, code, before, line string) []docMention {
	var out []docMention
	for _, seg := range regexp.MustCompile(`&&|\|\||;| \| |\$\(|<\(`).Split(code, -1) {
		words := strings.Fields(seg)
		// Leading variable assignments, a prompt, sudo, "go run".
		for len(words) > 0 && (words[0] == "$" || words[0] == "sudo" || words[0] == "exec" || regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0])) {
			words = words[1:]
		}
		if len(words) > 2 && words[0] == "go" && words[1] == "run" && strings.HasSuffix(words[2], "cmd/skillbus") {
			words = append([]string{"skillbus"}, words[3:]...)
		}
		if len(words) == 0 {
			continue
		}
		m := docMention{line: n, text: strings.TrimSpace(seg), context: line}
		prog := filepath.Base(words[0])
		rest := words[1:]
		switch {
		case prog == "skillbus" || prog == "registry" || prog == "seqworker" || prog == "skillface":
			m.program = prog
		case commands()[prog].run != nil && len(rest) > 0 && strings.HasPrefix(rest[0], "-") || prog == "tools" && len(rest) > 1 && rest[0] == "serve":
			// `run --tools-root`, `tools serve --root`: a skillbus command.
			m.program, rest = "skillbus", words
		case strings.HasPrefix(words[0], "-"):
			rest = words
			if p := possessive.FindStringSubmatch(before); p != nil {
				m.program = p[1]
				if m.program == "skillbus" {
					m.program = ""
				}
			}
		default:
			continue // another program, or prose in backticks
		}
		for _, w := range rest {
			w = strings.Trim(w, "[](),.'\"")
			if w == "--" {
				break
			}
			m.words = append(m.words, w)
			if fm := flagToken.FindStringSubmatch(w); fm != nil {
				m.flags = append(m.flags, fm[1])
			}
		}
		if len(m.flags) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// checkSkillbusLine checks the flags of a skillbus command line against the
// flag set of the (sub)command it names; "" when they all exist.
func checkSkillbusLine(words []string) string {
	if len(words) == 0 || words[0] == "--version" {
		return ""
	}
	args, err := globalFlagsFirst(words)
	if err != nil {
		return err.Error()
	}
	name, c, rest, ok := resolve(commands(), args)
	if !ok {
		if args[0] == "version" || args[0] == "help" || strings.ToUpper(args[0]) == args[0] {
			return "" // --version, help, or a placeholder (COMMAND)
		}
		return "no skillbus command " + args[0]
	}
	in, ok := inspect(c, nil, nil)
	if !ok {
		return "`skillbus " + name + "` cannot be inspected"
	}
	var bad []string
	for _, w := range rest {
		if w == "--" {
			break
		}
		fm := flagToken.FindStringSubmatch(expandShort(in.fs.Lookup, w))
		if fm == nil || fm[1] == "help" || fm[1] == "h" {
			continue
		}
		if in.fs.Lookup(fm[1]) == nil {
			bad = append(bad, dashFlag(fm[1]))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "`skillbus " + name + "` has no flag " + strings.Join(bad, ", ") + " (`skillbus " + name + " --help` lists its flags)"
}

// serviceFlags builds the service binaries and returns each one's flags,
// as its --help lists them.
func serviceFlags(t *testing.T) map[string]map[string]bool {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "../../cmd/registry", "../../cmd/seqworker", "../../cmd/skillface")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	re := regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)
	out := map[string]map[string]bool{}
	for _, name := range []string{"registry", "seqworker", "skillface"} {
		help, err := exec.Command(filepath.Join(dir, name), "--help").Output()
		if err != nil {
			t.Fatalf("%s --help: %v", name, err)
		}
		set := map[string]bool{}
		for _, m := range re.FindAllStringSubmatch(string(help), -1) {
			set[m[1]] = true
		}
		if !set["health-addr"] || !set["shutdown-budget"] {
			t.Fatalf("%s --help lists %v: the flags were not read", name, sortedSet(set))
		}
		out[name] = set
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

func dashFlag(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

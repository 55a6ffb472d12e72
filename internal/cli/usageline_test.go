package cli

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestUsageLinesListFlags keeps each command's --help in step with its
// flag set: every flag the command defines is described in its --help (a
// line starting with the flag; -o and --json are described once for all
// in docs), and the Usage lines at the top show it or end in [flags]. (`dev --help` left out --auth-dir and --verbose.)
func TestUsageLinesListFlags(t *testing.T) {
	for _, p := range allCommands() {
		in, ok := inspect(p.c, nil, nil)
		if !ok || p.c.usage == "" {
			continue
		}
		code, help, _ := runMain(t, append(slices.Clone(p.words), "--help")...)
		if code != ExitOK {
			t.Errorf("skillbus %s --help = %d", strings.Join(p.words, " "), code)
			continue
		}
		var usage []string
		for i, line := range strings.Split(help, "\n") {
			if i > 0 && !strings.HasPrefix(line, "       ") {
				break
			}
			usage = append(usage, line)
		}
		head := strings.Join(usage, "\n")
		in.fs.VisitAll(func(f *flag.Flag) {
			if f.Name == "json" || f.Name == "output" || f.Name == "o" || f.Name == "help" {
				return
			}
			dash := "--" + f.Name
			if len(f.Name) == 1 {
				dash = "-" + f.Name
			}
			if !strings.Contains(head, dash) && !strings.Contains(head, "[flags]") {
				t.Errorf("skillbus %s: the usage line shows neither %s nor [flags]:\n%s", strings.Join(p.words, " "), dash, head)
			}
			for _, line := range strings.Split(help, "\n") {
				if l := strings.TrimLeft(line, " "); strings.HasPrefix(l, dash+" ") || strings.HasPrefix(l, dash+",") || l == dash {
					return
				}
			}
			t.Errorf("skillbus %s --help does not describe %s (add a line '  %s ...' to its flags)", strings.Join(p.words, " "), dash, dash)
		})
	}
}

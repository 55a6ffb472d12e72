package cli

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/devstack"
)

// TestTableLikeTabwriter: for ASCII text the table writes byte for byte
// what text/tabwriter (minwidth 0, padding 2, spaces) writes, on random
// tables with ragged rows, empty cells and unended last lines.
func TestTableLikeTabwriter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "ok", "name", "survey-inventory", "12.5s", "x y z"}
	for n := 0; n < 2000; n++ {
		var in strings.Builder
		for l := r.IntN(6); l >= 0; l-- {
			for c := r.IntN(5); c > 0; c-- {
				in.WriteString(words[r.IntN(len(words))])
				in.WriteByte('\t')
			}
			in.WriteString(words[r.IntN(len(words))])
			if l > 0 || r.IntN(2) == 0 {
				in.WriteByte('\n')
			}
		}
		var want, got bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
		fmt.Fprint(tw, in.String())
		tw.Flush()
		tb := newTable(&got)
		fmt.Fprint(tb, in.String())
		tb.Flush()
		if got.String() != want.String() {
			t.Fatalf("input %q:\ntable:\n%q\ntabwriter:\n%q", in.String(), got.String(), want.String())
		}
	}
}

// TestTableWideCharacters: columns line up on a terminal when cells hold
// CJK characters (2 columns each), combining marks (0) or emoji: every
// later column starts at the same terminal column on every line.
func TestTableWideCharacters(t *testing.T) {
	var b bytes.Buffer
	tb := newTable(&b)
	fmt.Fprintln(tb, "NAME\tGROUPS\tSOURCE")
	fmt.Fprintln(tb, "日本語-調査\tg1, g2\tfile")
	fmt.Fprintln(tb, "cafe\u0301-survey\tcafé-list\tfile") // e + combining acute: 11 columns
	fmt.Fprintln(tb, "ｆｕｌｌ\tx\tapi")                       // fullwidth Latin
	fmt.Fprintln(tb, "🙂-ok\ty\tfile")
	tb.Flush()
	// 日本語-調査 and café-survey take 11 columns, ｆｕｌｌ 8, 🙂-ok 5.
	want := "NAME         GROUPS     SOURCE\n" +
		"日本語-調査  g1, g2     file\n" +
		"cafe\u0301-survey  café-list  file\n" +
		"ｆｕｌｌ     x          api\n" +
		"🙂-ok        y          file\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		i := strings.LastIndex(l, "  ")
		if w := runewidth.StringWidth(l[:i+2]); w != 24 {
			t.Errorf("line %q: the last column starts at terminal column %d; want 24", l, w)
		}
	}
}

// TestSeqsTableWideNames lists, with `skillbus seqs` against a real stack,
// a sequence whose name and group are CJK beside ASCII ones: each column
// starts at the same terminal column on every line.
func TestSeqsTableWideNames(t *testing.T) {
	clearNATSEnv(t)
	defs := t.TempDir()
	for name, group := range map[string]string{"日本語-調査": "一覧-作成", "plain-survey": "plain-list"} {
		text := "name: " + name + "\ngroups:\n  - name: " + group + "\n    tools:\n      - tool: fs.list\n        args: {path: .}\n"
		if err := os.WriteFile(filepath.Join(defs, group+".seq.yaml"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stack, err := devstack.Start(ctx, devstack.Config{DataDir: t.TempDir(), Dir: defs, Tools: builtin.Config{Root: defs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = stack.Stop(sctx)
	})
	t.Setenv("NATS_URL", stack.URL())
	var out string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var code int
		code, out, _ = runMain(t, "seqs")
		if code == ExitOK && strings.Contains(out, "日本語-調査") && strings.Contains(out, "plain-survey") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry did not load both sequences: seqs = %d %q", code, out)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("seqs printed %d lines; want a header and 2 rows:\n%s", len(lines), out)
	}
	// The terminal column where GROUPS and SIGNATURE start, on each line.
	starts := func(l string) []int {
		var cols []int
		for _, cell := range []string{"GROUPS", "一覧-作成", "plain-list", "SIGNATURE", "()"} {
			if i := strings.Index(l, cell); i >= 0 {
				cols = append(cols, runewidth.StringWidth(l[:i]))
			}
		}
		return cols
	}
	want := starts(lines[0])
	for _, l := range lines[1:] {
		if got := starts(l); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("columns of %q start at %v; the header's at %v:\n%s", l, got, want, out)
		}
	}
}

package skillface_test

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillbus/skillbus/internal/corpus"
	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// loadCorpus loads every SKILL.md of the public corpus with pkg/skill. Two
// repositories publish a skill of the same name (skill-creator); a registry
// holds one skill per name, so the later one in walk order replaces the
// earlier, as a put to the SKILLS bucket would.
func loadCorpus(t *testing.T) map[string]skill.Skill {
	t.Helper()
	root := corpus.Skills(t)
	out := map[string]skill.Skill{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "SKILL.md" {
			return err
		}
		s, _, err := skill.Load(p)
		if err != nil {
			t.Errorf("skill.Load(%s): %v", p, err)
			return nil
		}
		out[s.Name] = *s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("loaded %d corpus skills; want the whole corpus (over 20)", len(out))
	}
	return out
}

// listingEntries returns the "- " lines of a listing.
func listingEntries(listing string) []string {
	var out []string
	for _, l := range strings.Split(listing, "\n") {
		if strings.HasPrefix(l, "- ") {
			out = append(out, l)
		}
	}
	return out
}

// TestCorpusListingWithinBudgets loads the whole public skills corpus and
// checks the listing the model sees against the budgets of docs/skills.md:
// with the defaults and with budgets small enough that real descriptions
// and the entry count overflow, every entry fits, every cut is marked and
// the marks and counts agree.
func TestCorpusListingWithinBudgets(t *testing.T) {
	skills := loadCorpus(t)
	var names []string
	for n := range skills {
		names = append(names, n)
	}
	slices.Sort(names)

	for _, tc := range []struct {
		name              string
		entryChars, limit int
	}{
		{"defaults", skillface.DefaultEntryChars, skillface.DefaultListingEntries},
		{"tight", 200, 10},
		{"minimum entry", skillface.MinEntryChars, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := skillface.New(skillface.WithEntryChars(tc.entryChars), skillface.WithListingEntries(tc.limit))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if err := a.PutSkill(skills[n]); err != nil {
					t.Fatalf("PutSkill(%s): %v", n, err)
				}
			}
			resp := assemble(t, a, user("corpus", 1, "hello"))
			listing := resp.Messages[1].Content
			entries := listingEntries(listing)

			wantShown := min(len(names), tc.limit)
			if len(entries) != wantShown {
				t.Fatalf("listing shows %d entries; want %d of %d skills", len(entries), wantShown, len(names))
			}
			cut := 0
			for i, e := range entries {
				if n := utf8.RuneCountInString(e); n > tc.entryChars {
					t.Errorf("entry %d has %d characters; budget %d: %.80q", i, n, tc.entryChars, e)
				}
				if !utf8.ValidString(e) {
					t.Errorf("entry %d is not valid UTF-8", i)
				}
				if !strings.HasPrefix(e, "- "+names[i]) {
					t.Errorf("entry %d = %.40q; want skill %s (sorted by name)", i, e, names[i])
				}
				if strings.HasSuffix(e, " .truncated") {
					cut++
				}
			}
			if resp.Counts.EntriesTruncated != cut || resp.Counts.EntriesDropped != len(names)-wantShown {
				t.Errorf("counts = %+v; want %d entries truncated (marks seen) and %d dropped", resp.Counts, cut, len(names)-wantShown)
			}
			var wantNote []string
			if cut > 0 {
				wantNote = append(wantNote, fmt.Sprintf("cut to %d characters.", tc.entryChars))
			}
			if d := len(names) - wantShown; d > 0 {
				wantNote = append(wantNote, fmt.Sprintf("not listed (the listing shows at most %d)", tc.limit))
			}
			for _, w := range wantNote {
				if !strings.Contains(listing, w) {
					t.Errorf("listing does not say %q", w)
				}
			}
			if tc.name != "defaults" && cut == 0 {
				t.Errorf("tight budgets cut no corpus entry; the test would not notice a broken cut")
			}
			t.Logf("%d skills, %d listed, %d entries cut, listing %d characters", len(names), len(entries), cut, utf8.RuneCountInString(listing))
		})
	}
}

// TestCorpusBodiesWithinBudget mounts every corpus skill (four per session)
// and checks each injected body against the 16 KiB budget.
func TestCorpusBodiesWithinBudget(t *testing.T) {
	skills := loadCorpus(t)
	a, err := skillface.New()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n, s := range skills {
		if err := a.PutSkill(s); err != nil {
			t.Fatalf("PutSkill(%s): %v", n, err)
		}
		names = append(names, n)
	}
	slices.Sort(names)
	truncated := 0
	for _, n := range names {
		resp := assemble(t, a, skillface.Request{SessionID: "body-" + n, Round: 1,
			Messages: []skillface.Message{{Role: "user", Content: "go"}}, Mounts: []string{n}})
		msg := resp.Messages[1].Content
		if !utf8.ValidString(msg) {
			t.Errorf("%s: body message is not valid UTF-8", n)
		}
		b := skills[n].Body
		if len(b) <= skillface.DefaultBodyBytes {
			if !strings.HasSuffix(msg, b) || resp.Counts.BodiesTruncated != 0 {
				t.Errorf("%s: a %d-byte body was altered", n, len(b))
			}
			continue
		}
		truncated++
		head, _, ok := strings.Cut(msg, "\n\n.truncated: this body was cut at ")
		if !ok || resp.Counts.BodiesTruncated != 1 {
			t.Errorf("%s: a %d-byte body is not marked .truncated", n, len(b))
			continue
		}
		kept := head[strings.Index(head, "\n\n")+2:]
		if len(kept) > skillface.DefaultBodyBytes || len(kept) < skillface.DefaultBodyBytes-utf8.UTFMax || !strings.HasPrefix(b, kept) {
			t.Errorf("%s: kept %d bytes of %d; want a prefix of at most %d bytes cut at a character boundary", n, len(kept), len(b), skillface.DefaultBodyBytes)
		}
	}
	if truncated == 0 {
		t.Error("no corpus body exceeds 16 KiB; expected the long ones (claude-api, skill-creator) to be cut")
	}
	t.Logf("%d corpus skills mounted, %d bodies cut to %d bytes", len(names), truncated, skillface.DefaultBodyBytes)
}

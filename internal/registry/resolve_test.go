package registry

import (
	"github.com/skillbus/skillbus/pkg/events"

	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func skillDef(name, src string) *definition {
	return &definition{kind: kindSkill, name: name, source: src, value: []byte(`{}`), sum: src}
}

func seqDef(name, src string, groups ...string) *definition {
	return &definition{kind: kindSequence, name: name, source: src, groups: groups, value: []byte(`{}`), sum: src}
}

// seqDefSum is seqDef with a sum of its own: another version of the file.
func seqDefSum(name, src, sum string, groups ...string) *definition {
	d := seqDef(name, src, groups...)
	d.sum = src + "@" + sum
	return d
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name        string
		files       []*definition
		created     []*definition
		stored      []*definition     // what the bucket holds of the files
		wantSkills  map[string]string // name -> kept source
		wantSeqs    map[string]string
		wantClashes []string            // "what name kept|other"
		wantGroups  map[string][]string // name -> groups of the version kept
	}{
		{
			name:       "no clash",
			files:      []*definition{skillDef("a", "x/a/SKILL.md"), skillDef("b", "x/b/SKILL.md"), seqDef("s", "s.seq.yaml", "g1")},
			wantSkills: map[string]string{"a": "x/a/SKILL.md", "b": "x/b/SKILL.md"},
			wantSeqs:   map[string]string{"s": "s.seq.yaml"},
		},
		{
			name:        "skill name clash: first path wins",
			files:       []*definition{skillDef("pdf", "z/pdf/SKILL.md"), skillDef("pdf", "a/pdf/SKILL.md")},
			wantSkills:  map[string]string{"pdf": "a/pdf/SKILL.md"},
			wantSeqs:    map[string]string{},
			wantClashes: []string{"skill name pdf a/pdf/SKILL.md|z/pdf/SKILL.md"},
		},
		{
			name:        "SKILL.md beats skill.yaml in one folder (byte order)",
			files:       []*definition{skillDef("k", "k/skill.yaml"), skillDef("k", "k/SKILL.md")},
			wantSkills:  map[string]string{"k": "k/SKILL.md"},
			wantSeqs:    map[string]string{},
			wantClashes: []string{"skill name k k/SKILL.md|k/skill.yaml"},
		},
		{
			name:        "group name clash across sequences",
			files:       []*definition{seqDef("two", "b.seq.yaml", "fetch", "post"), seqDef("one", "a.seq.json", "fetch")},
			wantSkills:  map[string]string{},
			wantSeqs:    map[string]string{"one": "a.seq.json"},
			wantClashes: []string{`group name fetch a.seq.json (sequence "one")|b.seq.yaml (sequence "two")`},
		},
		{
			name:        "sequence name clash",
			files:       []*definition{seqDef("s", "b.seq.yaml", "g2"), seqDef("s", "a.seq.yaml", "g1")},
			wantSkills:  map[string]string{},
			wantSeqs:    map[string]string{"s": "a.seq.yaml"},
			wantClashes: []string{"sequence name s a.seq.yaml|b.seq.yaml"},
		},
		{
			name:        "created over NATS beats a file",
			files:       []*definition{seqDef("s", "a.seq.yaml", "g1"), seqDef("t", "b.seq.yaml", "made")},
			created:     []*definition{seqDef("s", "", "other"), seqDef("u", "", "made")},
			wantSkills:  map[string]string{},
			wantSeqs:    map[string]string{"s": "", "u": ""},
			wantClashes: []string{"sequence name s seq.create|a.seq.yaml", `group name made seq.create (sequence "u")|b.seq.yaml (sequence "t")`},
		},
		{
			name:       "a sequence rejected for a group clash frees its other groups",
			files:      []*definition{seqDef("a", "1.seq.yaml", "x"), seqDef("b", "2.seq.yaml", "x", "y"), seqDef("c", "3.seq.yaml", "y")},
			wantSkills: map[string]string{},
			wantSeqs:   map[string]string{"a": "1.seq.yaml", "c": "3.seq.yaml"},
			wantClashes: []string{
				`group name x 1.seq.yaml (sequence "a")|2.seq.yaml (sequence "b")`,
			},
		},
		{
			name:        "a new file does not take a group from a stored sequence",
			files:       []*definition{seqDef("two", "b.seq.yaml", "fetch", "post"), seqDef("one", "a.seq.json", "fetch")},
			stored:      []*definition{seqDef("two", "b.seq.yaml", "fetch", "post")},
			wantSkills:  map[string]string{},
			wantSeqs:    map[string]string{"two": "b.seq.yaml"},
			wantClashes: []string{`group name fetch b.seq.yaml (sequence "two")|a.seq.json (sequence "one")`},
		},
		{
			name:        "a new file does not take a stored sequence's name",
			files:       []*definition{seqDef("s", "b.seq.yaml", "g2"), seqDef("s", "a.seq.yaml", "g1")},
			stored:      []*definition{seqDef("s", "b.seq.yaml", "g2")},
			wantSkills:  map[string]string{},
			wantSeqs:    map[string]string{"s": "b.seq.yaml"},
			wantClashes: []string{"sequence name s b.seq.yaml|a.seq.yaml"},
		},
		{
			name: "an edited file that clashes keeps its stored version",
			// a.seq.yaml stored "one" with group list; its edit adds fetch,
			// which b.seq.yaml's stored "two" holds.
			files:       []*definition{seqDefSum("one", "a.seq.yaml", "edit", "list", "fetch"), seqDef("two", "b.seq.yaml", "fetch")},
			stored:      []*definition{seqDef("one", "a.seq.yaml", "list"), seqDef("two", "b.seq.yaml", "fetch")},
			wantSkills:  map[string]string{},
			wantSeqs:    map[string]string{"one": "a.seq.yaml", "two": "b.seq.yaml"},
			wantClashes: []string{`group name fetch b.seq.yaml (sequence "two")|a.seq.yaml (sequence "one")`},
			wantGroups:  map[string][]string{"one": {"list"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stored storedSeqs
			if tt.stored != nil {
				stored.sums = map[string]string{}
				for _, d := range tt.stored {
					stored.sums[d.source] = d.sum
				}
				stored.version = func(rel string) *definition {
					for _, d := range tt.stored {
						if d.source == rel {
							return d
						}
					}
					return nil
				}
			}
			files := map[string]*definition{}
			for _, d := range tt.files {
				files[d.source] = d
			}
			created := map[string]*definition{}
			for _, d := range tt.created {
				created[d.name] = d
			}
			skills, seqs, clashes := resolve(files, created, stored)
			got := func(m map[string]*definition) map[string]string {
				out := map[string]string{}
				for n, d := range m {
					out[n] = d.source
				}
				return out
			}
			if g := got(skills); !reflect.DeepEqual(g, tt.wantSkills) {
				t.Errorf("skills = %v; want %v", g, tt.wantSkills)
			}
			if g := got(seqs); !reflect.DeepEqual(g, tt.wantSeqs) {
				t.Errorf("sequences = %v; want %v", g, tt.wantSeqs)
			}
			for name, groups := range tt.wantGroups {
				if d := seqs[name]; d == nil || !reflect.DeepEqual(d.groups, groups) {
					t.Errorf("sequence %s kept = %+v; want the version with groups %v", name, d, groups)
				}
			}
			var gc []string
			for _, c := range clashes {
				gc = append(gc, c.what+" "+c.name+" "+c.kept+"|"+c.other)
				if !strings.Contains(c.String(), c.kept) || !strings.Contains(c.String(), c.other) {
					t.Errorf("clash message %q does not name both sources", c.String())
				}
			}
			sort.Strings(gc)
			want := append([]string(nil), tt.wantClashes...)
			sort.Strings(want)
			if !reflect.DeepEqual(gc, want) && !(len(gc) == 0 && len(want) == 0) {
				t.Errorf("clashes = %q; want %q", gc, want)
			}
		})
	}
}

func TestFileKind(t *testing.T) {
	tests := map[string]string{
		"a/SKILL.md": kindSkill, "skill.yaml": kindSkill, "x.seq.json": kindSequence, "x.seq.yaml": kindSequence,
		"x.seq.yml": kindSequence, "skill.md": kindNone, "x.json": kindNone, "README.md": kindNone, "SKILL.md.bak": kindNone,
	}
	for p, want := range tests {
		if got := FileKind(p); got != want {
			t.Errorf("FileKind(%q) = %q; want %q", p, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	_ = os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"zero", Config{}, ""},
		{"missing dir", Config{Dir: "/does/not/exist"}, "Dir"},
		{"dir is a file", Config{Dir: file}, "Dir"},
		{"negative debounce", Config{Debounce: -1}, "Debounce"},
		{"max delay below debounce", Config{Debounce: 500e6, MaxDelay: 100e6}, "MaxDelay"},
		{"negative timeout", Config{Timeout: -1}, "Timeout"},
		{"replicas", Config{Provision: provisionReplicas(9)}, "Replicas"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if tt.field == "" {
			if err != nil {
				t.Errorf("%s: Validate() = %v; want nil", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: Validate() = %v; want an error naming %s", tt.name, err, tt.field)
		}
	}
}

func provisionReplicas(n int) (o events.Options) { o.Replicas = n; return o }

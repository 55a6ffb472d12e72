package registry

import "fmt"

// createdSource labels a sequence created over NATS in messages.
const createdSource = "seq.create"

// clash is one rejected definition: its name (or one of its group names) is
// already taken by the kept definition.
type clash struct {
	kind     string // kindSkill or kindSequence
	what     string // "skill name", "sequence name" or "group name"
	name     string // the name both use
	kept     string // source of the kept definition (with its sequence for a group clash)
	other    string // source of the rejected one (likewise)
	otherSrc string // source of the rejected definition, bare (label)
	keptSrc  string // source of the kept definition, bare (label)
	keptName string // name of the kept definition
	rejected string // name of the rejected definition
	keptOld  bool   // the rejected file's stored version stays stored
}

// problem is the clash as a problem of the rejected file (validate).
func (c clash) problem() string {
	if c.what == "group name" {
		return fmt.Sprintf("group name %q is also used by sequence %q in %s, which the registry keeps (%s): group names are unique across all sequences, so it ignores sequence %q until one group is renamed",
			c.name, c.keptName, c.keptSrc, precedenceRule(c.kind), c.rejected)
	}
	return fmt.Sprintf("%s %q is also defined by %s, which the registry keeps (%s), so it ignores this file until one of them is renamed or removed",
		c.what, c.name, c.keptSrc, precedenceRule(c.kind))
}

func (c clash) String() string {
	s := fmt.Sprintf("%s %q is defined by both %s and %s; keeping %s (%s), ignoring %s until the clash is resolved",
		c.what, c.name, c.kept, c.other, c.kept, precedenceRule(c.kind), c.other)
	if c.keptOld {
		s += fmt.Sprintf("; the version of %s stored before this change stays stored", c.otherSrc)
	}
	if c.what == "group name" && c.otherSrc != createdSource {
		s += fmt.Sprintf(": rename the group %q in %s (group names are unique across all sequences)", c.name, c.otherSrc)
	}
	return s
}

func precedenceRule(kind string) string {
	if kind == kindSkill {
		return "the first file path in byte order wins"
	}
	return "sequences created with seq.create win, then the sequences already stored, then the first file path in byte order"
}

func label(d *definition) string {
	if d.source == "" {
		return createdSource
	}
	return d.source
}

// resolve decides which definitions are stored, deterministically from its
// inputs alone (never from the order files were read):
//
//   - skills: a skill name belongs to the file whose path (relative, with
//     '/') sorts first in byte order;
//   - sequences: sequences created over NATS come first (by name), then
//     the files whose definition is the one stored (unchanged since the
//     registry stored it), by path, then the other files (new or edited),
//     by path; a sequence is stored when its name is free and none of its
//     group names is used by a sequence taken before it. So a new or
//     edited file never takes a name or a group from a sequence already
//     stored: it is the one reported. An edited file that loses keeps its
//     stored version when that one does not clash.
//
// files holds the current definition of every file (its last good version
// when it is invalid now); created the sequences created over NATS;
// stored what the bucket holds of the sequence files (nil for nothing, as
// for `skillbus validate`).
func resolve(files, created map[string]*definition, stored storedSeqs) (skills, seqs map[string]*definition, clashes []clash) {
	skills = map[string]*definition{}
	seqs = map[string]*definition{}
	var seqOrder, changed []*definition
	for _, name := range sortedKeys(created) {
		seqOrder = append(seqOrder, created[name])
	}
	for _, src := range sortedKeys(files) {
		d := files[src]
		if d.kind == kindSequence {
			if sum, ok := stored.sums[src]; ok && sum == d.sum {
				seqOrder = append(seqOrder, d)
			} else {
				changed = append(changed, d)
			}
			continue
		}
		if k, dup := skills[d.name]; dup {
			clashes = append(clashes, clash{kind: kindSkill, what: "skill name", name: d.name, kept: label(k), other: label(d),
				keptSrc: label(k), otherSrc: label(d), keptName: k.name, rejected: d.name})
			continue
		}
		skills[d.name] = d
	}
	groupOwner := map[string]*definition{}
	take := func(d *definition) *clash {
		if k, dup := seqs[d.name]; dup {
			return &clash{kind: kindSequence, what: "sequence name", name: d.name, kept: label(k), other: label(d),
				keptSrc: label(k), otherSrc: label(d), keptName: k.name, rejected: d.name}
		}
		for _, g := range d.groups {
			if k, dup := groupOwner[g]; dup {
				return &clash{kind: kindSequence, what: "group name", name: g, kept: label(k) + " (sequence " + fmt.Sprintf("%q", k.name) + ")", other: label(d) + " (sequence " + fmt.Sprintf("%q", d.name) + ")",
					keptSrc: label(k), otherSrc: label(d), keptName: k.name, rejected: d.name}
			}
		}
		seqs[d.name] = d
		for _, g := range d.groups {
			groupOwner[g] = d
		}
		return nil
	}
	for _, d := range seqOrder {
		if c := take(d); c != nil {
			clashes = append(clashes, *c)
		}
	}
	for _, d := range changed {
		c := take(d)
		if c == nil {
			continue
		}
		if _, ok := stored.sums[d.source]; ok && stored.version != nil {
			if p := stored.version(d.source); p != nil && take(p) == nil {
				c.keptOld = true // the stored version stays: it fits
			}
		}
		clashes = append(clashes, *c)
	}
	return skills, seqs, clashes
}

// storedSeqs is what the SEQUENCES bucket holds of the sequence files, for
// resolve: sums by file path, and version, which returns the stored
// definition of a file (nil when it cannot be read), called only for a
// file that lost a clash.
type storedSeqs struct {
	sums    map[string]string
	version func(rel string) *definition
}

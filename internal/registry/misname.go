package registry

import (
	"bytes"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// misnameCandidate reports whether a file name that FileKind does not
// accept may still be meant as a definition: SKILL.md or skill.yaml in
// another case or with .yml, and *.yaml, *.yml and *.json files (which
// `skillbus run` accepts as sequences whatever their name).
func misnameCandidate(name string) bool {
	if FileKind(name) != kindNone {
		return false
	}
	lower := strings.ToLower(name)
	switch {
	case lower == "skill.md", lower == "skill.yaml", lower == "skill.yml":
		return true
	case strings.HasSuffix(lower, ".yaml"), strings.HasSuffix(lower, ".yml"), strings.HasSuffix(lower, ".json"):
		return true
	}
	return false
}

// misnameProblem returns the warning for a file the registry ignores
// because of its name although it looks like a definition ("" when it does
// not look like one). data is the file's content (nil when unread; needed
// only for *.yaml, *.yml and *.json files, which are a sequence when their
// top level is a mapping with both name and groups).
func misnameProblem(name string, data []byte) string {
	lower := strings.ToLower(name)
	switch lower {
	case "skill.md":
		return "the registry loads only files named exactly SKILL.md (upper case, as the Agent Skills format writes it), so it ignores this file: rename it to SKILL.md"
	case "skill.yaml", "skill.yml":
		return "the registry loads only files named exactly skill.yaml (lower case, .yaml), so it ignores this file: rename it to skill.yaml"
	}
	if !looksLikeSequence(data) {
		return ""
	}
	ext := strings.ToLower(filepath.Ext(name))
	if ext != ".yaml" && ext != ".yml" && ext != ".json" {
		// A backup or copy (flow.seq.yaml~, flow.seq.yaml.bak) named on
		// the command line: its name has no extension to keep.
		return "`skillbus run` takes this file as a sequence (it has name and groups), but the registry loads only files named *.seq.json, *.seq.yaml or *.seq.yml, so `skillbus dev` and the registry ignore it (as they should an editor's backup or a copy); give it such a name if it is meant to be loaded"
	}
	stem := strings.TrimSuffix(name, filepath.Ext(name))
	if s, ok := strings.CutSuffix(strings.ToLower(stem), ".seq"); ok {
		stem = stem[:len(s)]
	}
	return "`skillbus run` takes this file as a sequence (it has name and groups), but the registry loads only files named *.seq.json, *.seq.yaml or *.seq.yml, so `skillbus dev` and the registry ignore it: rename it to " + stem + ".seq" + ext
}

// looksLikeSequence reports whether data is a YAML or JSON document whose
// top level is a mapping with the keys name and groups.
func looksLikeSequence(data []byte) bool {
	if !bytes.Contains(data, []byte("groups")) {
		return false
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return false
	}
	var name, groups bool
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "name":
			name = true
		case "groups":
			groups = true
		}
	}
	return name && groups
}

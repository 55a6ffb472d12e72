// Package yamlplain holds skillbus's one rule for YAML written by people —
// sequence files, a SKILL.md's frontmatter, skill.yaml: aliases (*name, of
// an anchor &name) and merge keys (<<) are refused. A file then means
// exactly what it shows and has one JSON equivalent: an alias repeats a
// value out of sight, a merge key changes a mapping from elsewhere, and a
// chain of aliases makes a small file expand into a huge one.
// docs/sequences.md ("Two forms") and docs/skills.md ("Errors and
// warnings") state the rule.
package yamlplain

import "gopkg.in/yaml.v3"

// The refusals, as every parser of skillbus words them.
const (
	AliasMessage    = "anchors and aliases (*name) are not supported; write the value out"
	MergeKeyMessage = "merge keys (<<) are not supported; write the fields out"
)

// Alias returns AliasMessage when n is an alias node, "" otherwise.
func Alias(n *yaml.Node) string {
	if n != nil && n.Kind == yaml.AliasNode {
		return AliasMessage
	}
	return ""
}

// MergeKey returns MergeKeyMessage when k, a key of a mapping, is the
// merge key << (plain or quoted), "" otherwise.
func MergeKey(k *yaml.Node) string {
	if k != nil && k.Kind == yaml.ScalarNode && k.Value == "<<" {
		return MergeKeyMessage
	}
	return ""
}

// Walk calls report with the line and the refusal of every alias and
// merge key in the tree under n (n included), in document order; the value
// of a merge key is not looked into (one problem for "<<: *base"). It does
// not follow aliases, so it ends on any tree yaml.v3 returns.
func Walk(n *yaml.Node, report func(line int, msg string)) {
	if n == nil {
		return
	}
	if msg := Alias(n); msg != "" {
		report(n.Line, msg)
		return
	}
	if n.Kind != yaml.MappingNode {
		for _, c := range n.Content {
			Walk(c, report)
		}
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if msg := MergeKey(k); msg != "" {
			report(k.Line, msg) // one problem for `<<: *base`, not also its alias
			continue
		}
		Walk(k, report)
		Walk(v, report)
	}
}

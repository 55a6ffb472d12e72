package skill

import "strings"

// splitTools splits an allowed-tools or disallowed-tools string as real
// files write it: tools separated by commas and/or white space, where a
// pattern's parentheses or braces may hold both ("Bash(git add:*), Read",
// "mcp__{github,gitlab}__*"). See splitList for the exact rule.
func splitTools(s string) []string {
	return splitList(s, func(c byte) bool { return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r' })
}

// splitComma splits a comma-separated string such as a paths list:
// "src/**/*.{ts,tsx}, docs/*.md" is two globs, because a comma inside
// {…} is part of a glob's alternatives. See splitList.
func splitComma(s string) []string {
	return splitList(s, func(c byte) bool { return c == ',' })
}

// splitList splits s at the bytes for which isSep is true, except where
// such a byte is
//
//   - inside (…) or {…}, nested to any depth (a pattern's arguments, a
//     glob's alternatives),
//   - inside a glob character class […] (from '[' to the next ']'; a ']'
//     right after "[" or "[!" or "[^" is part of the class), or
//   - escaped by a backslash (which stays in the item, as globs need it).
//
// A closing ')' or '}' without an opening one is kept as text; an opening
// one that is never closed keeps the rest of s in one item, so a broken
// pattern shows up whole in the error that rejects it. Items are trimmed of
// white space; empty items are dropped. The rule is the same for every
// list of a skill that may be written as one text (docs/skills.md).
func splitList(s string, isSep func(byte) bool) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			out = append(out, t)
		}
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++ // the next byte is literal
		case c == '[':
			if j := classEnd(s, i); j > 0 {
				i = j
			}
		case c == '(' || c == '{':
			depth++
		case c == ')' || c == '}':
			if depth > 0 {
				depth--
			}
		case depth == 0 && isSep(c):
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return out
}

// classEnd returns the index of the ']' that closes the character class
// opened at s[open] == '[', or -1 when there is none (then '[' is text).
func classEnd(s string, open int) int {
	i := open + 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		i++
	}
	if i < len(s) && s[i] == ']' {
		i++ // "[]…]": the first ']' is a member
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case ']':
			return i
		}
	}
	return -1
}

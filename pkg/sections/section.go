package sections

// Section is one heading-delimited part of a Markdown document: the heading
// line(s) and everything up to the next heading of any level (docs/skills.md).
// Lines are 0-based lines of the original text; End is exclusive, so the
// section's text is lines[Start:End] and the text stays the single source of
// truth. The leading untitled section (text before the first heading) has
// Level 0 and an empty Title.
type Section struct {
	// Level is 1–6 for ATX (`#`…`######`) and setext (1 for `===`, 2 for
	// `---`) headings, 0 for the leading untitled section.
	Level int `json:"level"`
	// Title is the heading's inline text: for ATX without the opening and
	// closing `#` sequences and the surrounding spaces; for setext the text
	// lines joined by "\n" with leading and trailing whitespace removed.
	Title string `json:"title"`
	// Start is the first line (the heading's first line), End the line after
	// the section's last line.
	Start int `json:"start"`
	End   int `json:"end"`
}

// Package sections splits Markdown into heading-delimited sections the way
// a CommonMark 0.31.2 parser sees the document, and answers skill_info
// (docs/skills.md): a table of contents with line counts, a section found by
// title with its subsections, or the whole text when it is short.
//
// Only top-level headings cut sections: ATX (`#` … `######`) and setext
// (`===`, `---`) headings that are direct children of the document. Lines
// inside fenced or indented code, HTML blocks (the 7 kinds of §4.6), block
// quotes and list items never do; link reference definitions before a setext
// underline are not part of its title. A section is a [Start, End) range of
// 0-based lines of the original text, so the text stays the single source
// of truth and concatenating every section gives it back byte for byte.
//
// Differences from a full parser, on purpose: a leading UTF-8 BOM is
// ignored (as cmark does; goldmark keeps it as text); a lone "\r" does not
// end a line (as goldmark; the spec would end one). The package has no
// dependency: goldmark is used only as a test oracle.
package sections

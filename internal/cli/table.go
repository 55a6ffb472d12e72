package cli

import (
	"bytes"
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// table lines up tab-separated cells in columns for a terminal. Its input
// is what text/tabwriter takes (each cell ends with a tab; the text after
// the last tab of a line is not aligned; a column's width holds over a
// block of consecutive lines that have that cell) and its output is what
// newTable(w) writes for ASCII text, but a
// cell's width is the number of terminal columns it takes, not its count
// of runes: a CJK or other wide character takes 2, a combining mark or a
// zero-width joiner 0, an emoji sequence one grapheme's width (Unicode
// East Asian Width and grapheme clusters, by github.com/mattn/go-runewidth;
// characters of ambiguous width count 1, as most terminals draw them
// outside CJK locales). tabwriter counts runes, so a name such as 日本語
// pushed every later column of its line out of line.
//
// Write buffers; Flush writes the table to the underlying writer.
type table struct {
	w   io.Writer
	buf bytes.Buffer
}

// tablePadding is the number of spaces between two columns.
const tablePadding = 2

// cellWidth measures text as a terminal draws it.
var cellWidth = func() *runewidth.Condition {
	c := runewidth.NewCondition()
	c.EastAsianWidth = false // ambiguous characters: 1 column
	return c
}()

func newTable(w io.Writer) *table { return &table{w: w} }

// Write adds p to the table; it never fails.
func (t *table) Write(p []byte) (int, error) { return t.buf.Write(p) }

// Flush writes the lines buffered since the last Flush, aligned, and
// returns the underlying writer's error.
func (t *table) Flush() error {
	text := t.buf.String()
	t.buf.Reset()
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	ended := lines[len(lines)-1] == "" // else the last line has no newline yet; it is written as is
	if ended {
		lines = lines[:len(lines)-1]
	}
	cells := make([][]string, len(lines))
	widths := make([][]int, len(lines))
	for i, l := range lines {
		// Made terminal-safe before it is measured, so that an escaped
		// control character (\x1b: 4 columns) keeps its column aligned.
		cells[i] = strings.Split(termSafe(l), "\t")
	}
	// An unended last line whose text ends with a tab: tabwriter's Flush
	// leaves its last cell out of the columns, as the text after a line's
	// last tab.
	if n := len(cells) - 1; !ended && n >= 0 && len(cells[n]) > 1 && cells[n][len(cells[n])-1] == "" {
		cells[n] = cells[n][:len(cells[n])-1]
	}
	for i := range cells {
		widths[i] = make([]int, len(cells[i])-1)
	}
	// Column c of line i is aligned over the run of consecutive lines
	// that all have a cell c ended by a tab.
	for c := 0; ; c++ {
		found := false
		for i := 0; i < len(lines); {
			if len(cells[i])-1 <= c {
				i++
				continue
			}
			found = true
			j, w := i, 0
			for ; j < len(lines) && len(cells[j])-1 > c; j++ {
				w = max(w, cellWidth.StringWidth(cells[j][c]))
			}
			for k := i; k < j; k++ {
				widths[k][c] = w + tablePadding
			}
			i = j
		}
		if !found {
			break
		}
	}
	var out strings.Builder
	for i, cs := range cells {
		for c, cell := range cs[:len(cs)-1] {
			out.WriteString(cell)
			out.WriteString(strings.Repeat(" ", widths[i][c]-cellWidth.StringWidth(cell)))
		}
		out.WriteString(cs[len(cs)-1])
		if i < len(cells)-1 || ended {
			out.WriteByte('\n')
		}
	}
	_, err := io.WriteString(t.w, out.String())
	return err
}

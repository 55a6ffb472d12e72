package sections

import (
	"regexp"
	"strings"
)

// This file is a block-structure parser that follows the parsing strategy of
// the CommonMark spec 0.31.2 (appendix "A parsing strategy"): for every line,
// match the open container blocks (block quotes, list items), then try the
// block starts (block quote, ATX heading, fenced code, HTML block, setext
// underline, thematic break, list item, indented code), then add the rest as
// paragraph text, a lazy continuation line or code/HTML content. It keeps no
// inline content: it only records the top-level headings.
//
// Speed: the parser holds no pointers in its per-line state (blocks are
// values on a stack, paragraph lines are offsets into the text), so a line
// costs no allocation and no GC write barrier; parsers are reused through a
// sync.Pool, so splitting a document allocates only its result.

type blockKind uint8

const (
	kindDocument blockKind = iota
	kindQuote
	kindItem
	kindParagraph
	kindFence
	kindIndented
	kindHTML
)

// isContainer reports whether k can hold other blocks.
func (k blockKind) isContainer() bool { return k <= kindItem }

// block is one open block on the parser's stack.
type block struct {
	kind blockKind
	// list item: hasChild is false while the item is still empty
	hasChild bool
	// fenced code: the fence character
	fenceChar byte
	// HTML block: 1–7, CommonMark §4.6
	htmlType uint8
	// list item: the column of its content (the marker's column plus the
	// padding after the marker)
	contentIndent int32
	// fenced code: the fence's length and indentation
	fenceLen, fenceIndent int32
}

// paraLine is one line of the open paragraph: text[start:end] (the line
// without its container prefixes and leading whitespace) and its number.
type paraLine struct{ start, end, lineNo int }

// heading is one heading found by the block parser.
type heading struct {
	level    int
	title    string
	line     int  // 0-based first line
	topLevel bool // a direct child of the document (always true: nested headings are not recorded)
}

// blockParser holds the per-line state of the CommonMark parsing strategy.
type blockParser struct {
	text string // the whole text (NUL already replaced)
	// stack[:depth] are the open blocks: stack[0] is the document; only
	// the last may be a leaf. The slice keeps its length (pushing and
	// popping only change depth) so that no pointer is written per line.
	stack    []block
	depth    int
	headings []heading // the top-level headings found so far
	para     []paraLine

	// The current line is text[lnStart:lnEnd] (without its line ending);
	// offset and nextNonspace are offsets in text, column counts from the
	// line's start. The line is not kept as a string of its own: a pointer
	// written on every line would cost a GC write barrier.
	lnStart, lnEnd     int
	lineNo             int
	offset, column     int
	nextNonspace       int
	nextNonspaceColumn int
	indent             int
	indented, blank    bool
	partialTab         bool
	allClosed          bool
	lastMatched        int // index in stack of the last matched container
}

func (p *blockParser) tip() *block { return &p.stack[p.depth-1] }

// reset prepares p for text, keeping its buffers.
func (p *blockParser) reset(text string) {
	p.text = text
	if len(p.stack) < 8 {
		p.stack = make([]block, 8)
	}
	p.stack[0] = block{kind: kindDocument}
	p.depth = 1
	p.headings = p.headings[:0]
	p.para = p.para[:0]
}

func (p *blockParser) findNextNonspace() {
	i, cols := p.offset, p.column
	for i < p.lnEnd {
		c := p.text[i]
		if c == ' ' {
			i++
			cols++
		} else if c == '\t' {
			i++
			cols += 4 - cols%4
		} else {
			break
		}
	}
	p.blank = i >= p.lnEnd
	p.nextNonspace = i
	p.nextNonspaceColumn = cols
	p.indent = cols - p.column
	p.indented = p.indent >= 4
}

func (p *blockParser) advanceNextNonspace() {
	p.offset = p.nextNonspace
	p.column = p.nextNonspaceColumn
	p.partialTab = false
}

// advanceOffset moves count characters (columns=false) or count columns
// (columns=true; a tab may then be consumed partially) along the line.
func (p *blockParser) advanceOffset(count int, columns bool) {
	for count > 0 && p.offset < p.lnEnd {
		if p.text[p.offset] == '\t' {
			toTab := 4 - p.column%4
			if columns {
				p.partialTab = toTab > count
				adv := min(toTab, count)
				p.column += adv
				if !p.partialTab {
					p.offset++
				}
				count -= adv
			} else {
				p.partialTab = false
				p.column += toTab
				p.offset++
				count--
			}
		} else {
			p.partialTab = false
			p.offset++
			p.column++
			count--
		}
	}
}

func (p *blockParser) peek(i int) byte {
	if i < p.lnEnd {
		return p.text[i]
	}
	return 0
}

func isSpaceOrTab(c byte) bool { return c == ' ' || c == '\t' }

// closeUnmatched closes every block below the last matched container.
func (p *blockParser) closeUnmatched() {
	if !p.allClosed {
		p.depth = p.lastMatched + 1
		p.allClosed = true
	}
}

// closeLeaf closes the open leaf block (the tip), if any, so that the tip
// is a container.
func (p *blockParser) closeLeaf() {
	if !p.tip().kind.isContainer() {
		p.depth--
	}
}

// addChild closes an open leaf and opens a block of kind k under the
// deepest container, and returns it for the caller to fill in. A new
// paragraph starts with no lines. (The block is written field by field in
// place: a block built elsewhere and copied in would be read back with one
// wide load right after narrow stores, which stalls store forwarding.)
func (p *blockParser) addChild(k blockKind) *block {
	p.closeLeaf()
	p.tip().hasChild = true
	if k == kindParagraph {
		p.para = p.para[:0]
	}
	if p.depth == len(p.stack) {
		p.stack = append(p.stack, make([]block, len(p.stack))...)
	}
	b := &p.stack[p.depth]
	*b = block{}
	b.kind = k
	p.depth++
	return b
}

// addParaLine adds the rest of the current line, from offset, to the open
// paragraph.
func (p *blockParser) addParaLine() {
	p.para = append(p.para, paraLine{start: p.offset, end: p.lnEnd, lineNo: p.lineNo})
}

// topLevelNow reports whether a block added now is a direct child of the
// document: the stack holds no block quote or list item.
func (p *blockParser) topLevelNow() bool {
	for i := 1; i < p.depth; i++ {
		if k := p.stack[i].kind; k == kindQuote || k == kindItem {
			return false
		}
	}
	return true
}

// addLeafLine adds a leaf that takes its lines at once (a heading when
// level > 0, else a thematic break): it closes a leaf tip and is itself
// closed at once. Only top-level headings are recorded.
func (p *blockParser) addLeafLine(level int, title string, line int) {
	p.closeLeaf()
	p.tip().hasChild = true
	if level > 0 && p.topLevelNow() {
		p.headings = append(p.headings, heading{level: level, title: title, line: line, topLevel: true})
	}
}

// continueBlock reports how an open block takes the current line:
// 0 matched, 1 not matched, 2 the line is fully consumed (closing fence).
func (p *blockParser) continueBlock(b *block) int {
	switch b.kind {
	case kindQuote:
		if !p.indented && p.peek(p.nextNonspace) == '>' {
			p.advanceNextNonspace()
			p.advanceOffset(1, false)
			if isSpaceOrTab(p.peek(p.offset)) {
				p.advanceOffset(1, true)
			}
			return 0
		}
		return 1
	case kindItem:
		if p.blank {
			if !b.hasChild {
				return 1
			}
			p.advanceNextNonspace()
			return 0
		}
		if p.indent >= int(b.contentIndent) {
			p.advanceOffset(int(b.contentIndent), true)
			return 0
		}
		return 1
	case kindFence:
		if p.indent <= 3 && p.peek(p.nextNonspace) == b.fenceChar {
			rest := p.text[p.nextNonspace:p.lnEnd]
			n := 0
			for n < len(rest) && rest[n] == b.fenceChar {
				n++
			}
			if n >= int(b.fenceLen) && onlySpaceTab(rest[n:]) {
				p.depth--
				return 2
			}
		}
		for i := b.fenceIndent; i > 0 && isSpaceOrTab(p.peek(p.offset)); i-- {
			p.advanceOffset(1, true)
		}
		return 0
	case kindIndented:
		if p.indent >= 4 {
			p.advanceOffset(4, true)
		} else if p.blank {
			p.advanceNextNonspace()
		} else {
			return 1
		}
		return 0
	case kindHTML:
		if p.blank && (b.htmlType == 6 || b.htmlType == 7) {
			return 1
		}
		return 0
	case kindParagraph:
		if p.blank {
			return 1
		}
		return 0
	}
	return 0
}

// special marks the bytes that can begin a block start other than indented
// code.
var special = [256]bool{
	'#': true, '`': true, '~': true, '*': true, '+': true, '_': true, '=': true, '<': true, '>': true, '-': true,
	'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true, '8': true, '9': true,
}

// incorporate adds one line, text[start:end] without its line ending, to
// the document.
func (p *blockParser) incorporate(start, end, lineNo int) {
	p.lnStart, p.lnEnd = start, end
	p.lineNo = lineNo
	p.offset, p.column, p.partialTab = start, 0, false
	p.blank = false

	// Fast paths for the most common lines at the top level (blank lines,
	// paragraph text, fenced code content): each does exactly what the
	// general steps below do for that line.
	switch p.depth {
	case 1: // nothing open
		p.findNextNonspace()
		if p.blank {
			return
		}
		if !p.indented && !special[p.text[p.nextNonspace]] {
			p.addChild(kindParagraph)
			p.advanceNextNonspace()
			p.addParaLine()
			return
		}
	case 2:
		switch t := &p.stack[1]; t.kind {
		case kindParagraph:
			p.findNextNonspace()
			if p.blank {
				p.depth = 1
				return
			}
			if p.indented || !special[p.text[p.nextNonspace]] {
				p.advanceNextNonspace()
				p.addParaLine()
				return
			}
		case kindFence:
			p.findNextNonspace()
			if p.indent > 3 || p.peek(p.nextNonspace) != t.fenceChar {
				return // content
			}
		}
	}

	// 1. Match the open blocks.
	matched := 0 // index of the deepest matched block
	for i := 1; i < p.depth; i++ {
		p.findNextNonspace()
		r := p.continueBlock(&p.stack[i])
		if r == 2 {
			return
		}
		if r == 1 {
			break
		}
		matched = i
	}
	p.lastMatched = matched
	p.allClosed = matched == p.depth-1
	container := matched

	// 2. Look for new block starts, unless the matched block takes raw lines.
	k := p.stack[container].kind
	matchedLeaf := k == kindFence || k == kindIndented || k == kindHTML
starts:
	for !matchedLeaf {
		p.findNextNonspace()
		if !p.indented && !special[p.peek(p.nextNonspace)] {
			p.advanceNextNonspace()
			break
		}
		switch p.blockStart(container) {
		case startNone:
			p.advanceNextNonspace()
			break starts
		case startContainer:
			container = p.depth - 1
		case startLeaf:
			matchedLeaf = true
		case startDone:
			return
		}
	}

	// 3. What remains is text: a lazy continuation line, leaf content or a
	// new paragraph.
	t := p.tip()
	if !p.allClosed && !p.blank && t.kind == kindParagraph {
		p.addParaLine()
		return
	}
	p.closeUnmatched()
	t = p.tip()
	switch t.kind {
	case kindParagraph:
		p.addParaLine()
	case kindHTML:
		if t.htmlType >= 1 && t.htmlType <= 5 && htmlBlockEnds(int(t.htmlType), p.text[p.offset:p.lnEnd]) {
			p.depth--
		}
	case kindFence, kindIndented:
		// content: nothing to record
	default:
		if p.offset < p.lnEnd && !p.blank {
			p.addChild(kindParagraph)
			p.advanceNextNonspace()
			p.addParaLine()
		}
	}
}

// Results of blockStart.
const (
	startNone      = iota // no block starts here
	startContainer        // a block quote or list item was opened: look again
	startLeaf             // a code or HTML block was opened: the line is its content
	startDone             // a heading or thematic break took the whole line
)

// blockStart tries every block start in the spec's order and reports what
// it opened (startNone … startDone). container is the stack index of the
// deepest matched or opened container (or the matched paragraph).
func (p *blockParser) blockStart(container int) int {
	c := p.peek(p.nextNonspace)
	rest := p.text[p.nextNonspace:p.lnEnd]
	ck := p.stack[container].kind
	if !p.indented {
		switch {
		case c == '>': // block quote
			p.advanceNextNonspace()
			p.advanceOffset(1, false)
			if isSpaceOrTab(p.peek(p.offset)) {
				p.advanceOffset(1, true)
			}
			p.closeUnmatched()
			p.addChild(kindQuote)
			return startContainer
		case c == '#': // ATX heading
			n := 0
			for n < len(rest) && rest[n] == '#' {
				n++
			}
			if n <= 6 && (n == len(rest) || isSpaceOrTab(rest[n])) {
				p.closeUnmatched()
				p.addLeafLine(n, atxTitle(rest[n:]), p.lineNo)
				return startDone
			}
		case c == '`' || c == '~': // fenced code
			n := 0
			for n < len(rest) && rest[n] == c {
				n++
			}
			if n >= 3 && (c == '~' || strings.IndexByte(rest[n:], '`') < 0) {
				p.closeUnmatched()
				indent := p.indent
				b := p.addChild(kindFence)
				b.fenceChar, b.fenceLen, b.fenceIndent = c, int32(n), int32(indent)
				p.advanceNextNonspace()
				p.advanceOffset(n, false)
				return startLeaf
			}
		case c == '<': // HTML block
			interruptsPara := ck == kindParagraph || (!p.allClosed && !p.blank && p.tip().kind == kindParagraph)
			if t := htmlBlockStart(rest, interruptsPara); t > 0 {
				p.closeUnmatched()
				p.addChild(kindHTML).htmlType = uint8(t)
				return startLeaf
			}
		}
		// setext underline
		if (c == '=' || c == '-') && ck == kindParagraph && isSetextUnderline(rest) {
			p.closeUnmatched()
			if p.setextHeading(c) {
				return startDone
			}
		}
		if (c == '*' || c == '_' || c == '-') && isThematicBreak(rest) {
			p.closeUnmatched()
			p.addLeafLine(0, "", p.lineNo)
			return startDone
		}
	}
	if p.listItemStart(ck == kindParagraph) {
		return startContainer
	}
	if p.indented && p.tip().kind != kindParagraph && !p.blank {
		p.advanceOffset(4, true)
		p.closeUnmatched()
		p.addChild(kindIndented)
		return startLeaf
	}
	return startNone
}

// setextHeading turns the open paragraph (the tip) into a setext heading,
// after removing the link reference definitions at its start (CommonMark
// §4.3, §4.7). It reports false when nothing but definitions was left.
func (p *blockParser) setextHeading(c byte) bool {
	var content string
	if len(p.para) == 1 {
		content = p.text[p.para[0].start:p.para[0].end]
	} else {
		var b strings.Builder
		for i, l := range p.para {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.text[l.start:l.end])
		}
		content = b.String()
	}
	consumed := 0
	if content != "" && content[0] == '[' {
		for {
			n := refDefLen(content)
			if n == 0 {
				break
			}
			consumed += strings.Count(content[:n], "\n")
			if n == len(content) && !strings.HasSuffix(content, "\n") {
				consumed++
			}
			content = content[n:]
		}
	}
	lines := p.para[consumed:]
	if len(lines) == 0 {
		return false
	}
	var title string
	if len(lines) == 1 {
		title = trimSpaceTab(p.text[lines[0].start:lines[0].end])
	} else {
		var b strings.Builder
		for i, l := range lines {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(trimSpaceTab(p.text[l.start:l.end]))
		}
		title = b.String()
	}
	level := 2
	if c == '=' {
		level = 1
	}
	line := lines[0].lineNo
	p.depth-- // the paragraph is now the heading
	p.addLeafLine(level, title, line)
	return true
}

// listItemStart opens a list item when the line starts with a list marker
// (CommonMark §5.2, §5.3); inPara says whether it would interrupt a
// paragraph.
func (p *blockParser) listItemStart(inPara bool) bool {
	if p.indent >= 4 {
		return false
	}
	rest := p.text[p.nextNonspace:p.lnEnd]
	if rest == "" {
		return false
	}
	n := 0
	switch c := rest[0]; {
	case c == '*' || c == '+' || c == '-':
		n = 1
	case c >= '0' && c <= '9':
		d := 0
		for d < len(rest) && d < 10 && rest[d] >= '0' && rest[d] <= '9' {
			d++
		}
		if d > 9 || d >= len(rest) || (rest[d] != '.' && rest[d] != ')') {
			return false
		}
		if inPara && strings.TrimLeft(rest[:d], "0") != "1" {
			return false
		}
		n = d + 1
	default:
		return false
	}
	if n < len(rest) && !isSpaceOrTab(rest[n]) {
		return false
	}
	if inPara && onlySpaceTab(rest[n:]) {
		return false
	}
	markerOffset := p.indent
	p.advanceNextNonspace()
	p.advanceOffset(n, true)
	startCol, startOff := p.column, p.offset
	for {
		p.advanceOffset(1, true)
		if !(p.column-startCol < 5 && isSpaceOrTab(p.peek(p.offset))) {
			break
		}
	}
	blankItem := p.offset >= p.lnEnd
	spaces := p.column - startCol
	padding := n + spaces
	if spaces >= 5 || spaces < 1 || blankItem {
		padding = n + 1
		p.column, p.offset = startCol, startOff
		p.partialTab = false
		if isSpaceOrTab(p.peek(p.offset)) {
			p.advanceOffset(1, true)
		}
	}
	p.closeUnmatched()
	p.addChild(kindItem).contentIndent = int32(markerOffset + padding)
	return true
}

// atxTitle returns an ATX heading's text from what follows the opening
// sequence: the optional closing sequence and surrounding spaces removed.
func atxTitle(s string) string {
	s = trimSpaceTab(s)
	// a closing sequence is a run of # preceded by a space or tab (or the
	// whole content)
	end := len(s)
	for end > 0 && s[end-1] == '#' {
		end--
	}
	if end == 0 {
		return ""
	}
	if end < len(s) && isSpaceOrTab(s[end-1]) {
		return trimRightSpaceTab(s[:end])
	}
	return s
}

// onlySpaceTab reports whether s holds nothing but spaces and tabs.
func onlySpaceTab(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

// trimSpaceTab removes leading and trailing spaces and tabs.
func trimSpaceTab(s string) string {
	i := 0
	for i < len(s) && isSpaceOrTab(s[i]) {
		i++
	}
	return trimRightSpaceTab(s[i:])
}

// trimRightSpaceTab removes trailing spaces and tabs.
func trimRightSpaceTab(s string) string {
	j := len(s)
	for j > 0 && isSpaceOrTab(s[j-1]) {
		j--
	}
	return s[:j]
}

func isSetextUnderline(s string) bool {
	c := s[0]
	i := 0
	for i < len(s) && s[i] == c {
		i++
	}
	return onlySpaceTab(s[i:])
}

func isThematicBreak(s string) bool {
	c := s[0]
	n := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case c:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// HTML block start conditions 1–7 and end conditions 1–5 (CommonMark §4.6).
var (
	htmlType7 = func() *regexp.Regexp {
		attr := `(?:[ \t]+[a-zA-Z_:][a-zA-Z0-9_.:-]*(?:[ \t]*=[ \t]*(?:[^"'=<>` + "`" + `\x00-\x20]+|'[^']*'|"[^"]*"))?)`
		open := `<[A-Za-z][A-Za-z0-9-]*` + attr + `*[ \t]*/?>`
		closing := `</[A-Za-z][A-Za-z0-9-]*[ \t]*>`
		return regexp.MustCompile(`^(?:` + open + `|` + closing + `)[ \t]*$`)
	}()
	htmlType1Tags = map[string]bool{"script": true, "pre": true, "style": true, "textarea": true}
	htmlBlockTags = map[string]bool{
		"address": true, "article": true, "aside": true, "base": true, "basefont": true,
		"blockquote": true, "body": true, "caption": true, "center": true, "col": true,
		"colgroup": true, "dd": true, "details": true, "dialog": true, "dir": true, "div": true,
		"dl": true, "dt": true, "fieldset": true, "figcaption": true, "figure": true,
		"footer": true, "form": true, "frame": true, "frameset": true, "h1": true, "h2": true,
		"h3": true, "h4": true, "h5": true, "h6": true, "head": true, "header": true, "hr": true,
		"html": true, "iframe": true, "legend": true, "li": true, "link": true, "main": true,
		"menu": true, "menuitem": true, "nav": true, "noframes": true, "ol": true,
		"optgroup": true, "option": true, "p": true, "param": true, "search": true,
		"section": true, "summary": true, "table": true, "tbody": true, "td": true,
		"tfoot": true, "th": true, "thead": true, "title": true, "tr": true, "track": true,
		"ul": true,
	}
)

func isASCIILetter(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

// htmlBlockStart returns the HTML block kind (1–7) that s (the line from
// its first non-space character, which is '<') starts, or 0. Kind 7 cannot
// interrupt a paragraph.
func htmlBlockStart(s string, interruptsPara bool) int {
	lower := strings.ToLower(s)
	for _, tag := range [...]string{"<script", "<pre", "<style", "<textarea"} {
		if strings.HasPrefix(lower, tag) {
			r := lower[len(tag):]
			if r == "" || r[0] == '>' || isSpaceOrTab(r[0]) {
				return 1
			}
		}
	}
	switch {
	case strings.HasPrefix(s, "<!--"):
		return 2
	case strings.HasPrefix(s, "<?"):
		return 3
	case strings.HasPrefix(s, "<![CDATA["):
		return 5
	case len(s) > 2 && s[1] == '!' && isASCIILetter(s[2]):
		return 4
	}
	i := 1
	if i < len(s) && s[i] == '/' {
		i++
	}
	j := i
	for j < len(s) && (isASCIILetter(s[j]) || (j > i && (s[j] >= '0' && s[j] <= '9'))) {
		j++
	}
	if j > i && htmlBlockTags[lower[i:j]] {
		r := s[j:]
		if r == "" || isSpaceOrTab(r[0]) || r[0] == '>' || strings.HasPrefix(r, "/>") {
			return 6
		}
	}
	if !interruptsPara && htmlType7.MatchString(s) && !htmlType1Tags[lower[i:j]] {
		return 7
	}
	return 0
}

// htmlBlockEnds reports whether s holds the end condition of HTML block
// kind t (1–5).
func htmlBlockEnds(t int, s string) bool {
	switch t {
	case 1:
		l := strings.ToLower(s)
		return strings.Contains(l, "</script>") || strings.Contains(l, "</pre>") ||
			strings.Contains(l, "</style>") || strings.Contains(l, "</textarea>")
	case 2:
		return strings.Contains(s, "-->")
	case 3:
		return strings.Contains(s, "?>")
	case 4:
		return strings.Contains(s, ">")
	case 5:
		return strings.Contains(s, "]]>")
	}
	return false
}

func isASCIIPunct(c byte) bool {
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~')
}

// skipSpaceNewline skips spaces and tabs and at most one line ending.
func skipSpaceNewline(s string, i int) int {
	nl := false
	for i < len(s) {
		switch s[i] {
		case ' ', '\t':
		case '\n':
			if nl {
				return i
			}
			nl = true
		default:
			return i
		}
		i++
	}
	return i
}

// lineRestBlank returns the index after the line ending if s[i:] holds only
// spaces and tabs up to the end of its line, or -1.
func lineRestBlank(s string, i int) int {
	for i < len(s) && isSpaceOrTab(s[i]) {
		i++
	}
	if i == len(s) {
		return i
	}
	if s[i] == '\n' {
		return i + 1
	}
	return -1
}

// refDefLen returns the length of the link reference definition at the
// start of s (paragraph content, lines joined by "\n"), including its line
// ending, or 0 when s does not start with one (CommonMark §4.7).
func refDefLen(s string) int {
	if s == "" || s[0] != '[' {
		return 0
	}
	i := 1
	for ; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
			continue
		}
		if c == '[' {
			return 0
		}
		if c == ']' {
			break
		}
	}
	if i >= len(s) {
		return 0
	}
	label := s[1:i]
	if len(label) > 999 || strings.Trim(label, " \t\n") == "" {
		return 0
	}
	i++
	if i >= len(s) || s[i] != ':' {
		return 0
	}
	i = skipSpaceNewline(s, i+1)
	if i < len(s) && s[i] == '<' {
		i++
		for i < len(s) && s[i] != '>' {
			if s[i] == '\n' || s[i] == '<' {
				return 0
			}
			if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
				i++
			}
			i++
		}
		if i >= len(s) {
			return 0
		}
		i++
	} else {
		start, depth := i, 0
	dest:
		for i < len(s) {
			c := s[i]
			switch {
			case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
				// The spec also excludes other ASCII control characters;
				// goldmark and commonmark.js accept them, and so do we.
				break dest
			case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
				i += 2
				continue
			case c == '(':
				depth++
				if depth > 32 {
					return 0
				}
			case c == ')':
				if depth == 0 {
					break dest
				}
				depth--
			}
			i++
		}
		if i == start || depth != 0 {
			return 0
		}
	}
	afterDest := i
	if j := skipSpaceNewline(s, i); j > afterDest && j < len(s) && (s[j] == '"' || s[j] == '\'' || s[j] == '(') {
		open, closing := s[j], s[j]
		if open == '(' {
			closing = ')'
		}
		k := j + 1
		for k < len(s) {
			c := s[k]
			if c == '\\' && k+1 < len(s) && isASCIIPunct(s[k+1]) {
				k += 2
				continue
			}
			if c == closing || (open == '(' && c == '(') {
				break
			}
			if c == '\n' && lineRestBlank(s, k+1) >= 0 {
				k = len(s) // a blank line ends the title attempt
				break
			}
			k++
		}
		if k < len(s) && s[k] == closing {
			if e := lineRestBlank(s, k+1); e >= 0 {
				return e
			}
		}
	}
	if e := lineRestBlank(s, afterDest); e >= 0 {
		return e
	}
	return 0
}

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
// inline content: it only records the headings and whether each one is a
// direct child of the document.

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

// block is one open block on the parser's stack.
type block struct {
	kind blockKind
	// list item: the marker's column and the content's padding after it;
	// hasChild is false while the item is still empty.
	markerOffset, padding int
	hasChild              bool
	// fenced code
	fenceChar             byte
	fenceLen, fenceIndent int
	// HTML block: 1–7, CommonMark §4.6
	htmlType int
	// paragraph: its lines (leading whitespace removed) and their numbers
	lines   []string
	lineNos []int
}

// heading is one heading found by the block parser.
type heading struct {
	level    int
	title    string
	line     int  // 0-based first line
	topLevel bool // a direct child of the document
}

// blockParser holds the per-line state of the CommonMark parsing strategy.
type blockParser struct {
	stack    []*block // stack[0] is the document; only the last may be a leaf
	headings []heading
	// leaf is the one open leaf block (at most one is open at a time),
	// reused with its line buffers; spare[i] is the container block last
	// used at stack depth i, reused once the stack is shallower.
	leaf  block
	spare []*block

	ln                 string // the current line without its line ending
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

func (p *blockParser) tip() *block { return p.stack[len(p.stack)-1] }

// newLeaf resets and returns the parser's single leaf block.
func (p *blockParser) newLeaf(kind blockKind) *block {
	p.leaf = block{kind: kind, lines: p.leaf.lines[:0], lineNos: p.leaf.lineNos[:0]}
	return &p.leaf
}

// addContainer closes an open leaf and opens the block quote or list item b
// under the tip.
func (p *blockParser) addContainer(b block) {
	p.popLeaf()
	depth := len(p.stack)
	for len(p.spare) <= depth {
		p.spare = append(p.spare, nil)
	}
	c := p.spare[depth]
	if c == nil {
		c = new(block)
		p.spare[depth] = c
	}
	*c = b
	p.addChild(c)
}

func (p *blockParser) findNextNonspace() {
	i, cols := p.offset, p.column
	for i < len(p.ln) {
		c := p.ln[i]
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
	p.blank = i >= len(p.ln)
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
	for count > 0 && p.offset < len(p.ln) {
		if p.ln[p.offset] == '\t' {
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
	if i < len(p.ln) {
		return p.ln[i]
	}
	return 0
}

func isSpaceOrTab(c byte) bool { return c == ' ' || c == '\t' }

// closeUnmatched closes every block below the last matched container.
func (p *blockParser) closeUnmatched() {
	if !p.allClosed {
		p.stack = p.stack[:p.lastMatched+1]
		p.allClosed = true
	}
}

// addChild closes what must close and opens a block under the deepest
// container that can hold it (a leaf tip is closed first).
func (p *blockParser) addChild(b *block) {
	for {
		t := p.tip()
		if t.kind == kindDocument || t.kind == kindQuote || t.kind == kindItem {
			break
		}
		p.stack = p.stack[:len(p.stack)-1]
	}
	p.tip().hasChild = true
	p.stack = append(p.stack, b)
}

// containerDepth returns how many block quotes and list items are open: 0
// means a block added now is a direct child of the document.
func (p *blockParser) containerDepth() int {
	n := 0
	for _, b := range p.stack {
		if b.kind == kindQuote || b.kind == kindItem {
			n++
		}
	}
	return n
}

func (p *blockParser) addHeading(level int, title string, line int) {
	// A heading is a leaf: it closes a leaf tip and is itself closed at once.
	for {
		t := p.tip()
		if t.kind == kindDocument || t.kind == kindQuote || t.kind == kindItem {
			break
		}
		p.stack = p.stack[:len(p.stack)-1]
	}
	p.tip().hasChild = true
	p.headings = append(p.headings, heading{level: level, title: title, line: line, topLevel: p.containerDepth() == 0})
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
		if p.indent >= b.markerOffset+b.padding {
			p.advanceOffset(b.markerOffset+b.padding, true)
			return 0
		}
		return 1
	case kindFence:
		if p.indent <= 3 && p.peek(p.nextNonspace) == b.fenceChar {
			rest := p.ln[p.nextNonspace:]
			n := 0
			for n < len(rest) && rest[n] == b.fenceChar {
				n++
			}
			if n >= b.fenceLen && strings.Trim(rest[n:], " \t") == "" {
				p.stack = p.stack[:len(p.stack)-1]
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

// maybeSpecial reports whether c can begin a block start other than
// indented code.
func maybeSpecial(c byte) bool {
	switch c {
	case '#', '`', '~', '*', '+', '_', '=', '<', '>', '-':
		return true
	}
	return c >= '0' && c <= '9'
}

// incorporate adds one line (without its line ending) to the document.
func (p *blockParser) incorporate(ln string, lineNo int) {
	p.ln = ln
	p.lineNo = lineNo
	p.offset, p.column, p.partialTab = 0, 0, false
	p.blank = false

	// 1. Match the open blocks.
	matched := 0 // index of the deepest matched block
	for i := 1; i < len(p.stack); i++ {
		p.findNextNonspace()
		r := p.continueBlock(p.stack[i])
		if r == 2 {
			return
		}
		if r == 1 {
			break
		}
		matched = i
	}
	p.lastMatched = matched
	p.allClosed = matched == len(p.stack)-1
	container := p.stack[matched]

	// 2. Look for new block starts, unless the matched block takes raw lines.
	matchedLeaf := container.kind == kindFence || container.kind == kindIndented || container.kind == kindHTML
starts:
	for !matchedLeaf {
		p.findNextNonspace()
		if !p.indented && !maybeSpecial(p.peek(p.nextNonspace)) {
			p.advanceNextNonspace()
			break
		}
		switch p.blockStart(container) {
		case startNone:
			p.advanceNextNonspace()
			break starts
		case startContainer:
			container = p.tip()
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
		t.lines = append(t.lines, ln[p.offset:])
		t.lineNos = append(t.lineNos, lineNo)
		return
	}
	p.closeUnmatched()
	t = p.tip()
	switch t.kind {
	case kindParagraph:
		t.lines = append(t.lines, ln[p.offset:])
		t.lineNos = append(t.lineNos, lineNo)
	case kindHTML:
		if t.htmlType >= 1 && t.htmlType <= 5 && htmlBlockEnds(t.htmlType, ln[p.offset:]) {
			p.stack = p.stack[:len(p.stack)-1]
		}
	case kindFence, kindIndented:
		// content: nothing to record
	default:
		if p.offset < len(ln) && !p.blank {
			p.popLeaf()
			b := p.newLeaf(kindParagraph)
			p.addChild(b)
			p.advanceNextNonspace()
			b.lines = append(b.lines, ln[p.offset:])
			b.lineNos = append(b.lineNos, lineNo)
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
// it opened (startNone … startDone).
func (p *blockParser) blockStart(container *block) int {
	c := p.peek(p.nextNonspace)
	rest := p.ln[p.nextNonspace:]
	if !p.indented {
		switch {
		case c == '>': // block quote
			p.advanceNextNonspace()
			p.advanceOffset(1, false)
			if isSpaceOrTab(p.peek(p.offset)) {
				p.advanceOffset(1, true)
			}
			p.closeUnmatched()
			p.addContainer(block{kind: kindQuote})
			return startContainer
		case c == '#': // ATX heading
			n := 0
			for n < len(rest) && rest[n] == '#' {
				n++
			}
			if n <= 6 && (n == len(rest) || isSpaceOrTab(rest[n])) {
				p.closeUnmatched()
				p.addHeading(n, atxTitle(rest[n:]), p.lineNo)
				return startDone
			}
		case c == '`' || c == '~': // fenced code
			n := 0
			for n < len(rest) && rest[n] == c {
				n++
			}
			if n >= 3 && (c == '~' || !strings.ContainsRune(rest[n:], '`')) {
				p.closeUnmatched()
				indent := p.indent
				p.popLeaf()
				b := p.newLeaf(kindFence)
				b.fenceChar, b.fenceLen, b.fenceIndent = c, n, indent
				p.addChild(b)
				p.advanceNextNonspace()
				p.advanceOffset(n, false)
				return startLeaf
			}
		case c == '<': // HTML block
			interruptsPara := container.kind == kindParagraph || (!p.allClosed && !p.blank && p.tip().kind == kindParagraph)
			if t := htmlBlockStart(rest, interruptsPara); t > 0 {
				p.closeUnmatched()
				p.popLeaf()
				b := p.newLeaf(kindHTML)
				b.htmlType = t
				p.addChild(b)
				return startLeaf
			}
		}
		// setext underline
		if (c == '=' || c == '-') && container.kind == kindParagraph && isSetextUnderline(rest) {
			p.closeUnmatched()
			if p.setextHeading(container, c) {
				return startDone
			}
		}
		if (c == '*' || c == '_' || c == '-') && isThematicBreak(rest) {
			p.closeUnmatched()
			p.addHeadingless()
			return startDone
		}
	}
	if p.listItemStart(container) {
		return startContainer
	}
	if p.indented && p.tip().kind != kindParagraph && !p.blank {
		p.advanceOffset(4, true)
		p.closeUnmatched()
		p.popLeaf()
		p.addChild(p.newLeaf(kindIndented))
		return startLeaf
	}
	return startNone
}

// popLeaf closes the open leaf block, if any, before the leaf is reused.
func (p *blockParser) popLeaf() {
	if t := p.tip(); t == &p.leaf {
		p.stack = p.stack[:len(p.stack)-1]
	}
}

// addHeadingless adds a leaf that takes no lines (a thematic break).
func (p *blockParser) addHeadingless() {
	for {
		t := p.tip()
		if t.kind == kindDocument || t.kind == kindQuote || t.kind == kindItem {
			break
		}
		p.stack = p.stack[:len(p.stack)-1]
	}
	p.tip().hasChild = true
}

// setextHeading turns the paragraph para into a setext heading, after
// removing the link reference definitions at its start (CommonMark §4.3,
// §4.7). It reports false when nothing but definitions was left.
func (p *blockParser) setextHeading(para *block, c byte) bool {
	content := strings.Join(para.lines, "\n")
	consumed := 0
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
	if consumed > 0 {
		para.lines = para.lines[consumed:]
		para.lineNos = para.lineNos[consumed:]
	}
	if len(para.lines) == 0 {
		return false
	}
	parts := make([]string, len(para.lines))
	for i, l := range para.lines {
		parts[i] = strings.Trim(l, " \t")
	}
	level := 2
	if c == '=' {
		level = 1
	}
	line := para.lineNos[0]
	p.stack = p.stack[:len(p.stack)-1] // the paragraph is now the heading
	p.addHeading(level, strings.Join(parts, "\n"), line)
	return true
}

// listItemStart opens a list item when the line starts with a list marker
// (CommonMark §5.2, §5.3).
func (p *blockParser) listItemStart(container *block) bool {
	if p.indent >= 4 {
		return false
	}
	rest := p.ln[p.nextNonspace:]
	if rest == "" {
		return false
	}
	inPara := container.kind == kindParagraph
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
	if inPara && strings.Trim(rest[n:], " \t") == "" {
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
	blankItem := p.offset >= len(p.ln)
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
	p.addContainer(block{kind: kindItem, markerOffset: markerOffset, padding: padding})
	return true
}

// atxTitle returns an ATX heading's text from what follows the opening
// sequence: the optional closing sequence and surrounding spaces removed.
func atxTitle(s string) string {
	s = strings.Trim(s, " \t")
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
		return strings.TrimRight(s[:end], " \t")
	}
	return s
}

func isSetextUnderline(s string) bool {
	c := s[0]
	i := 0
	for i < len(s) && s[i] == c {
		i++
	}
	return strings.Trim(s[i:], " \t") == ""
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

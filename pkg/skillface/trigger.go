package skillface

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// soloScripts are the scripts written without spaces between words: every
// character of them is a word on its own for trigger matching (see the
// package documentation, "Trigger rule").
var soloScripts = []*unicode.RangeTable{
	unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul,
	unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar,
}

// isSolo reports whether r is a character of a script without word spaces.
func isSolo(r rune) bool {
	if r < 0x0E00 { // below Thai: ASCII, Latin, Greek, Cyrillic, Arabic, Indic …
		return false
	}
	return unicode.In(r, soloScripts...)
}

// isWordRune reports whether r is a word character of a spaced script.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
	}
	return (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)) && !isSolo(r)
}

// normalizeText lower-cases s rune by rune and turns each run of white space
// into one space, trimming both ends. Triggers and messages go through the
// same function so that their byte offsets line up.
func normalizeText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// trigger is one normalised trigger of one skill.
type trigger struct {
	text     string // normalised
	skill    int    // index in the snapshot's skills
	endCheck bool   // the last rune is a spaced-script word rune: needs a boundary after it
}

// firstToken returns the first token of normalised text t: one solo
// character, or a run of word runes; "" when t starts with anything else.
func firstToken(t string) string {
	r, n := utf8.DecodeRuneInString(t)
	if isSolo(r) {
		return t[:n]
	}
	if !isWordRune(r) {
		return ""
	}
	i := n
	for i < len(t) {
		r, n := utf8.DecodeRuneInString(t[i:])
		if !isWordRune(r) {
			break
		}
		i += n
	}
	return t[:i]
}

// triggerIndex finds triggers in a message in time linear in the message:
// triggers are indexed by their first token, and each token of the message
// looks up its candidates.
type triggerIndex struct {
	byToken map[string][]trigger
	loose   []trigger // triggers starting with punctuation: scanned with strings.Index
}

// compiledTrigger is a trigger prepared once per skill definition.
type compiledTrigger struct {
	text     string // normalised
	token    string // first token; "" when the trigger starts with punctuation
	endCheck bool
}

// compileTrigger normalises a trigger; ok is false for a blank one.
func compileTrigger(text string) (compiledTrigger, bool) {
	t := normalizeText(text)
	if t == "" {
		return compiledTrigger{}, false
	}
	last, _ := utf8.DecodeLastRuneInString(t)
	return compiledTrigger{text: t, token: firstToken(t), endCheck: isWordRune(last)}, true
}

func (x *triggerIndex) add(text string, skill int) {
	if ct, ok := compileTrigger(text); ok {
		x.addCompiled(ct, skill)
	}
}

func (x *triggerIndex) addCompiled(ct compiledTrigger, skill int) {
	tr := trigger{text: ct.text, skill: skill, endCheck: ct.endCheck}
	if ct.token == "" {
		x.loose = append(x.loose, tr)
		return
	}
	if x.byToken == nil {
		x.byToken = make(map[string][]trigger)
	}
	x.byToken[ct.token] = append(x.byToken[ct.token], tr)
}

// boundaryAfter reports whether position i of s is a word boundary for a
// match that ends with a spaced-script word rune.
func boundaryAfter(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !isWordRune(r)
}

// match calls hit(skill) for every trigger found in the raw message text;
// a skill may be reported more than once.
func (x *triggerIndex) match(message string, hit func(skill int)) {
	if len(x.byToken) == 0 && len(x.loose) == 0 {
		return
	}
	m := normalizeText(message)
	check := func(tr trigger, at int) {
		if strings.HasPrefix(m[at:], tr.text) && (!tr.endCheck || boundaryAfter(m, at+len(tr.text))) {
			hit(tr.skill)
		}
	}
	prevWord := false // the previous rune is a spaced-script word rune
	for i := 0; i < len(m); {
		r, n := utf8.DecodeRuneInString(m[i:])
		switch {
		case isSolo(r):
			for _, tr := range x.byToken[m[i:i+n]] {
				check(tr, i)
			}
			prevWord = false
			i += n
		case isWordRune(r) && !prevWord:
			j := i + n
			for j < len(m) {
				r2, n2 := utf8.DecodeRuneInString(m[j:])
				if !isWordRune(r2) {
					break
				}
				j += n2
			}
			for _, tr := range x.byToken[m[i:j]] {
				check(tr, i)
			}
			prevWord = true
			i = j
		default:
			prevWord = isWordRune(r)
			i += n
		}
	}
	for _, tr := range x.loose {
		for from := 0; from < len(m); {
			k := strings.Index(m[from:], tr.text)
			if k < 0 {
				break
			}
			if !tr.endCheck || boundaryAfter(m, from+k+len(tr.text)) {
				hit(tr.skill)
				break
			}
			from += k + 1
		}
	}
}

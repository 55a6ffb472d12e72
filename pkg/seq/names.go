package seq

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxNameLength is the longest sequence, group or agent name, in
// characters (Unicode code points, after NFC normalisation): the name rule
// of docs/sequences.md ("Names"). In UTF-8 such a name takes at most
// MaxNameBytes bytes, and encoded as a NATS subject token or KV key
// (events.TokenFor, events.KeyFor) at most 343 bytes. pkg/events states
// the same rule as events.MaxNameChars and events.MaxNameLength (bytes,
// derived from it); this package stays free of NATS, so a test pins the
// two equal.
const MaxNameLength = 64

// MaxNameBytes is the most bytes a name of MaxNameLength characters takes
// in UTF-8 (utf8.UTFMax bytes a character): 256, events.MaxNameLength.
const MaxNameBytes = utf8.UTFMax * MaxNameLength

// ErrName: a sequence, group or agent name breaks the name rule of
// CheckName. A name problem found while parsing a sequence wraps
// ErrInvalidValue instead, with the same explanation.
var ErrName = errors.New("seq: invalid name")

const nameRule = "1 to 64 letters, digits, `-` or `_`, starting with a letter, in one script for Latin, Greek and Cyrillic letters (for example fetch-issues or 开机自检)"

// NormalizeName returns name in Unicode NFC (composed) form, the form in
// which names are stored and compared: "é" written as e + U+0301 becomes
// the one character U+00E9. Parse normalises sequence and group names;
// a caller looking a name up (a CLI argument, a request) normalises it the
// same way. ASCII names are returned unchanged.
func NormalizeName(name string) string {
	return norm.NFC.String(name)
}

// CheckName reports whether name, taken as is (normalise it first with
// NormalizeName), is a valid sequence, group or agent name
// (docs/sequences.md, "Names"):
//
//   - 1 to MaxNameLength characters, in NFC;
//   - letters and digits of any script (Unicode categories L and Nd), with
//     the combining marks that some scripts need after a letter (Devanagari
//     vowel signs, for example), plus `-` and `_`; the first character a
//     letter: fetch-issues, 开机自检, проверка_диска, जाँच;
//   - no whitespace, `.`, `*`, `>`, control or invisible characters, other
//     punctuation or symbols;
//   - no compatibility forms that look like another character (fullwidth
//     ｆｅｔｃｈ, ligatures, superscripts): write the plain form;
//   - not mixing Latin, Greek and Cyrillic letters, which look alike (a
//     Cyrillic "а" in "pаyments" would make it another name that reads the
//     same).
//
// The error is an *Error wrapping ErrName whose message names the
// offending character by position and code point: `the name "ab c" is not
// allowed: character 3 is a space (U+0020); use ...`.
func CheckName(name string) error {
	if msg := checkName(name); msg != "" {
		return &Error{Kind: ErrName, Message: fmt.Sprintf("the name %q is not allowed: %s", clip(name, 80), msg)}
	}
	return nil
}

// checkName returns "" for a valid name, else what is wrong and the rule.
func checkName(name string) string {
	if name == "" {
		return "it is empty; use " + nameRule
	}
	if !utf8.ValidString(name) {
		return "it is not valid UTF-8; use " + nameRule
	}
	if n := utf8.RuneCountInString(name); n > MaxNameLength {
		return fmt.Sprintf("it is %d characters long; the name limit is %d characters, at most %d bytes in UTF-8; use %s", n, MaxNameLength, MaxNameBytes, nameRule)
	}
	if !norm.NFC.IsNormalString(name) {
		return fmt.Sprintf("it is not in Unicode NFC form (write it as %q, composed)", norm.NFC.String(name))
	}
	confusable := ""   // the first of Latin, Greek, Cyrillic seen
	confusableAt := 0  // where
	var prev rune = -1 // the previous character, -1 at the start
	for i, r := range []rune(name) {
		pos := i + 1
		switch {
		case r == '-' || r == '_':
		case unicode.IsLetter(r):
		case unicode.Is(unicode.Nd, r):
		case unicode.In(r, unicode.Mn, unicode.Mc) && prev >= 0 && (unicode.IsLetter(prev) || unicode.In(prev, unicode.Mn, unicode.Mc)):
			// a combining mark after a letter (after NFC, what remains
			// belongs to scripts that need it)
		default:
			return fmt.Sprintf("character %d is %s; use %s", pos, describeNameRune(r), nameRule)
		}
		if pos == 1 && !unicode.IsLetter(r) {
			return fmt.Sprintf("character 1 is %q (U+%04X), and a name starts with a letter; use %s", r, r, nameRule)
		}
		if k := string(r); norm.NFKC.String(k) != k {
			return fmt.Sprintf("character %d %q (U+%04X) is a compatibility form of %q; write %q instead", pos, r, r, norm.NFKC.String(k), norm.NFKC.String(k))
		}
		if s := confusableScript(r); s != "" {
			switch {
			case confusable == "":
				confusable, confusableAt = s, pos
			case s != confusable:
				return fmt.Sprintf("it mixes %s and %s letters: character %d %q (U+%04X) is %s, character %d is %s; letters that look alike across these scripts would make two different names read the same, so write the name in one script", confusable, s, pos, r, r, s, confusableAt, confusable)
			}
		}
		prev = r
	}
	return ""
}

// confusableScript names the script of r when it is one of the three whose
// letters are easily confused (Latin, Greek, Cyrillic), else "".
func confusableScript(r rune) string {
	switch {
	case unicode.Is(unicode.Latin, r):
		return "Latin"
	case unicode.Is(unicode.Greek, r):
		return "Greek"
	case unicode.Is(unicode.Cyrillic, r):
		return "Cyrillic"
	}
	return ""
}

// describeNameRune names a character that a name may not hold.
func describeNameRune(r rune) string {
	switch r {
	case ' ':
		return "a space (U+0020)"
	case '.':
		return "a dot (U+002E), which separates the parts of NATS subjects"
	case '*', '>':
		return fmt.Sprintf("%q (U+%04X), a NATS subject wildcard", r, r)
	}
	switch {
	case unicode.IsSpace(r):
		return fmt.Sprintf("a space character (U+%04X)", r)
	case unicode.IsControl(r):
		return fmt.Sprintf("a control character (U+%04X)", r)
	case unicode.Is(unicode.Cf, r) || !unicode.IsPrint(r):
		return fmt.Sprintf("an invisible character (U+%04X)", r)
	case unicode.In(r, unicode.Mn, unicode.Mc, unicode.Me):
		return fmt.Sprintf("a combining mark (U+%04X) that follows no letter", r)
	}
	return fmt.Sprintf("%q (U+%04X), which is not a letter, digit, `-` or `_`", r, r)
}

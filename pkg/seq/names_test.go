package seq

import (
	"errors"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	for _, ok := range []string{
		"fetch-issues", "a", "A_1", "开机自检", "检查磁盘", "检查网络", "机器人", "проверка_диска", "jāņis-bērziņš", "café",
		"जाँच", "ตรวจสอบ", "日本語テスト", "한국어-점검", "فحص", "בדיקה", "Ωμέγα", "步骤1", "검사_2", "ελληνικά-42",
		strings.Repeat("检", MaxNameLength), strings.Repeat("a", MaxNameLength), "x-开机", "Straße",
	} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v; want valid", ok, err)
		}
	}
	for _, tt := range []struct{ name, want string }{
		{"", "it is empty"},
		{"a b", "character 2 is a space (U+0020)"},
		{"a.b", "character 2 is a dot (U+002E)"},
		{"a*", "character 2 is '*' (U+002A), a NATS subject wildcard"},
		{"a>b", "'>' (U+003E), a NATS subject wildcard"},
		{"a\tb", "a space character (U+0009)"},
		{"a\x00b", "a control character (U+0000)"},
		{"a\u200bb", "an invisible character (U+200B)"},
		{"a\u200db", "an invisible character (U+200D)"},
		{"a\u00a0b", "a space character (U+00A0)"},
		{"a/b", "'/' (U+002F), which is not a letter, digit, `-` or `_`"},
		{"a:b", "(U+003A)"},
		{"🚀launch", "character 1 is '🚀' (U+1F680)"},
		{"1abc", "character 1 is '1' (U+0031), and a name starts with a letter"},
		{"-abc", "and a name starts with a letter"},
		{"_abc", "and a name starts with a letter"},
		{"\u0301abc", "a combining mark (U+0301) that follows no letter"},
		{"cafe\u0301", "not in Unicode NFC form (write it as \"café\""},
		{"pаyments", "it mixes Latin and Cyrillic letters: character 2 'а' (U+0430) is Cyrillic, character 1 is Latin"},
		{"Ωmega", "it mixes Greek and Latin letters"},
		{"сервер-x", "mixes Cyrillic and Latin"},
		{"ｆｅｔｃｈ", "character 1 'ｆ' (U+FF46) is a compatibility form of \"f\""},
		{"ﬁle", "compatibility form of \"fi\""},
		{"x²", "'²' (U+00B2)"},
		{"Ⅻ", "character 1 is 'Ⅻ' (U+216B)"},
		{"ｶﾀｶﾅ", "compatibility form of \"カ\""},
		{strings.Repeat("a", MaxNameLength+1), "65 characters long; the name limit is 64 characters, at most 256 bytes in UTF-8"},
		{strings.Repeat("检", MaxNameLength+1), "65 characters long"},
		{"a\xffb", "not valid UTF-8"},
	} {
		err := CheckName(tt.name)
		if !errors.Is(err, ErrName) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckName(%q) = %v; want ErrName containing %q", tt.name, err, tt.want)
		}
	}
}

// A sequence and its groups may be named in any script; names are stored
// in NFC and found in any normalisation form.
func TestUnicodeSequenceNames(t *testing.T) {
	src := "name: 开机自检\ngroups:\n  - name: 检查磁盘\n    tools: [{tool: fs.stat}]\n  - name: 检查网络\n    tools: [{tool: fs.list}]\n"
	s, err := ParseYAML([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "开机自检" || s.Groups[1].Name != "检查网络" {
		t.Errorf("names %q %q", s.Name, s.Groups[1].Name)
	}
	roundTrip(t, s)
	if b := mustEncode(t, s); !strings.Contains(string(b), `"name":"开机自检"`) {
		t.Errorf("canonical form %s does not keep the name as written", b)
	}

	// Decomposed in the file (as macOS file names are): stored composed.
	s, err = ParseYAML([]byte("name: cafe\u0301\ngroups:\n  - name: re\u0301sume\u0301\n    tools: [{tool: t}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "café" || s.Groups[0].Name != "résumé" {
		t.Errorf("names %q %q; want them in NFC", s.Name, s.Groups[0].Name)
	}
	if g, _ := s.Group("re\u0301sume\u0301"); g == nil {
		t.Errorf("Group with the decomposed name found nothing")
	}

	// Refused names say which character, in the sequence's own error form.
	_, err = ParseJSON([]byte(`{"name":"开机 自检","groups":[{"name":"pаyments","tools":"{\"tool\":\"t\"};"}]}`))
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), `name: the sequence name "开机 自检" is not allowed: character 3 is a space (U+0020)`) ||
		!strings.Contains(err.Error(), `group 1 "pаyments": name: the group name "pаyments" is not allowed: it mixes Latin and Cyrillic letters`) {
		t.Errorf("ParseJSON: %v", err)
	}
}

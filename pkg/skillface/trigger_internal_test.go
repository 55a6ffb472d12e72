package skillface

import (
	"slices"
	"testing"
)

func TestTriggerMatch(t *testing.T) {
	tests := []struct {
		name    string
		trigger string
		message string
		want    bool
	}{
		{"exact word", "deploy", "deploy", true},
		{"case-insensitive", "Deploy", "please DEPLOY now", true},
		{"punctuation after", "deploy", "can you deploy?", true},
		{"punctuation before", "deploy", "(deploy)", true},
		{"prefix of a longer word", "deploy", "redeploy the app", false},
		{"start of a longer word", "deploy", "the deployment failed", false},
		{"digits are word characters", "v2", "upgrade to v2.", true},
		{"digits inside", "v2", "v20 is out", false},
		{"underscore is a word character", "foo", "foo_bar", false},
		{"multi-word phrase", "pull request", "open a pull request please", true},
		{"multi-word phrase collapses spaces", "pull request", "open a PULL \n\t request", true},
		{"multi-word phrase needs order", "pull request", "request a pull", false},
		{"hyphenated trigger", "code-review", "do a code-review", true},
		{"hyphen is a boundary in the message", "review", "do a code-review", true},
		{"trigger ending in punctuation", "c++", "I write C++ daily", true},
		{"trigger ending in punctuation, no boundary needed", "c++", "c++17", true},
		{"trigger starting with punctuation", ".net", "port it to .NET core", true},
		{"trigger starting with punctuation, word after", ".net", "a .network", false},
		{"chinese inside a sentence", "部署", "请帮我部署服务", true},
		{"chinese absent", "部署", "请帮我测试服务", false},
		{"latin word between han characters", "git", "用git提交代码", true},
		{"latin word glued to latin is no word", "git", "用github提交", false},
		{"japanese katakana", "デプロイ", "本番にデプロイしてください", true},
		{"japanese mixed", "レビュー", "コードレビューをお願いします", true},
		{"korean with particle", "배포", "서버를 배포해 주세요", true},
		{"thai", "สวัสดี", "ผมพูดว่าสวัสดีครับ", true},
		{"greek case-folding", "ΑΘΗΝΑ", "ταξίδι στην αθηνα", true},
		{"cyrillic boundary", "деплой", "сделай деплой.", true},
		{"cyrillic no boundary", "деплой", "передеплой", false},
		{"accented letters are word characters", "cafe", "café", false},
		{"empty message", "deploy", "", false},
		{"blank trigger never matches", "   ", "anything", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var x triggerIndex
			x.add(tc.trigger, 7)
			var got []int
			x.match(tc.message, func(i int) { got = append(got, i) })
			if ok := slices.Contains(got, 7); ok != tc.want {
				t.Errorf("trigger %q in %q = %v; want %v", tc.trigger, tc.message, ok, tc.want)
			}
		})
	}
}

func TestNormalizeText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"  Hello\t\nWORLD  ", "hello world"},
		{"部署  服务", "部署 服务"},
		{"", ""},
	} {
		if got := normalizeText(tc.in); got != tc.want {
			t.Errorf("normalizeText(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzTriggerMatch(f *testing.F) {
	f.Add("deploy", "please deploy now")
	f.Add("部署", "请帮我部署服务")
	f.Add("c++", "I like C++")
	f.Add(".net", "a .NET app")
	f.Add("pull request", "PULL\trequest")
	f.Fuzz(func(t *testing.T, trig, msg string) {
		var x triggerIndex
		x.add(trig, 0)
		found := false
		x.match(msg, func(int) { found = true })
		// Property: a trigger that is surrounded by spaces in the message
		// always matches (when it has any visible content).
		if normalizeText(trig) == "" {
			if found {
				t.Fatalf("blank trigger %q matched %q", trig, msg)
			}
			return
		}
		var y triggerIndex
		y.add(trig, 0)
		hit := false
		y.match(msg+" "+trig+" ", func(int) { hit = true })
		if !hit {
			t.Fatalf("trigger %q not found in %q", trig, msg+" "+trig+" ")
		}
	})
}

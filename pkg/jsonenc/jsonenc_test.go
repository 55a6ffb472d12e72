package jsonenc

import (
	"encoding/json"
	"testing"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b\c`, "<a href='x'>&amp;</a>", "\b\f\n\r\t\x00\x1f\x7f", "日本語 é", "\u2028\u2029", "bad \xff\xfe utf-8", "\xe2\x80"} {
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s; json.Marshal writes %s", s, got[1:], want)
		}
	}
}

// FuzzAppendString: byte for byte what json.Marshal writes, for any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\x00\xff\u2028", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s; json.Marshal writes %s", s, got, want)
		}
	})
}

package events

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// TestIDPart: ASCII names stay as they are, others become '_' and the
// base64url of their UTF-8 (TokenFor's encoding), and NameForIDPart
// reverses both; what IDPart never makes is refused.
func TestIDPart(t *testing.T) {
	for name, want := range map[string]string{
		"bot-1":     "bot-1",
		"Agent_7":   "Agent_7",
		"机器人":       "_5py65Zmo5Lq6",
		"开机自检":      "_5byA5py66Ieq5qOA",
		"1st":       "_MXN0",
		"_x":        "_X3g",
		"a.b":       "_YS5i",
		"":          "_",
		"bot 1":     "_Ym90IDE",
		"caf\u00e9": "_Y2Fmw6k",
	} {
		got := IDPart(name)
		if got != want {
			t.Errorf("IDPart(%q) = %q; want %q", name, got, want)
		}
		if back, err := NameForIDPart(got); err != nil || back != name {
			t.Errorf("NameForIDPart(%q) = %q, %v; want %q", got, back, err, name)
		}
		if enc := "_" + base64.RawURLEncoding.EncodeToString([]byte(name)); got != name && got != enc {
			t.Errorf("IDPart(%q) = %q is neither the name nor TokenFor's encoding %q", name, got, enc)
		}
	}
	for _, bad := range []string{"", "_YWJj" /* "abc" is written plainly */, "_5py65Zmo5Lq", "1st", "a.b", "_=="} {
		if n, err := NameForIDPart(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("NameForIDPart(%q) = %q, %v; want ErrBadToken", bad, n, err)
		}
	}
}

// FuzzIDPart: every name gives a part in run id bytes that decodes back to
// it; no input makes NameForIDPart panic.
func FuzzIDPart(f *testing.F) {
	for _, s := range []string{"bot-1", "机器人", "", "_x", "\xff", strings.Repeat("\U00020000", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		_, _ = NameForIDPart(name)
		p := IDPart(name)
		for i := 0; i < len(p); i++ {
			if !idByte(p[i]) {
				t.Fatalf("IDPart(%q) = %q has byte %q", name, p, p[i])
			}
		}
		if back, err := NameForIDPart(p); err != nil || back != name {
			t.Fatalf("NameForIDPart(IDPart(%q)) = %q, %v", name, back, err)
		}
	})
}

package version

import "testing"

func TestResolve(t *testing.T) {
	tests := []struct {
		name, linked, module, want string
	}{
		{"release via ldflags", "v1.2.0", "v0.0.0-20260101000000-abcdef123456", "1.2.0"},
		{"ldflags without v", "1.2.0-rc.1", "", "1.2.0-rc.1"},
		{"go install at a tag", "", "v1.3.4", "1.3.4"},
		{"checkout pseudo-version", "", "v0.0.0-20260102150405-abcdef123456+dirty", "0.0.0-20260102150405-abcdef123456+dirty"},
		{"devel build", "", "(devel)", DevVersion},
		{"nothing", "", "", DevVersion},
		{"ldflags not semver", "nightly 42", "v1.0.0", DevVersion + "+nightly-42"},
		{"ldflags only symbols", "+++", "", DevVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.linked, tt.module)
			if got != tt.want {
				t.Errorf("resolve(%q, %q) = %q; want %q", tt.linked, tt.module, got, tt.want)
			}
			if !semver.MatchString(got) {
				t.Errorf("resolve(%q, %q) = %q is not SemVer", tt.linked, tt.module, got)
			}
		})
	}
}

func TestStringIsSemver(t *testing.T) {
	if v := String(); !semver.MatchString(v) {
		t.Errorf("String() = %q; want SemVer", v)
	}
}

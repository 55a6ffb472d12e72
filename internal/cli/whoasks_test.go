package cli

import (
	"os/user"
	"testing"
)

// TestWhoAsks: a cancel is recorded with a name even when $USER is unset
// (containers, CI): the system user, else the credentials' role or host.
func TestWhoAsks(t *testing.T) {
	t.Setenv("USER", "ada")
	if got := whoAsks(""); got != "ada" {
		t.Errorf("whoAsks with USER=ada = %q; want ada", got)
	}
	t.Setenv("USER", "")
	got := whoAsks("")
	if got == "" {
		t.Fatal("whoAsks with USER unset = \"\"; want a name")
	}
	if u, err := user.Current(); err == nil && u.Username != "" && got != u.Username {
		t.Errorf("whoAsks with USER unset = %q; want the system user %q", got, u.Username)
	}
}

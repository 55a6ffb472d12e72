package natsconn

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// writeCreds writes a creds file for a user allowed to subscribe to subs.
func writeCreds(t *testing.T, subs ...string) string {
	t.Helper()
	acc, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	for _, s := range subs {
		uc.Permissions.Sub.Allow.Add(s)
	}
	tok, err := uc.Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := user.Seed()
	b, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "u.creds")
	os.WriteFile(p, b, 0o600)
	return p
}

// TestRoleOf reads the skillbus role tag of a creds file.
func TestRoleOf(t *testing.T) {
	acc, _ := nkeys.CreateAccount()
	user, _ := nkeys.CreateUser()
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Tags.Add("team:x")
	uc.Tags.Add(RoleTag + "seqworker")
	tok, _ := uc.Encode(acc)
	seed, _ := user.Seed()
	b, _ := jwt.FormatUserConfig(tok, seed)
	p := filepath.Join(t.TempDir(), "w.creds")
	os.WriteFile(p, b, 0o600)
	if r, err := RoleOf(p); err != nil || r != "seqworker" {
		t.Errorf("RoleOf = %q, %v; want seqworker", r, err)
	}
	if r, err := RoleOf(writeCreds(t, "x.>")); err != nil || r != "" {
		t.Errorf("RoleOf(no tag) = %q, %v; want \"\"", r, err)
	}
}

// TestInboxPrefixOf: a user with one private inbox uses it; any other
// user keeps the default prefix.
func TestInboxPrefixOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		subs []string
		want string
	}{
		{"private inbox", []string{"_INBOX.runner.>", "events.>"}, "_INBOX.runner"},
		{"all inboxes", []string{"_INBOX.>"}, ""},
		{"no restriction", nil, ""},
		{"two inboxes", []string{"_INBOX.a.>", "_INBOX.b.>"}, ""},
		{"wildcard inbox", []string{"_INBOX.*.>"}, ""},
	} {
		got, err := InboxPrefixOf(writeCreds(t, tc.subs...))
		if err != nil || got != tc.want {
			t.Errorf("%s: InboxPrefixOf = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := InboxPrefixOf(filepath.Join(t.TempDir(), "missing.creds")); err == nil {
		t.Error("InboxPrefixOf(missing file) = nil error")
	}
	// Options uses it for a creds file, unless a context names one.
	c := &Config{Creds: Value{V: writeCreds(t, "_INBOX.reader.>"), Source: "--creds"}}
	opts, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	var o nats.Options
	for _, f := range opts {
		f(&o)
	}
	if o.InboxPrefix != "_INBOX.reader" {
		t.Errorf("Options() inbox prefix = %q; want _INBOX.reader", o.InboxPrefix)
	}
	c.InboxPrefix = "_MINE"
	opts, _ = c.Options()
	o = nats.Options{}
	for _, f := range opts {
		f(&o)
	}
	if o.InboxPrefix != "_MINE" {
		t.Errorf("Options() with a context's inbox_prefix = %q; want _MINE", o.InboxPrefix)
	}
}

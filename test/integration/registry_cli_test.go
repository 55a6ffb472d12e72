package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/cli"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestRegistryProblemsInCLI: what the registry computes — an invalid
// file, its fix (back to the last good content, so no put), a warning
// that drops a restriction — is shown by `skillbus dev` (one line per
// problem, the kept version on the same line), `skills`, `skills info`
// and `watch`.
func TestRegistryProblemsInCLI(t *testing.T) {
	defs := t.TempDir()
	typo := "---\nname: typo\ndescription: restricted skill\nallowed_tools: Read\n---\n# Use\nbody\n"
	regWrite(t, filepath.Join(defs, "typo/SKILL.md"), typo)
	regWrite(t, filepath.Join(defs, "keep/SKILL.md"), regSkillMD("keep", "good first", "body"))
	stdout, stderr, stop := cliBackground(t, "dev", "--port", "0", "--data", t.TempDir(), "--dir", defs, "--tools-root", defs, "--agent", "")
	warnLine := `skillbus dev: warning typo/SKILL.md:4: unknown field "allowed_tools" is ignored; did you mean "allowed-tools"?`
	stderr.waitFor(t, "dev to print the warning", warnLine)

	// Break keep/SKILL.md: one line, with the kept version on it.
	regWrite(t, filepath.Join(defs, "keep/SKILL.md"), "---\nname: keep\ndescription: broken\ncontext: nope\n---\nbody\n")
	invalidLine := `skillbus dev: invalid keep/SKILL.md:4: context "nope" is not allowed; use inline (the default) or fork (keeping the last good version of keep until keep/SKILL.md is fixed)`
	stderr.waitFor(t, "dev to print the invalid file", invalidLine)
	n := 0
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "keep/SKILL.md") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("dev printed %d lines naming keep/SKILL.md; want 1:\n%s", n, stderr.String())
	}
	// Fixed back to its last good content: the bucket does not change (no
	// put), and dev says that it is fixed.
	regWrite(t, filepath.Join(defs, "keep/SKILL.md"), regSkillMD("keep", "good first", "body"))
	stderr.waitFor(t, "dev to print the fix", `skillbus dev: fixed keep/SKILL.md: skill "keep" loads again`)

	// A forged skill put straight into SKILLS: undone, and said so.
	var url string
	stdout.waitUntil(t, "dev's NATS URL", func(text string) bool {
		for _, l := range strings.Split(text, "\n") {
			if u, ok := strings.CutPrefix(strings.TrimSpace(l), "NATS_URL="); ok {
				url = u
				return true
			}
		}
		return false
	})
	js, err := jetstream.New(cliConn(t, url))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), events.BucketSkills)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), "typo", regForgedSkill("typo")); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, "dev to print the reverted write", "skillbus dev: reverted: SKILLS/typo was written at revision",
		"the registry put back the version from typo/SKILL.md")
	if code := stop(); code != cli.ExitOK {
		t.Errorf("dev stopped with %d; want 0", code)
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if !strings.HasPrefix(l, "skillbus dev: ") {
			t.Errorf("dev stderr line %q is not a one-line report", l)
		}
	}
}

// TestRegistryWarningsInCLI: `skills`, `skills info` and `watch` show the
// warnings the registry computed.
func TestRegistryWarningsInCLI(t *testing.T) {
	defs := t.TempDir()
	typo := "---\nname: typo\ndescription: restricted skill\nallowed_tools: Read\n---\n# Use\nbody\n"
	regWrite(t, filepath.Join(defs, "typo/SKILL.md"), typo)
	regWrite(t, filepath.Join(defs, "clean/SKILL.md"), regSkillMD("clean", "no warning", "body"))
	cliStack(t, defs, "")
	warning := `typo/SKILL.md:4: unknown field "allowed_tools" is ignored; did you mean "allowed-tools"?`

	code, out, errs := cliRun(t, "skills")
	if code != cli.ExitOK || !strings.Contains(out, "(1 warning(s), below) restricted skill") || !strings.Contains(out, "  typo: "+warning) || strings.Contains(out, "clean: ") {
		t.Errorf("skills = %d\n%s%s", code, out, errs)
	}
	code, out, errs = cliRun(t, "skills", "info", "typo")
	if code != cli.ExitOK || !strings.Contains(errs, "skillbus skills info: warning: "+warning) || strings.Contains(out, "allowed_tools") || !strings.HasPrefix(out, "# Use") {
		t.Errorf("skills info typo = %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, _ = cliRun(t, "skills", "info", "typo", "--json")
	if code != cli.ExitOK || !strings.Contains(out, `"warnings": [`) {
		t.Errorf("skills info typo --json = %d\n%s", code, out)
	}

	stdout, stderr, stop := cliBackground(t, "watch")
	stderr.waitFor(t, "watch to start", "watching events")
	regWrite(t, filepath.Join(defs, "typo/SKILL.md"), strings.Replace(typo, "body", "body, edited", 1))
	stdout.waitFor(t, "watch to print the warning", "registry skill warning typo (typo/SKILL.md:4)", "\n    warning: "+warning+"\n")
	if code := stop(); code != cli.ExitOK {
		t.Errorf("watch stopped with %d", code)
	}
}

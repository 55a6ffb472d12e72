package cli

import (
	"strings"
	"testing"
)

// TestTextFlagsRefused: a malformed free-text flag is a usage error (exit
// 2) said before anything is sent, as the README's exit codes say — with
// NATS_URL pointing where no server listens, anything sent would be exit
// 1: a rejection's reason of only spaces (seq.signal refuses it too), a
// reason, a note or a by over events.MaxReasonLength (named, with the
// limit), a backfill without --from or --to.
func TestTextFlagsRefused(t *testing.T) {
	clearNATSEnv(t)
	t.Setenv(EnvNATSURL, "nats://127.0.0.1:1")
	long := strings.Repeat("x", 2000)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "signal", "r1", "approve", "--reject", "   "}, "--reject needs a reason (not only spaces)"},
		{[]string{"runs", "signal", "r1", "approve", "--reject", ""}, "--reject needs a reason"},
		{[]string{"runs", "signal", "r1", "approve", "--by", long}, "--by is 2000 bytes long; the limit is 1024 bytes"},
		{[]string{"runs", "signal", "r1", "approve", "--reject", long}, "--reject is 2000 bytes long; the limit is 1024 bytes"},
		{[]string{"runs", "cancel", "r1", "--reason", long}, "--reason is 2000 bytes long; the limit is 1024 bytes"},
		{[]string{"runs", "cancel", "r1", "--by", long}, "--by is 2000 bytes long"},
		{[]string{"schedules", "pause", "sc/berlin", "--note", strings.Repeat("n", 5000)}, "--note is 5000 bytes long; the limit is 1024 bytes"},
		{[]string{"schedules", "pause", "sc/berlin", "--note", "x", "--by", long}, "--by is 2000 bytes long"},
		{[]string{"schedules", "unpause", "sc/berlin", "--by", long}, "--by is 2000 bytes long"},
		{[]string{"schedules", "trigger", "sc", "--by", long}, "--by is 2000 bytes long"},
		{[]string{"schedules", "backfill", "sc", "--from", "2026-11-30T00:00:00Z", "--by", long}, "--by is 2000 bytes long"},
		{[]string{"schedules", "backfill", "sc", "--from", "2026-11-30T00:00:00Z"}, "--to is required"},
		{[]string{"schedules", "backfill", "sc", "--to", "2026-11-30T00:00:00Z"}, "--from is required"},
		{[]string{"schedules", "backfill", "sc"}, "--from is required"},
		{[]string{"schedules", "backfill", "sc", "--from", "yesterday", "--to", "2026-11-30T00:00:00Z"}, `--from "yesterday": want an RFC 3339 time`},
	} {
		code, _, errb := runMain(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errb, tc.want) {
			t.Errorf("skillbus %.120q = %d %.300q; want 2 and %q", tc.args, code, errb, tc.want)
		}
	}
}

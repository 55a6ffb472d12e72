package servicecmd

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
)

// TestFlagError: every flag value error names the flag as it is typed and
// says what it takes; an unknown flag suggests the closest one.
func TestFlagError(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--since", "2d"}, `--since "2d": not a duration; use a Go duration such as 48h`},
		{[]string{"--limit", "abc"}, `--limit "abc": not a whole number; want one such as 10`},
		{[]string{"--limit", "99999999999999999999"}, `--limit "99999999999999999999": out of range`},
		{[]string{"--verbose=maybe"}, `--verbose "maybe": not a boolean; want true or false`},
		{[]string{"--sinc", "1h"}, `unknown flag --sinc; did you mean --since?`},
		{[]string{"-x"}, `unknown flag -x`},
		{[]string{"--since"}, `--since needs a value: not a duration`},
		{[]string{"-o", "xml"}, `-o "xml": want json or yaml`},
	}
	for _, tc := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(discard{})
		fs.Duration("since", 0, "")
		fs.Int("limit", 0, "")
		fs.Bool("verbose", false, "")
		fs.Var(choice{}, "o", "")
		err := fs.Parse(tc.args)
		if err == nil {
			t.Fatalf("%q parsed", tc.args)
		}
		if got := FlagError(fs, err); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: got %q; want it to start with %q", tc.args, got, tc.want)
		}
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

type choice struct{}

func (choice) String() string { return "" }
func (choice) Set(s string) error {
	if s != "json" && s != "yaml" {
		return errors.New("want json or yaml")
	}
	return nil
}

// TestConfigText: a Config's validation error names the flag, its value
// and where the value came from, without Go names or package prefixes.
func TestConfigText(t *testing.T) {
	errWorker := errors.New("seqworker: invalid configuration")
	fields := map[string]string{"Provision": "", "AckWait": "ack-wait", "Concurrency": "concurrency",
		"Provision: RunSlotsMaxBytes": "run-slots-max-bytes", "RunSlotsMaxBytes": "run-slots-limit-bytes", "SlotMaxBytes": "slot-max-bytes", "Dir": "dir", "ListingEntries": "listing-entries", "AllowCommands entry": "allow-cmd"}
	source := func(f string) string {
		if f == "ack-wait" {
			return "SKILLBUS_ACK_WAIT"
		}
		return ""
	}
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: Provision: %w", errWorker, fmt.Errorf("%w: AckWait = %s; want at least 1s", events.ErrOptions, -5*time.Second)),
			`SKILLBUS_ACK_WAIT="-5s" (the environment form of --ack-wait): want at least 1s`},
		{fmt.Errorf("%w: Concurrency = 0; want 1 to 10000", errWorker), `--concurrency "0": want 1 to 10000`},
		{fmt.Errorf("%w: Provision: %w", errWorker, fmt.Errorf("%w: RunSlotsMaxBytes = -2; want -1 (unlimited), 0 (the default) or more", events.ErrOptions)),
			`--run-slots-max-bytes "-2": want -1 (unlimited), 0 (the default) or more`},
		{fmt.Errorf("%w: RunSlotsMaxBytes = 5 is below SlotMaxBytes = 9", errWorker), `--run-slots-limit-bytes "5" is below --slot-max-bytes "9"`},
		{fmt.Errorf("%w: Dir %q: no such directory", errWorker, "/nonexistent"), `--dir "/nonexistent": no such directory`},
		{fmt.Errorf("%w: ListingEntries is negative (-1); want 0 (default 64) or more", errWorker), `--listing-entries is negative (-1); want 0 (default 64) or more`},
		{fmt.Errorf("%w: AllowCommands entry %q: give a command name (git)", errWorker, "ec ho"), `--allow-cmd "ec ho": give a command name (git)`},
	}
	for _, tc := range cases {
		if got := ConfigText(tc.err, fields, source); got != tc.want {
			t.Errorf("ConfigText(%q)\n got %q\nwant %q", tc.err, got, tc.want)
		}
	}
}

package seqworker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string // "" = valid
	}{
		{"zero value", Config{}, ""},
		{"explicit", Config{Concurrency: 4, RedeliveryDelay: time.Second, RedeliveryMaxDelay: time.Minute, FetchWait: time.Second}, ""},
		{"negative concurrency", Config{Concurrency: -1}, "Concurrency"},
		{"huge concurrency", Config{Concurrency: 1 << 20}, "Concurrency"},
		{"negative redelivery", Config{RedeliveryDelay: -time.Second}, "RedeliveryDelay"},
		{"max below first", Config{RedeliveryDelay: time.Minute, RedeliveryMaxDelay: time.Second}, "RedeliveryMaxDelay"},
		{"negative retry", Config{RetryInitial: -1}, "RetryInitial"},
		{"negative shutdown", Config{ShutdownTimeout: -1}, "ShutdownTimeout"},
		{"tiny fetch wait", Config{FetchWait: time.Millisecond}, "FetchWait"},
		{"bad provision", Config{Provision: events.Options{Replicas: 9}}, "Replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v; want nil", tc.cfg, err)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate(%+v) = %v; want ErrConfig naming %s", tc.cfg, err, tc.field)
			}
		})
	}
}

func TestRedeliveryDelay(t *testing.T) {
	c := Config{RedeliveryDelay: time.Second, RedeliveryMaxDelay: 5 * time.Second}.withDefaults()
	for delivery, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 50: 5 * time.Second} {
		if got := c.redeliveryDelay(delivery); got != want {
			t.Errorf("redeliveryDelay(%d) = %s; want %s", delivery, got, want)
		}
	}
}

func TestRunIDs(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
	}{
		{"tick", TickRunID("nightly", time.Date(2026, 11, 30, 3, 4, 5, 678901000, time.UTC), nil), "tick-nightly-20261130T030405678Z"},
		{"tick, offset time", TickRunID("nightly", time.Date(2026, 11, 30, 4, 4, 5, 0, time.FixedZone("", 3600)), nil), "tick-nightly-20261130T030405000Z"},
		{"tick, every: this tick, not the next", TickRunID("e", TickTime("2026-11-30T03:05:05Z", "@every 1m0s", nil), nil), "tick-e-20261130T030405000Z"},
		{"tick, cron without a stored time: next", TickRunID("c", TickTime("2026-11-30T03:05:05Z", "0 * * * * *", nil), nil), "tick-c-20261130T030505000Z"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q; want %q", tc.name, tc.got, tc.want)
		}
	}
	if id := TickRunID("once", time.Time{}, nil); !strings.HasPrefix(id, "tick-once-seq0-") {
		t.Errorf("one-shot tick id = %q; want tick-once-seq0-<hash>", id)
	}
	if id := TickRunID("a.b c", time.Date(2026, 11, 30, 3, 4, 5, 0, time.UTC), nil); !strings.HasPrefix(id, "tick-a_b_c-20261130T030405000Z-") {
		t.Errorf("odd-name tick id = %q; want tick-a_b_c-20261130T030405000Z-<hash>", id)
	}
	long := strings.Repeat("n", 5000)
	for _, id := range []string{BootRunID(long, long, long), TickRunID(long, time.Now(), nil)} {
		if err := events.CheckRunID(id); err != nil {
			t.Errorf("id from 5,000-byte names: %v", err)
		}
	}
	a := BootRunID("agent-1", "b1", "warm")
	if !strings.HasPrefix(a, "boot-agent-1-warm-") || tokenOrEmpty(a) != a {
		t.Errorf("BootRunID = %q; want boot-agent-1-warm-<hash>, a usable run id", a)
	}
	if a != BootRunID("agent-1", "b1", "warm") {
		t.Error("BootRunID is not deterministic")
	}
	for _, other := range []string{BootRunID("agent-1", "b2", "warm"), BootRunID("agent-2", "b1", "warm"), BootRunID("agent-1", "b1", "cold"), BootRunID("agent-1b", "1", "warm")} {
		if other == a {
			t.Errorf("BootRunID collision: %q", other)
		}
	}

	// Names that are not ASCII: a valid run id whose parts decode, and
	// two agents named in Chinese no longer look alike.
	zh := BootRunID("机器人", "b1", "开机自检")
	if zh != "boot-_5py65Zmo5Lq6-_5byA5py66Ieq5qOA-aec0b955cf5af8f3" || events.CheckRunID(zh) != nil {
		t.Errorf("BootRunID(机器人, b1, 开机自检) = %q; want boot-_5py65Zmo5Lq6-_5byA5py66Ieq5qOA-aec0b955cf5af8f3", zh)
	}
	parts := strings.Split(zh, "-")
	agent, err1 := events.NameForIDPart(parts[1])
	sequence, err2 := events.NameForIDPart(parts[2])
	if agent != "机器人" || sequence != "开机自检" || err1 != nil || err2 != nil {
		t.Errorf("the parts of %q decode to %q (%v), %q (%v)", zh, agent, err1, sequence, err2)
	}
	if other := BootRunID("机器狗", "b1", "开机自检"); strings.Split(other, "-")[1] == parts[1] {
		t.Errorf("BootRunID(机器狗, …) = %q has the agent part of %q", other, zh)
	}
	// The longest names (64 four-byte characters), and a non-ASCII boot id.
	longest := strings.Repeat("\U00020000", 64)
	for _, id := range []string{BootRunID(longest, longest, longest), BootRunID("机器人", "启动-1", longest), BootRunID(longest, "b", "a")} {
		if err := events.CheckRunID(id); err != nil || len(id) > events.MaxRunIDLength {
			t.Errorf("BootRunID of the longest names = %q (%d bytes): %v", id, len(id), err)
		}
	}
	if BootRunID("机器人", "启动-1", "开机自检") == BootRunID("机器人", "启动-2", "开机自检") {
		t.Error("boot ids that differ only in non-ASCII characters give one run id")
	}
}

func TestSchedulePattern(t *testing.T) {
	for in, want := range map[string]string{
		"@every 1s":      "@every 1s",
		"@every 90s":     "@every 1m30s",
		"@every 1h":      "@every 1h0m0s",
		"@hourly":        "@hourly",
		"0 30 9 * * 1-5": "0 30 9 * * 1-5",
	} {
		if got := schedulePattern(in); got != want {
			t.Errorf("schedulePattern(%q) = %q; want %q", in, got, want)
		}
		if _, err := scheduleOpt(in); err != nil {
			t.Errorf("scheduleOpt(%q) = %v", in, err)
		}
	}
}

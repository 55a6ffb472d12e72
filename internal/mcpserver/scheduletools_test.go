package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/mcpserver"
	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
)

// TestScheduleTools: a model stores a scheduled sequence, lists its entry,
// pauses it with a note, pauses it again (the first pause and note stay,
// paused_before says whose), replaces the note with overwrite, unpauses it
// and triggers a tick, through the schedule_* tools and a real seqworker.
func TestScheduleTools(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	cs := connect(t, srv, "memory", &mcpservertest.Recorder{})
	res := mcpservertest.Call(t, cs, "seq_create", `{"name": "digest", "schedule": [{"name": "daily", "cron": "0 0 9 * * *", "timezone": "Europe/Berlin", "jitter": "1m", "catchup_window": "2h", "pause_on_failure": 2, "end_at": "2099-01-01T00:00:00Z"}], "groups": [{"name": "digest-wait", "tools": [{"tool": "test.sleep", "args": {"ms": 1}}]}]}`)
	if res.IsError {
		t.Fatalf("seq_create = %s", mcpservertest.Text(res))
	}
	type entry struct {
		Sequence, Entry, Note string
		Paused                bool
		TimeZone              string `json:"timezone"`
		Jitter                string `json:"jitter"`
		CatchupWindow         string `json:"catchup_window"`
		PauseOnFailure        int    `json:"pause_on_failure"`
		EndAt                 string `json:"end_at"`
		PausedBy              string `json:"paused_by"`
		Started               int64  `json:"started"`
		PausedBefore          *struct {
			Note, By, At string
		} `json:"paused_before"`
	}
	var list struct{ Entries []entry }
	deadline := time.Now().Add(20 * time.Second)
	for {
		mcpservertest.Structured(t, mcpservertest.Call(t, cs, "schedule_list", `{}`), &list)
		if len(list.Entries) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the seqworker learns of the sequence from the registry's event
	}
	if len(list.Entries) != 1 || list.Entries[0].Entry != "daily" || list.Entries[0].TimeZone != "Europe/Berlin" || list.Entries[0].Paused {
		t.Fatalf("schedule_list = %+v; want the one entry daily, unpaused", list.Entries)
	}
	if e := list.Entries[0]; e.Jitter != "1m0s" || e.CatchupWindow != "2h0m0s" || e.PauseOnFailure != 2 || e.EndAt != "2099-01-01T00:00:00Z" {
		t.Errorf("schedule_list's entry: jitter %q, catchup_window %q, pause_on_failure %d, end_at %q; want 1m0s, 2h0m0s, 2, 2099-01-01T00:00:00Z", e.Jitter, e.CatchupWindow, e.PauseOnFailure, e.EndAt)
	}
	pause := func(args string) entry {
		t.Helper()
		res := mcpservertest.Call(t, cs, "schedule_pause", args)
		if res.IsError {
			t.Fatalf("schedule_pause %s = %s", args, mcpservertest.Text(res))
		}
		var out struct{ Entries []entry }
		mcpservertest.Structured(t, res, &out)
		if len(out.Entries) != 1 {
			t.Fatalf("schedule_pause %s: entries %+v", args, out.Entries)
		}
		return out.Entries[0]
	}
	if e := pause(`{"sequence": "digest", "entry": "daily", "note": "holiday"}`); !e.Paused || e.Note != "holiday" || e.PausedBefore != nil || !strings.HasPrefix(e.PausedBy, "mcp") {
		t.Fatalf("first pause: %+v", e)
	}
	if e := pause(`{"sequence": "digest", "entry": "daily", "note": "freeze"}`); e.Note != "holiday" || e.PausedBefore == nil || e.PausedBefore.Note != "holiday" || !strings.HasPrefix(e.PausedBefore.By, "mcp") {
		t.Fatalf("second pause without overwrite: %+v; want the first note kept and paused_before naming it", e)
	}
	if e := pause(`{"sequence": "digest", "entry": "daily", "note": "freeze", "overwrite": true}`); e.Note != "freeze" || e.PausedBefore == nil || e.PausedBefore.Note != "holiday" {
		t.Fatalf("pause with overwrite: %+v; want the note replaced", e)
	}
	if res := mcpservertest.Call(t, cs, "schedule_unpause", `{"sequence": "digest", "entry": "daily"}`); res.IsError {
		t.Fatalf("schedule_unpause = %s", mcpservertest.Text(res))
	}
	var ticks struct {
		Ticks []struct {
			RunID   string `json:"run_id"`
			Outcome string
		} `json:"ticks"`
	}
	mcpservertest.Structured(t, mcpservertest.Call(t, cs, "schedule_trigger", `{"sequence": "digest", "entry": "daily"}`), &ticks)
	if len(ticks.Ticks) != 1 || ticks.Ticks[0].Outcome != "started" || ticks.Ticks[0].RunID == "" {
		t.Fatalf("schedule_trigger = %+v; want one started tick", ticks.Ticks)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mcpservertest.Structured(t, mcpservertest.Call(t, cs, "schedule_list", `{}`), &list)
		if len(list.Entries) == 1 && list.Entries[0].Started == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("schedule_list after the trigger = %+v; want started 1", list.Entries)
		}
	}
}

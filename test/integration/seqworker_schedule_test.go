package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// TestSeqworkerTickTime: a scheduled run's id and scheduled_at carry the
// tick's own time — not the next tick's, which lies in the future when the
// run starts.
func TestSeqworkerTickTime(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("tick.echo", &calls))
	swStore(t, env, "name: ticker\nschedule: \"@every 2s\"\ngroups:\n  - name: ticker-one\n    tools: [{tool: tick.echo}]\n")
	swWorker(t, env, seqworker.Config{})
	var st events.RunState
	swUntilAll(t, env.js, 30*time.Second, "a succeeded tick run", func(runs map[string]events.RunState) bool {
		for k, r := range runs {
			if r.Status == events.StatusSucceeded && strings.HasPrefix(k, "tick-ticker-") {
				st = r
				return true
			}
		}
		return false
	})
	stamp := st.ScheduledAt.UTC().Format("20060102T150405")
	if st.Trigger != events.TriggerSchedule || st.ScheduledAt.IsZero() || !strings.Contains(st.RunID, stamp) {
		t.Fatalf("tick run %s: trigger %s, scheduled_at %v; want schedule and the id carrying scheduled_at", st.RunID, st.Trigger, st.ScheduledAt)
	}
	if st.ScheduledAt.After(st.CreatedAt) || st.CreatedAt.Sub(st.ScheduledAt) > 1500*time.Millisecond {
		t.Errorf("tick run %s scheduled_at %s, created %s; want the tick's own time (at or just before the run was created), not the next tick's", st.RunID, st.ScheduledAt, st.CreatedAt)
	}
}

// TestScheduleRefusedShown: a schedule that the sequence language accepts
// but the NATS server refuses is reported as a schedule event (refused,
// with the server's reason) that `skillbus seqs show` prints; the server
// takes a cron time zone (Nats-Schedule-Time-Zone) and refuses an unknown
// one.
func TestScheduleRefusedShown(t *testing.T) {
	var pattern string
	for _, p := range []string{"0 0 0 30 2 *", "0 50-10 * * * *", "0 0 0 31 4 *"} {
		if _, err := seq.ParseYAML([]byte("name: x\nschedule: \"" + p + "\"\ngroups:\n  - name: x1\n    tools: [{tool: a}]\n")); err == nil {
			pattern = p
			break
		}
	}
	dir := t.TempDir()
	stack := cliStack(t, dir, "")
	nc, err := nats.Connect(stack.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)

	t.Run("time zone header", func(t *testing.T) {
		ctx := context.Background()
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TZPROBE", Subjects: []string{"tz.>"}, AllowMsgSchedules: true, Storage: jetstream.MemoryStorage})
		if err != nil {
			t.Fatal(err)
		}
		_, err = js.Publish(ctx, "tz.schedule.ok", []byte("x"), jetstream.WithScheduleCron("* * * * * *"), jetstream.WithScheduleTimeZone("America/New_York"), jetstream.WithScheduleTarget("tz.tick.ok"))
		if err != nil {
			t.Fatalf("cron schedule in America/New_York refused: %v", err)
		}
		_, err = js.Publish(ctx, "tz.schedule.bad", []byte("x"), jetstream.WithScheduleCron("* * * * * *"), jetstream.WithScheduleTimeZone("Mars/Olympus_Mons"), jetstream.WithScheduleTarget("tz.tick.bad"))
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "time zone") {
			t.Errorf("unknown time zone: %v; want the server to refuse it naming the time zone", err)
		}
		m := swStreamUntil(t, js, "TZPROBE", "tz.tick.ok", 10*time.Second, "tick of the America/New_York schedule", func(jetstream.Msg) bool { return true })
		if m.Headers().Get(events.HeaderScheduleNext) == "" {
			t.Errorf("tick without %s", events.HeaderScheduleNext)
		}
	})

	t.Run("refused schedule", func(t *testing.T) {
		if pattern == "" {
			t.Skip("the sequence language refuses every pattern the server refuses: nothing reaches the server to refuse")
		}
		if err := os.WriteFile(filepath.Join(dir, "never.seq.yaml"), []byte("name: never-runs\nschedule: \""+pattern+"\"\ngroups:\n  - name: never-runs-one\n    tools: [{tool: a.b}]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := stack.Registry().Rescan(context.Background()); err != nil {
			t.Fatal(err)
		}
		ev := events.ScheduleEvent{}
		swStreamUntil(t, js, events.StreamEvents, "events.schedule.never-runs", 20*time.Second, "refused schedule event", func(m jetstream.Msg) bool {
			return events.Decode(m.Data(), &ev) == nil && ev.Status == events.ScheduleRefused
		})
		code, out, errOut := cliRun(t, "seqs", "show", "never-runs")
		if code != 0 || !strings.Contains(out, "schedule state: sequence never-runs: the NATS server refused its schedule") {
			t.Errorf("seqs show: exit %d\n%s\n%s\nwant the refusal shown", code, out, errOut)
		}
	})
}

// TestSeqworkerScheduleTimeZone: a sequence that names a time zone gets a
// schedule message with Nats-Schedule-Time-Zone, and the server fires it.
func TestSeqworkerScheduleTimeZone(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("tz.echo", &calls))
	swStore(t, env, "name: zoned\nschedule: \"* * * * * *\"\ntimezone: America/New_York\ngroups:\n  - name: zoned-one\n    tools: [{tool: tz.echo}]\n")
	swWorker(t, env, seqworker.Config{})
	subj, _ := events.ScheduleSubject("zoned")
	swSubjectUntil(t, env.nc, env.js, events.StreamSeqRuns, subj, 20*time.Second, "zoned schedule message", func(h nats.Header, _ []byte) bool {
		return h.Get(events.HeaderScheduleTimeZone) == "America/New_York"
	})
	swSucceededOf(t, env, "zoned")
	if calls.get("tz.echo") == 0 {
		t.Error("a tick of the zoned schedule succeeded without calling tz.echo")
	}
}

package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// Sequences, groups and agents named in Chinese work end to end: a boot
// sequence 开机自检 (groups 检查磁盘, 检查网络) runs for the agent 机器人 on
// events.agent_ready.<token>, a run of 手动运行 goes through
// seq.run.<token>, and a scheduled 每秒打卡 ticks through seq.schedule.<token>
// — each token the reversible encoding of the name.
func TestUnicodeNamesEndToEnd(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var mu sync.Mutex
	seen := map[string][]string{} // tool → agents it was called for
	rec := func(name string) tool.Tool {
		return tool.Tool{Name: name, Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct{ Agent string }
			_ = json.Unmarshal(args, &a)
			mu.Lock()
			seen[name] = append(seen[name], a.Agent)
			mu.Unlock()
			return args, nil
		}}
	}
	swServe(t, env, rec("disk.check"), rec("net.check"), rec("manual.step"), rec("tick.step"))
	swStore(t, env, "name: 开机自检\nboot: true\ngroups:\n  - name: 检查磁盘\n    in: {agent: string}\n    tools: [{tool: disk.check, args: {agent: $args.agent}}]\n  - name: 检查网络\n    in: {agent: string}\n    tools: [{tool: net.check, args: {agent: $args.agent}}]\n")
	swStore(t, env, "name: 手动运行\ngroups:\n  - name: 第一步\n    in: {who: string}\n    tools: [{tool: manual.step, args: {agent: $args.who}}]\n")
	swStore(t, env, "name: 每秒打卡\nschedule: \"@every 1s\"\ngroups:\n  - name: 打卡\n    tools: [{tool: tick.step}]\n")
	swWorker(t, env, seqworker.Config{})

	// Boot, on the encoded agent subject.
	subj, err := events.AgentReadySubject("机器人")
	if err != nil || subj != "events.agent_ready.=5py65Zmo5Lq6" {
		t.Fatalf("AgentReadySubject(机器人) = %q, %v", subj, err)
	}
	if _, err := events.PublishMessage(context.Background(), env.js, subj, &events.AgentReady{Agent: "机器人", BootID: "b1"}); err != nil {
		t.Fatal(err)
	}
	id := seqworker.BootRunID("机器人", "b1", "开机自检")
	st := swWait(t, env, id, 30*time.Second)
	if st.Status != events.StatusSucceeded || st.Sequence != "开机自检" {
		t.Fatalf("boot run %s: %s %q (%s)", id, st.Status, st.Sequence, st.Error)
	}
	if r := swResult(t, st); len(r.Groups) != 2 || r.Groups[0].Name != "检查磁盘" || r.Groups[1].Name != "检查网络" {
		t.Errorf("boot run groups %+v", r.Groups)
	}

	// A run request on seq.run.<token>.
	swRequest(t, env, "manual-1", "手动运行", map[string]string{"who": "机器人"})
	if st := swWait(t, env, "manual-1", 30*time.Second); st.Status != events.StatusSucceeded {
		t.Fatalf("run of 手动运行: %s (%s)", st.Status, st.Error)
	}

	// The schedule lives on seq.schedule.<token> and ticks.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(seen["tick.step"])
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("每秒打卡 ticked %d times in 30 s; want at least 2", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stream, err := env.js.Stream(context.Background(), events.StreamSeqRuns)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(context.Background(), jetstream.WithSubjectFilter(events.SubjectScheduleAll))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for s := range info.State.Subjects {
		n, err := events.NameOfSubject(s)
		if err != nil {
			t.Errorf("schedule subject %q: %v", s, err)
		}
		names = append(names, s+" = "+n)
	}
	if len(names) != 1 || names[0] != "seq.schedule.=5q-P56eS5omT5Y2h = 每秒打卡" {
		t.Errorf("schedule subjects %v; want seq.schedule.=5q-P56eS5omT5Y2h for 每秒打卡", names)
	}

	mu.Lock()
	defer mu.Unlock()
	for tl, want := range map[string]string{"disk.check": "机器人", "net.check": "机器人", "manual.step": "机器人"} {
		if got := seen[tl]; len(got) != 1 || got[0] != want {
			t.Errorf("%s called for %v; want once for %s", tl, got, want)
		}
	}
}

// TestNameLimitAtTheEndpoints: the seqworker's endpoints refuse a name
// over the one name limit (64 characters, 256 bytes in UTF-8) with code
// 400 stating it, and take a longest name (64 four-byte characters) as a
// name: not found (404), not refused. Before, the endpoints let names up
// to 512 bytes through and a 65-character name was refused only further
// on, with another limit in the message.
func TestNameLimitAtTheEndpoints(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	swWorker(t, env, seqworker.Config{})
	longest := strings.Repeat("\U00020000", 64)
	over := longest + "\U00020000"
	ask := func(subject string, req any) (code, desc string) {
		t.Helper()
		data, _ := json.Marshal(req)
		msg, err := env.nc.Request(subject, data, 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		return msg.Header.Get("Nats-Service-Error-Code"), msg.Header.Get("Nats-Service-Error")
	}
	const limit = "the name limit is 64 characters, at most 256 bytes in UTF-8"
	for _, tc := range []struct {
		what    string
		subject string
		req     func(name string) any
	}{
		{"seq_call group", events.SeqCallSubject, func(n string) any { return events.SeqCallRequest{V: 1, Group: n} }},
		{"seq.run sequence", events.SeqRunSubject, func(n string) any { return events.SeqRunRequest{V: 1, Sequence: n} }},
	} {
		if code, desc := ask(tc.subject, tc.req(over)); code != "400" || !strings.Contains(desc, limit) {
			t.Errorf("%s of 65 characters (260 bytes) = %s %q; want 400 stating %q", tc.what, code, desc, limit)
		}
		if code, desc := ask(tc.subject, tc.req(longest)); code != "404" {
			t.Errorf("%s of 64 characters (256 bytes) = %s %q; want 404: a valid name nothing stores", tc.what, code, desc)
		}
	}
}

// TestCLIBootUnicodeNames: `skillbus agent-ready 机器人` starts the boot
// sequence 开机自检 as a valid run whose id carries both names encoded
// (events.IDPart), which `watch` and `runs show` print decoded.
func TestCLIBootUnicodeNames(t *testing.T) {
	dir := t.TempDir()
	root := cliProject(t)
	if err := os.WriteFile(filepath.Join(dir, "boot.seq.yaml"), []byte("name: 开机自检\nboot: true\ngroups:\n  - name: 检查磁盘\n    in: {agent: string}\n    tools: [{tool: fs.list, args: {path: .}, as: listing}]\n    out: {listing: object}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cliStack(t, dir, root)
	cliEventually(t, "the boot sequence to be stored", func() bool {
		_, out, _ := cliRun(t, "seqs")
		return strings.Contains(out, "开机自检")
	})
	stdout, stderr, stop := cliBackground(t, "watch")
	stderr.waitFor(t, "watch to follow the events", "watching events") // said once it follows the stream
	if code, out, errOut := cliRun(t, "agent-ready", "机器人", "--boot-id", "b1"); code != 0 || !strings.Contains(out, "agent 机器人, boot id b1") {
		t.Fatalf("agent-ready 机器人: exit %d %q %q", code, out, errOut)
	}
	id := seqworker.BootRunID("机器人", "b1", "开机自检")
	if id != "boot-_5py65Zmo5Lq6-_5byA5py66Ieq5qOA-aec0b955cf5af8f3" || events.CheckRunID(id) != nil {
		t.Fatalf("boot run id %q; want boot-_5py65Zmo5Lq6-_5byA5py66Ieq5qOA-aec0b955cf5af8f3, a valid run id", id)
	}
	stdout.waitFor(t, "watch to print the boot run "+id+" decoded",
		"run "+id+": 开机自检 started on worker ", "(boot of agent 机器人, boot b1)", "run "+id+": 开机自检 succeeded")
	stop()
	code, out, errOut := cliRun(t, "runs", "show", id)
	for _, want := range []string{"Run:", id, "Sequence:", "开机自检", "Trigger:", "boot (agent 机器人, boot b1)", `agent = "机器人"`, "succeeded (1 of 1 finished)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("runs show %s lacks %q (exit %d):\n%s\n%s", id, want, code, out, errOut)
		}
	}
	if code, out, errOut := cliRun(t, "runs", "ls"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "开机自检") {
		t.Errorf("runs ls: exit %d\n%s\n%s\nwant the boot run", code, out, errOut)
	}
}

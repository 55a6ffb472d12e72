package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/mcpserver"
	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
)

// TestSeqSignal: a model stores a sequence with a wait_for group in the
// JSON form, runs it, sees it waiting for its signal (what it brings and
// until when), signals it with seq_signal and the run succeeds with the
// signal's value; a second signal is refused.
func TestSeqSignal(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	cs := connect(t, srv, "memory", &mcpservertest.Recorder{})
	res := mcpservertest.Call(t, cs, "seq_create", `{"name": "gate", "groups": [{"name": "gate-approve", "out": {"ok": "bool"}, "wait_for": {"signal": "approve", "timeout": "1h"}}]}`)
	if res.IsError {
		t.Fatalf("seq_create = %s", mcpservertest.Text(res))
	}
	if res := mcpservertest.Call(t, cs, "seq_show", `{"name": "gate"}`); !strings.Contains(mcpservertest.Text(res), `"wait_for": {`) || strings.Contains(mcpservertest.Text(res), `"tools": ""`) {
		t.Fatalf("seq_show = %s", mcpservertest.Text(res))
	}
	var run struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
		Wait   *struct {
			Signal string            `json:"signal"`
			Out    map[string]string `json:"out"`
		} `json:"wait"`
		Outputs map[string]any `json:"outputs"`
	}
	mcpservertest.Structured(t, mcpservertest.Call(t, cs, "seq_run", `{"sequence": "gate", "wait_seconds": 1}`), &run)
	id := run.RunID
	deadline := time.Now().Add(20 * time.Second)
	for run.Status != "waiting" {
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s, not waiting", id, run.Status)
		}
		time.Sleep(50 * time.Millisecond)
		res := mcpservertest.Call(t, cs, "seq_status", `{"run_id": "`+id+`"}`)
		mcpservertest.Structured(t, res, &run)
	}
	res = mcpservertest.Call(t, cs, "seq_status", `{"run_id": "`+id+`"}`)
	text := mcpservertest.Text(res)
	mcpservertest.Structured(t, res, &run)
	if run.Wait == nil || run.Wait.Signal != "approve" || run.Wait.Out["ok"] != "bool" || !strings.Contains(text, `seq_signal {"run_id": "`+id+`", "name": "approve"`) {
		t.Fatalf("waiting run: %+v\n%q", run.Wait, text)
	}
	if res := mcpservertest.Call(t, cs, "seq_signal", `{"run_id": "`+id+`", "name": "approve", "values": {"ok": true}}`); res.IsError {
		t.Fatalf("seq_signal = %s", mcpservertest.Text(res))
	}
	for run.Status != "succeeded" {
		if time.Now().After(deadline) {
			t.Fatalf("run %s is %s after the signal", id, run.Status)
		}
		time.Sleep(50 * time.Millisecond)
		mcpservertest.Structured(t, mcpservertest.Call(t, cs, "seq_status", `{"run_id": "`+id+`"}`), &run)
	}
	if run.Outputs["ok"] != true {
		t.Fatalf("outputs = %v", run.Outputs)
	}
	res = mcpservertest.Call(t, cs, "seq_signal", `{"run_id": "`+id+`", "name": "approve", "values": {"ok": false}}`)
	if !res.IsError || !strings.Contains(mcpservertest.Text(res), "not waiting") {
		t.Fatalf("second seq_signal = %v %s", res.IsError, mcpservertest.Text(res))
	}
}

package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/mcpserver"
	"github.com/skillbus/skillbus/internal/mcpserver/mcpservertest"
)

// TestSeqRetryFrom: seq_retry's from (docs/runs.md, "Retry from a group")
// re-runs a succeeded run from its second group in a new run that
// succeeds with both outputs; without from a succeeded run is refused,
// and a mistyped group is refused with the closest name and the groups
// allowed.
func TestSeqRetryFrom(t *testing.T) {
	srv, _ := withServer(t, mcpserver.Config{})
	cs := connect(t, srv, "memory", &mcpservertest.Recorder{})
	res := mcpservertest.Call(t, cs, "seq_create", `{"name": "two-step", "groups": [
		{"name": "two-first", "out": {"a": "string"}, "tools": "{\"tool\":\"text.render\",\"args\":{\"template\":\"one\"},\"as\":\"a\"};"},
		{"name": "two-second", "in": {"a": "string"}, "out": {"b": "string"}, "tools": "{\"tool\":\"text.render\",\"args\":{\"template\":\"{{.x}} two\",\"data\":{\"x\":\"$args.a\"}},\"as\":\"b\"};"}]}`)
	if res.IsError {
		t.Fatalf("seq_create = %s", mcpservertest.Text(res))
	}
	var run struct {
		RunID   string         `json:"run_id"`
		Status  string         `json:"status"`
		Outputs map[string]any `json:"outputs"`
	}
	mcpservertest.Structured(t, mcpservertest.Call(t, cs, "seq_run", `{"sequence": "two-step", "wait_seconds": 20}`), &run)
	if run.Status != "succeeded" {
		t.Fatalf("seq_run: %+v", run)
	}
	first := run.RunID
	if res := mcpservertest.Call(t, cs, "seq_retry", `{"run_id": "`+first+`"}`); !res.IsError || !strings.Contains(mcpservertest.Text(res), "--from GROUP") {
		t.Errorf("seq_retry of a succeeded run without from: %v %s; want an error pointing at from", res.IsError, mcpservertest.Text(res))
	}
	res = mcpservertest.Call(t, cs, "seq_retry", `{"run_id": "`+first+`", "from": "two-secnd"}`)
	if text := mcpservertest.Text(res); !res.IsError || !strings.Contains(text, `did you mean "two-second"?`) || !strings.Contains(text, `1 "two-first" or 2 "two-second"`) {
		t.Errorf("seq_retry from a mistyped group: %v %s", res.IsError, text)
	}
	res = mcpservertest.Call(t, cs, "seq_retry", `{"run_id": "`+first+`", "from": "2"}`)
	if res.IsError {
		t.Fatalf("seq_retry from 2 = %s", mcpservertest.Text(res))
	}
	mcpservertest.Structured(t, res, &run)
	if run.RunID == first || run.RunID == "" {
		t.Fatalf("seq_retry from 2 answered run %q", run.RunID)
	}
	deadline := time.Now().Add(20 * time.Second)
	for run.Status != "succeeded" {
		if time.Now().After(deadline) || run.Status == "failed" {
			t.Fatalf("the retry %s is %s", run.RunID, run.Status)
		}
		mcpservertest.Structured(t, mcpservertest.Call(t, cs, "seq_status", `{"run_id": "`+run.RunID+`", "wait_seconds": 1}`), &run)
	}
	if run.Outputs["a"] != "one" || run.Outputs["b"] != "one two" {
		t.Errorf("the retry's outputs = %v; want a from the reused group, b run again", run.Outputs)
	}
}

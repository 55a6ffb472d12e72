package mcpserver

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/skill"
)

func TestListenAddr(t *testing.T) {
	const token = "0123456789abcdef"
	tests := []struct {
		addr, token, want, err string
	}{
		{":8931", "", "127.0.0.1:8931", ""},
		{"localhost:8931", "", "localhost:8931", ""},
		{"[::1]:0", "", "[::1]:0", ""},
		{"127.0.0.2:1", "", "127.0.0.2:1", ""},
		{"0.0.0.0:8931", "", "", "a token is required"},
		{"[::]:8931", "", "", "a token is required"},
		{"mcp.example.com:443", "", "", "a token is required"},
		{"0.0.0.0:8931", token, "0.0.0.0:8931", ""},
		{":1", "short", "", "at least 16"},
		{"8931", "", "", "HOST:PORT or :PORT"},
	}
	for _, tt := range tests {
		got, err := ListenAddr(tt.addr, tt.token)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ListenAddr(%q, %q) = %q, %v; want an error with %q", tt.addr, tt.token, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ListenAddr(%q, %q) = %q, %v; want %q", tt.addr, tt.token, got, err, tt.want)
		}
	}
}

func TestDecodeArgs(t *testing.T) {
	schema := schemaFor[seqStatusIn]()
	tests := []struct {
		name, raw string
		want      []string // in the message; nil = no error
	}{
		{"ok", `{"run_id": "r1", "wait_seconds": 3}`, nil},
		{"empty is {}", ``, []string{`argument "run_id" is missing`}},
		{"null is {}", `null`, []string{`argument "run_id" is missing`}},
		{"not an object", `["r1"]`, []string{"one JSON object"}},
		{"every problem", `{"runid": "r1", "wait": 3, "wait_seconds": "3"}`, []string{
			`(4 problems)`, `"wait_seconds" must be an integer, not a JSON string`, `unknown argument "runid" (did you mean "run_id"?)`, `unknown argument "wait"`,
			`argument "run_id" is missing`, "seq_status takes: output, run_id (required), wait_seconds",
		}},
		{"wrong type", `{"run_id": 5}`, []string{`argument "run_id" must be a string, not a JSON number`}},
	}
	for _, tt := range tests {
		var in seqStatusIn
		err := decodeArgs("seq_status", json.RawMessage(tt.raw), schema, &in)
		if tt.want == nil {
			if err != nil || in.RunID != "r1" || in.WaitSeconds != 3 {
				t.Errorf("%s: decodeArgs = %+v, %v", tt.name, in, err)
			}
			continue
		}
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: decodeArgs(%s) = %v; want %q in it", tt.name, tt.raw, err, w)
			}
		}
	}
}

// TestFormRoundTrip checks that the JSON form seq_show gives back stores
// the same sequence: for every example sequence of the repository.
func TestFormRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("../../examples/sequences/*.seq.*")
	if len(files) == 0 {
		t.Fatal("no example sequences found")
	}
	for _, f := range files {
		if registry.FileKind(f) != "sequence" {
			continue // an editor's backup (my.seq.yaml~) is no example
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s, err := seq.ParseFile(f, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		form, _ := json.Marshal(formOf(s))
		back, err := seq.ParseJSON(form)
		if err != nil {
			t.Errorf("%s: the JSON form does not parse: %v\n%s", f, err, form)
			continue
		}
		a, _ := seq.Encode(s)
		b, _ := seq.Encode(back)
		if string(a) != string(b) {
			t.Errorf("%s: the JSON form stores another sequence:\n%s\nwant\n%s", f, b, a)
		}
	}
}

// TestSchemas checks every tool's schemas: objects, one type per
// property (portable to clients with a single-type dialect), and the
// enums of seq_create.
func TestSchemas(t *testing.T) {
	s := &Server{perm: &permissions{watches: map[*permWatch]struct{}{}}}
	for _, td := range s.modelTools() {
		in, _ := json.Marshal(td.tool.InputSchema)
		out, _ := json.Marshal(td.tool.OutputSchema)
		for _, b := range [][]byte{in, out} {
			if strings.Contains(string(b), `"null"`) {
				t.Errorf("%s: schema %s has a null type", td.tool.Name, b)
			}
		}
		if !strings.HasPrefix(string(in), `{"type":"object"`) {
			t.Errorf("%s: input schema %s is not an object", td.tool.Name, in)
		}
		if !strings.Contains(td.tool.Description, "Example") || td.tool.Title == "" {
			t.Errorf("%s: no title or example in %q", td.tool.Name, td.tool.Description)
		}
		if td.tool.Name == "seq_create" && !strings.Contains(string(in), `"enum":["abort","continue","retry"]`) {
			t.Errorf("seq_create schema %s lacks the on_error enum", in)
		}
	}
}

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		watched, refused string
		want             bool
	}{
		{"skillbus.seq.run", "skillbus.seq.run", true},
		{"skillbus.seq.run", "skillbus.seq.*", true},
		{"skillbus.seq.run", "skillbus.>", true},
		{"skillbus.seq.run", "skillbus.registry.>", false},
		{"skillbus.seq.run", "skillbus.seq", false},
		{"skillbus.seq", "skillbus.seq.>", false},
		{"tool.fs.read", "tool.*", false},
	}
	for _, tt := range tests {
		if got := subjectMatches(tt.watched, tt.refused); got != tt.want {
			t.Errorf("subjectMatches(%q, %q) = %v; want %v", tt.watched, tt.refused, got, tt.want)
		}
	}
}

func TestCapOutputs(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", MaxOutputBytes+10) + `"`)
	mid := json.RawMessage(`"` + strings.Repeat("y", 50<<10) + `"`)
	out := capOutputs(map[string]json.RawMessage{"big": big, "a": mid, "b": mid, "c": mid, "small": json.RawMessage(`1`)}, "r1")
	total := 0
	for _, v := range out {
		total += len(v)
	}
	if total > MaxOutputsBytes {
		t.Errorf("outputs total %d bytes; want at most %d", total, MaxOutputsBytes)
	}
	if !strings.Contains(string(out["big"]), `seq_status {\"run_id\": \"r1\", \"output\": \"big\"}`) || string(out["small"]) != "1" {
		t.Errorf("big = %s, small = %s; want a note for big and small as it is", out["big"], out["small"])
	}
	kept := 0
	for _, k := range []string{"a", "b", "c"} {
		if len(out[k]) == len(mid) {
			kept++
		}
	}
	if kept != 2 {
		t.Errorf("%d of the three 50 KiB outputs kept; want 2 (the budget is %d)", kept, MaxOutputsBytes)
	}
}

func TestSkillPrompt(t *testing.T) {
	rec := &skill.Skill{Name: "x", Description: "d", Invocation: skill.InvocationModelOnly}
	if p := skillPrompt(rec); p != nil {
		t.Errorf("model-only skill has a prompt %+v", p)
	}
	rec.Invocation = skill.InvocationUserOnly
	p := skillPrompt(rec)
	if p == nil || len(p.Arguments) != 1 || p.Arguments[0].Name != "task" {
		t.Errorf("user-only skill without sections: prompt %+v; want one task argument", p)
	}
}

// FuzzFilterLines: whatever arrives on stdin, the stdio filter neither
// panics nor stops early; every line it passes on is valid JSON, every
// line it answers is a JSON-RPC error response, and together they account
// for every non-blank input line.
func FuzzFilterLines(f *testing.F) {
	for _, s := range []string{
		"garbage\n",
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		"[1,2]\n\n\r\n{}\n",
		`{"id":{"x":1}}` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		pr, pw := io.Pipe()
		var out bytes.Buffer
		go filterLines(bytes.NewReader(in), pw, &lockedWriter{w: &out})
		passed, err := io.ReadAll(pr)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		n := 0
		for _, l := range bytes.Split(passed, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			n++
			if !json.Valid(l) {
				t.Errorf("passed on %q, which is not JSON", l)
			}
		}
		for _, l := range bytes.Split(out.Bytes(), []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			n++
			var m struct {
				JSONRPC string              `json:"jsonrpc"`
				ID      json.RawMessage     `json:"id"`
				Error   *struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal(l, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || len(m.ID) == 0 {
				t.Errorf("answered %q, which is not a JSON-RPC error response", l)
			}
		}
		want := 0
		for _, l := range bytes.Split(in, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				want++
			}
		}
		if n != want {
			t.Errorf("%d lines passed on or answered; the input has %d non-blank lines", n, want)
		}
	})
}

// TestRunTextArgs: seq_status's text names the arguments a call that did
// not succeed was sent, and a failed item's, cut to maxArgsText bytes; a
// succeeded call's are only in the structured answer.
func TestRunTextArgs(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", 400) + `"}`
	calls := callViews([]seq.CallResult{
		{Tool: "fs.list", Status: seq.CallSucceeded, Attempts: 1, SentArgs: seq.SentArgs{Args: json.RawMessage(`{"path":"src"}`)}},
		{Tool: "fs.read", Status: seq.CallFailed, Attempts: 1, Error: "no file", SentArgs: seq.SentArgs{Args: json.RawMessage(`{"path":"src/gone"}`)}},
		{Tool: "fs.big", Status: seq.CallFailed, Attempts: 1, SentArgs: seq.SentArgs{Args: json.RawMessage(long)}},
		{Tool: "fs.huge", Status: seq.CallFailed, Attempts: 1, SentArgs: seq.SentArgs{ArgsClipped: &seq.ClippedArgs{Size: 9000}}},
		{Tool: "fs.stat", Status: seq.CallFailed, Attempts: 2, ForEach: &seq.FanOut{Items: 2, Succeeded: 1, Failed: 1, FailedItems: []int{1},
			Details: []seq.ItemResult{{Index: 1, Status: seq.CallFailed, Attempts: 1, Error: "404", SentArgs: seq.SentArgs{Args: json.RawMessage(`{"path":"b"}`)}}}}},
	})
	if string(calls[0].Args) != `{"path":"src"}` || calls[3].ArgsClipped == nil || calls[3].ArgsClipped.Size != 9000 {
		t.Errorf("callViews: %+v; want each call's arguments", calls)
	}
	text := runText(runView{RunID: "r", Status: "failed", Steps: []stepView{{Group: "g", Status: "failed", Calls: calls}}})
	for _, want := range []string{
		"- fs.read: failed — no file\n     args: {\"path\":\"src/gone\"}\n",
		"args: {\"text\":\"" + strings.Repeat("x", maxArgsText-9) + "…\n",
		"args: (9000 bytes, too long to keep)\n",
		"item 2 ($index 1): failed after 1 attempt(s) — 404 (args {\"path\":\"b\"})\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("runText:\n%s\nwant it to contain %q", text, want)
		}
	}
	if strings.Contains(text, `{"path":"src"}`) {
		t.Errorf("runText shows a succeeded call's arguments:\n%s", text)
	}
}

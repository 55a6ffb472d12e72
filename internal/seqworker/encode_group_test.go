package seqworker

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/seq"
)

// tricky are strings that encoding/json escapes in every way it can.
var tricky = []string{"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f",
	"bad \xff\xfe utf-8", "sep \u2028 \u2029", "é ü 中文 🙂", "µs", "\u00a0nbsp"}

func checkGroupJSON(t *testing.T, g *seq.GroupResult) {
	t.Helper()
	want, werr := json.Marshal(g)
	got, ok := appendGroupJSON(nil, g)
	if werr != nil {
		if ok {
			t.Fatalf("json.Marshal refused %+v (%v) but appendGroupJSON wrote %s", g, werr, got)
		}
		return
	}
	if !ok {
		t.Fatalf("appendGroupJSON refused %+v; json.Marshal wrote %s", g, want)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("appendGroupJSON(%+v)\n got %s\nwant %s", g, got, want)
	}
}

func TestAppendGroupJSONMatchesMarshal(t *testing.T) {
	for _, s := range tricky {
		checkGroupJSON(t, &seq.GroupResult{Name: s, Status: seq.GroupStatus(s), Reason: s, Error: s, ReusedFrom: s,
			Calls: []seq.CallResult{{Tool: s, As: s, Status: seq.CallStatus(s), Error: s}}})
	}
	for _, g := range []*seq.GroupResult{
		{},
		{Calls: []seq.CallResult{}},
		{Name: "g", Status: seq.GroupSucceeded, Started: time.Date(2026, 11, 30, 20, 0, 0, 123456789, time.UTC), Duration: seq.Duration(1500 * time.Microsecond)},
		{Name: "g", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Duration: seq.Duration(-3 * time.Second)},
		{Name: "g", Started: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // json.Marshal refuses it
		{Name: "g", Calls: []seq.CallResult{{Tool: "t", Attempts: -1, Duration: seq.Duration(time.Duration(1<<63 - 1))}, {Tool: "u", Attempts: 1 << 40}}},
		{Name: "g", Calls: []seq.CallResult{{Tool: "t", Status: seq.CallFailed, Error: "item 1 of 3: <b>", ForEach: &seq.FanOut{Items: 3, MaxParallel: 3, Succeeded: 2, Failed: 1, FailedItems: []int{1},
			Details: []seq.ItemResult{{Index: 1, Status: seq.CallFailed, Attempts: 2, Duration: seq.Duration(time.Millisecond), Error: "a \"b\" <c> \u2028"}}}}, {Tool: "u", ForEach: &seq.FanOut{}}}},
		{Name: "g", Calls: []seq.CallResult{{Tool: "t", SentArgs: seq.SentArgs{Args: json.RawMessage(`{"a":[1,"x"],"b":{"c":null}}`)}},
			{Tool: "u", SentArgs: seq.SentArgs{Args: json.RawMessage(`{ "html": "<b>&amp;</b>", "sep": "\u2028  " }`)}},
			{Tool: "v", SentArgs: seq.SentArgs{ArgsClipped: &seq.ClippedArgs{Size: 4000, Head: `{"text":"<é` + "\u2028"}}}, {Tool: "v", SentArgs: seq.SentArgs{ArgsClipped: &seq.ClippedArgs{Size: 30}}},
			{Tool: "w", SentArgs: seq.SentArgs{Args: json.RawMessage(`{"bad":`)}}, // json.Marshal refuses it
			{Tool: "x", ForEach: &seq.FanOut{Items: 1, Failed: 1, Details: []seq.ItemResult{{Index: 0, Status: seq.CallFailed, SentArgs: seq.SentArgs{Args: json.RawMessage(`{"i":0}`)}}}}}}},
		{Name: "w", Status: seq.GroupWaiting, Calls: []seq.CallResult{}, Wait: &seq.Wait{Kind: seq.WaitSignal, Signal: "approve", Out: seq.Signature{"ok": "bool"},
			Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Deadline: time.Date(2026, 1, 3, 3, 4, 5, 0, time.UTC), Outcome: seq.WaitRejected, By: "<ann>", Reason: "no \u2028"}},
	} {
		checkGroupJSON(t, g)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return tricky[rnd.IntN(len(tricky))] }
	for range 2000 {
		g := &seq.GroupResult{Name: pick(), Status: seq.GroupStatus(pick()), Reason: pick(), Error: pick(), Duration: seq.Duration(rnd.Int64N(1e12) - 1e6)}
		if rnd.IntN(2) == 0 {
			g.Started = time.Unix(rnd.Int64N(4e9), rnd.Int64N(1e9)).UTC()
		}
		for range rnd.IntN(10) {
			c := seq.CallResult{Tool: pick(), As: pick(), Status: seq.CallStatus(pick()), Attempts: rnd.IntN(5),
				Duration: seq.Duration(rnd.Int64N(1e10)), Error: pick()}
			switch rnd.IntN(3) {
			case 1:
				v, _ := json.Marshal(map[string]string{pick(): pick()})
				c.Args = v
			case 2:
				c.ArgsClipped = &seq.ClippedArgs{Size: rnd.IntN(1e5), Head: pick()}
			}
			g.Calls = append(g.Calls, c)
		}
		checkGroupJSON(t, g)
	}
}

func FuzzAppendGroupJSON(f *testing.F) {
	for _, s := range tricky {
		f.Add(s, s, int64(12345), 2, int64(1700000000))
	}
	f.Fuzz(func(t *testing.T, a, b string, dur int64, attempts int, started int64) {
		g := &seq.GroupResult{Name: a, Status: seq.GroupStatus(b), Reason: b, Error: a, Duration: seq.Duration(dur),
			Started: time.Unix(started, dur%1e9).UTC(),
			Calls:   []seq.CallResult{{Tool: b, As: a, Status: seq.CallStatus(a), Attempts: attempts, Duration: seq.Duration(-dur), Error: b}}}
		checkGroupJSON(t, g)
	})
}

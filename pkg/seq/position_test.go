package seq

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestCallPositionOf runs a parallel group and a sequential one and reads
// each call's position from its context, also through a context the
// Caller derives (a timeout, a value), as a Caller that bounds its own
// call would; a context the engine did not give has none.
func TestCallPositionOf(t *testing.T) {
	s, err := Parse([]byte(`
name: pos
groups:
  - name: par
    tools: [{tool: a}, {tool: b}, {tool: c}]
  - name: seq
    parallel: false
    tools: [{tool: d}, {tool: e}]
`))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{}
	var mu sync.Mutex
	got := map[string]CallPosition{}
	caller := CallerFunc(func(ctx context.Context, tool string, _ json.RawMessage) (json.RawMessage, error) {
		dctx, cancel := context.WithTimeout(context.WithValue(ctx, key{}, tool), time.Minute)
		defer cancel()
		p, ok := CallPositionOf(dctx)
		if !ok {
			return nil, errors.New("no position in the derived context")
		}
		if dctx.Value(key{}) != tool {
			return nil, errors.New("the derived context lost its own value")
		}
		mu.Lock()
		got[tool] = p
		mu.Unlock()
		return json.RawMessage(`{}`), nil
	})
	res, err := Run(context.Background(), s, caller, nil)
	if err != nil {
		t.Fatalf("run: %v (%+v)", err, res)
	}
	want := map[string]CallPosition{
		"a": {Group: 0, Call: 0, Item: -1, Attempt: 1},
		"b": {Group: 0, Call: 1, Item: -1, Attempt: 1},
		"c": {Group: 0, Call: 2, Item: -1, Attempt: 1},
		"d": {Group: 1, Call: 0, Item: -1, Attempt: 1},
		"e": {Group: 1, Call: 1, Item: -1, Attempt: 1},
	}
	for _, tool := range slices.Sorted(maps.Keys(want)) {
		if got[tool] != want[tool] {
			t.Errorf("call %s: position %+v, want %+v", tool, got[tool], want[tool])
		}
	}
	if _, ok := CallPositionOf(context.Background()); ok {
		t.Error("a context the engine did not give has a position")
	}
}

// TestPositionCtxCancels checks that a call's context ends with its
// parent, and that a context derived from it ends too: the position
// context adds a value and nothing else.
func TestPositionCtxCancels(t *testing.T) {
	parent, cancel := context.WithCancelCause(context.Background())
	pctx := withPosition(parent, CallPosition{Group: 2, Call: 1, Item: 4, Attempt: 3})
	child, stop := context.WithCancel(pctx)
	defer stop()
	cause := errors.New("the group failed")
	cancel(cause)
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a context derived from a call's context did not end with the run's")
	}
	if !errors.Is(context.Cause(child), cause) || !errors.Is(pctx.Err(), context.Canceled) {
		t.Errorf("cause %v, err %v; want the parent's cause and context.Canceled", context.Cause(child), pctx.Err())
	}
	if p, ok := CallPositionOf(child); !ok || p != (CallPosition{Group: 2, Call: 1, Item: 4, Attempt: 3}) {
		t.Errorf("position through a derived context: %+v %v", p, ok)
	}
}

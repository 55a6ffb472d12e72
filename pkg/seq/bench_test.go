package seq

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// benchSequence is 3 groups × 8 tools; each group reads the previous
// group's array slot and a run argument, and every call writes that slot.
func benchSequence(b *testing.B) *Sequence {
	var y strings.Builder
	y.WriteString("name: bench\ngroups:\n")
	for g := 0; g < 3; g++ {
		fmt.Fprintf(&y, "  - name: g%d\n    in: {q: string", g)
		if g > 0 {
			fmt.Fprintf(&y, ", s%d: array", g-1)
		}
		fmt.Fprintf(&y, "}\n    out: {s%d: array}\n    tools:\n", g)
		for t := 0; t < 8; t++ {
			fmt.Fprintf(&y, "      - {tool: t%d, as: s%d, args: {i: %d, q: $args.q, note: \"group %d of $args.q\"}}\n", t, g, t, g)
		}
	}
	s, err := ParseYAML([]byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkEngine measures the engine's overhead: one run of a 3-group ×
// 8-tool sequence against an in-memory caller that returns at once, next
// to a baseline of the same 24 calls made directly with the same parallel
// shape (3 rounds of 8 goroutines). Compare ns/op and allocs/op.
func BenchmarkEngine(b *testing.B) {
	result := json.RawMessage(`{"ok":true}`)
	caller := CallerFunc(func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return result, nil })
	ctx := context.Background()
	b.Run("direct-24-calls", func(b *testing.B) {
		args := json.RawMessage(`{"i":1,"note":"group 0 of x","q":"x"}`)
		b.ReportAllocs()
		for b.Loop() {
			for g := 0; g < 3; g++ {
				var wg sync.WaitGroup
				outs := make([]json.RawMessage, 8)
				for t := 0; t < 8; t++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						outs[t], _ = caller.Call(ctx, "t", args)
					}()
				}
				wg.Wait()
			}
		}
	})
	b.Run("seq-run-3x8", func(b *testing.B) {
		s := benchSequence(b)
		a := map[string]json.RawMessage{"q": json.RawMessage(`"x"`)}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Run(ctx, s, caller, a); err != nil {
				b.Fatal(err)
			}
		}
	})
}

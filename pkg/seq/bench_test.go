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

// BenchmarkEngineForEach measures the engine's overhead per item of a
// for_each call: one run of a group whose one call fans out over 100 items
// (args {i: $item, n: $index}, as the integration benchmark
// BenchmarkSeqworkerForEach) against an in-memory caller that returns at
// once, next to the same 100 calls made directly from 100 goroutines.
func BenchmarkEngineForEach(b *testing.B) {
	caller := CallerFunc(func(_ context.Context, _ string, args json.RawMessage) (json.RawMessage, error) { return args, nil })
	ctx := context.Background()
	items := make([]string, 100)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	list := json.RawMessage("[" + strings.Join(items, ",") + "]")
	b.Run("direct-100-calls", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var wg sync.WaitGroup
			outs := make([]json.RawMessage, len(items))
			for i := range items {
				wg.Add(1)
				go func() {
					defer wg.Done()
					outs[i], _ = caller.Call(ctx, "t", fmt.Appendf(nil, `{"i":%d,"n":%d}`, i, i))
				}()
			}
			wg.Wait()
		}
	})
	b.Run("seq-run-for-each-100", func(b *testing.B) {
		s, err := ParseYAML([]byte(`
name: bench-each
groups:
  - name: g
    in: {items: array<integer>}
    out: {r: array<object>}
    tools:
      - {tool: t, for_each: $args.items, args: {i: $item, n: $index}, as: r}
`))
		if err != nil {
			b.Fatal(err)
		}
		a := map[string]json.RawMessage{"items": list}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Run(ctx, s, caller, a); err != nil {
				b.Fatal(err)
			}
		}
	})
}

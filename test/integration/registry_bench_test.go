package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
)

// regGenTree writes n skills and n sequences (each with two groups) under
// a new temporary directory.
func regGenTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		name := fmt.Sprintf("gen-skill-%04d", i)
		regWrite(b, filepath.Join(dir, "skills", name, "SKILL.md"), regSkillMD(name, "generated skill number "+name,
			"# "+name+"\n\n## Steps\n\n1. do it\n2. check it\n\n## Notes\n\nnone\n"))
		regWrite(b, filepath.Join(dir, "sequences", fmt.Sprintf("gen-%04d.seq.yaml", i)), fmt.Sprintf(
			"name: gen-seq-%04d\ngroups:\n  - name: g%04d-fetch\n    in: {repo: string}\n    out: {meta: object}\n    tools:\n      - tool: github.repo_info\n        args: {repo: $args.repo}\n        as: meta\n  - name: g%04d-post\n    in: {meta: object}\n    tools:\n      - tool: chat.post\n        args: {text: \"$args.meta\"}\n", i, i, i))
	}
	return dir
}

// regWaitAllKeys watches both buckets until they hold n keys each.
func regWaitAllKeys(b *testing.B, js jetstream.JetStream, n int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, bucket := range []string{events.BucketSkills, events.BucketSequences} {
		kv, err := js.KeyValue(ctx, bucket)
		for err != nil {
			time.Sleep(time.Millisecond)
			kv, err = js.KeyValue(ctx, bucket)
			if ctx.Err() != nil {
				b.Fatal(err)
			}
		}
		w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
		if err != nil {
			b.Fatal(err)
		}
		seen := map[string]bool{}
		for len(seen) < n {
			select {
			case e := <-w.Updates():
				if e != nil {
					seen[e.Key()] = true
				}
			case <-ctx.Done():
				b.Fatalf("%s: %d of %d keys visible after 2 minutes", bucket, len(seen), n)
			}
		}
		_ = w.Stop()
	}
}

// BenchmarkRegistryStartup measures the time from registry.Start on a
// fresh server until a KV watcher sees all 1,000 skills and 1,000
// sequences, against a baseline that only puts the same 2,000 values with
// kv.Put (no reading, parsing or validation).
func BenchmarkRegistryStartup(b *testing.B) {
	const n = 1000
	dir := regGenTree(b, n)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	b.Run("baseline-kv-put", func(b *testing.B) {
		values := map[string][]byte{}
		for i := range n {
			values[fmt.Sprintf("gen-skill-%04d", i)] = make([]byte, 900)
		}
		for b.Loop() {
			b.StopTimer()
			srv := natsserver.StartTB(b, natsserver.Options{})
			nc := natsserver.ConnectTB(b, srv)
			js, _ := jetstream.New(nc)
			ctx := context.Background()
			if err := events.Provision(ctx, js, events.Options{}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for _, bucket := range []string{events.BucketSkills, events.BucketSequences} {
				kv, _ := js.KeyValue(ctx, bucket)
				for k, v := range values {
					if _, err := kv.Put(ctx, k, v); err != nil {
						b.Fatal(err)
					}
				}
			}
			regWaitAllKeys(b, js, n)
			b.StopTimer()
			nc.Close()
			srv.Shutdown()
			b.StartTimer()
		}
	})
	b.Run("registry-start", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			srv := natsserver.StartTB(b, natsserver.Options{})
			nc := natsserver.ConnectTB(b, srv)
			reg, err := registry.New(nc, registry.Config{Dir: dir, Logger: quiet, Resync: -1})
			if err != nil {
				b.Fatal(err)
			}
			obs := natsserver.ConnectTB(b, srv)
			js, _ := jetstream.New(obs)
			b.StartTimer()
			if err := reg.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			regWaitAllKeys(b, js, n)
			b.StopTimer()
			_ = reg.Stop(context.Background())
			nc.Close()
			obs.Close()
			srv.Shutdown()
			b.StartTimer()
		}
	})
}

// BenchmarkRegistryPropagation measures the latency from a file write to
// a KV watcher seeing the new value (p50 and p99 over b.N writes): with the
// default settings, with the former 100 ms debounce, and against a baseline
// of kv.Put to the same watcher, all in the same run. The save-burst cases
// write like an editor — a temporary file renamed over the skill, then two
// more writes 1 ms apart — and report the latency from the last write and
// how many KV updates one burst caused (puts/burst: 1 when coalesced).
func BenchmarkRegistryPropagation(b *testing.B) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	report := func(b *testing.B, lat []time.Duration) {
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p := func(q float64) float64 {
			return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
		}
		b.ReportMetric(p(0.50), "p50-ms")
		b.ReportMetric(p(0.99), "p99-ms")
	}
	watch := func(b *testing.B, js jetstream.JetStream) jetstream.KeyWatcher {
		kv, err := js.KeyValue(context.Background(), events.BucketSkills)
		if err != nil {
			b.Fatal(err)
		}
		w, err := kv.Watch(context.Background(), "prop", jetstream.UpdatesOnly())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = w.Stop() })
		return w
	}
	// waitDesc waits for the update holding want and returns how many
	// updates arrived up to it.
	waitDesc := func(b *testing.B, w jetstream.KeyWatcher, want string) int {
		timeout := time.After(10 * time.Second)
		n := 0
		for {
			select {
			case e := <-w.Updates():
				if e == nil {
					continue
				}
				n++
				if containsBytes(e.Value(), want) {
					return n
				}
			case <-timeout:
				b.Fatalf("no update with %q within 10s", want)
			}
		}
	}

	b.Run("baseline-kv-put", func(b *testing.B) {
		srv := natsserver.StartTB(b, natsserver.Options{})
		nc := natsserver.ConnectTB(b, srv)
		js, _ := jetstream.New(nc)
		if err := events.Provision(context.Background(), js, events.Options{}); err != nil {
			b.Fatal(err)
		}
		w := watch(b, js)
		kv, _ := js.KeyValue(context.Background(), events.BucketSkills)
		var lat []time.Duration
		i := 0
		for b.Loop() {
			i++
			want := fmt.Sprintf(`"v%d"`, i)
			start := time.Now()
			if _, err := kv.Put(context.Background(), "prop", []byte(want)); err != nil {
				b.Fatal(err)
			}
			waitDesc(b, w, want)
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	// start runs a registry on a one-skill tree with the given debounce (0:
	// the default) and returns the skill's path and a watcher of its key.
	start := func(b *testing.B, debounce time.Duration) (string, jetstream.KeyWatcher) {
		dir := b.TempDir()
		path := filepath.Join(dir, "prop", "SKILL.md")
		regWrite(b, path, regSkillMD("prop", "v0", "body"))
		srv := natsserver.StartTB(b, natsserver.Options{})
		nc := natsserver.ConnectTB(b, srv)
		reg, err := registry.New(nc, registry.Config{Dir: dir, Debounce: debounce, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if err := reg.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = reg.Stop(context.Background()) })
		js, _ := jetstream.New(natsserver.ConnectTB(b, srv))
		return path, watch(b, js)
	}
	for _, tc := range []struct {
		name     string
		debounce time.Duration
	}{{"default", 0}, {"debounce-100ms", 100 * time.Millisecond}} {
		b.Run("file-write-"+tc.name, func(b *testing.B) {
			path, w := start(b, tc.debounce)
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				want := fmt.Sprintf(`"description":"v%d"`, i)
				start := time.Now()
				regWrite(b, path, regSkillMD("prop", fmt.Sprintf("v%d", i), "body"))
				waitDesc(b, w, want)
				lat = append(lat, time.Since(start))
			}
			report(b, lat)
		})
		b.Run("save-burst-"+tc.name, func(b *testing.B) {
			path, w := start(b, tc.debounce)
			tmp := filepath.Join(filepath.Dir(path), ".SKILL.md.swp")
			var lat []time.Duration
			puts := 0
			i := 0
			for b.Loop() {
				i++
				regWrite(b, tmp, regSkillMD("prop", fmt.Sprintf("v%d-a", i), "body"))
				if err := os.Rename(tmp, path); err != nil {
					b.Fatal(err)
				}
				time.Sleep(time.Millisecond)
				regWrite(b, path, regSkillMD("prop", fmt.Sprintf("v%d-b", i), "body"))
				time.Sleep(time.Millisecond)
				start := time.Now()
				regWrite(b, path, regSkillMD("prop", fmt.Sprintf("v%d", i), "body"))
				puts += waitDesc(b, w, fmt.Sprintf(`"description":"v%d"`, i))
				lat = append(lat, time.Since(start))
			}
			report(b, lat)
			b.ReportMetric(float64(puts)/float64(i), "puts/burst")
		})
	}
}

func containsBytes(b []byte, s string) bool { return strings.Contains(string(b), s) }

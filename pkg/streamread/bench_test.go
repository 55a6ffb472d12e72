package streamread_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/streamread"
)

// BenchmarkReplay reads the history of 1,000 events (about 300 bytes
// each, among 1,000 of another subject) the three ways: STREAM.MSG.GET
// from a cursor (how clients read EVENTS), batch direct gets (KV buckets
// and object stores), and an ordered consumer (what clients did before;
// now only owners may). go test ./pkg/streamread -bench Replay -run ^$
func BenchmarkReplay(b *testing.B) {
	nc, js, ctx := env(b)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}, AllowDirect: true}); err != nil {
		b.Fatal(err)
	}
	body := []byte(fmt.Sprintf(`{"v":1,"kind":"group","run_id":"run-x","status":"succeeded","at":"%s","pad":"%0250d"}`, time.Now().Format(time.RFC3339Nano), 0))
	for range 1000 {
		js.PublishAsync("ev.run.x.group", body)
		js.PublishAsync("ev.other", body)
	}
	<-js.PublishAsyncComplete()
	const n = 1000
	b.Run("msg-get", func(b *testing.B) {
		for b.Loop() {
			f, err := streamread.NewFollower(ctx, nc, streamread.FollowConfig{Stream: "EV", Filters: []string{"ev.run.x.>"}, From: 1, Batch: n})
			if err != nil {
				b.Fatal(err)
			}
			if msgs, err := f.Read(ctx, time.Second); err != nil || len(msgs) != n {
				b.Fatalf("%d, %v", len(msgs), err)
			}
			f.Close()
		}
	})
	b.Run("batch-direct", func(b *testing.B) {
		for b.Loop() {
			f, err := streamread.NewFollower(ctx, nc, streamread.FollowConfig{Stream: "EV", Filters: []string{"ev.run.x.>"}, From: 1, Batch: n, Direct: true})
			if err != nil {
				b.Fatal(err)
			}
			if msgs, err := f.Read(ctx, time.Second); err != nil || len(msgs) != n {
				b.Fatalf("%d, %v", len(msgs), err)
			}
			f.Close()
		}
	})
	b.Run("ordered-consumer", func(b *testing.B) {
		for b.Loop() {
			c, err := js.OrderedConsumer(ctx, "EV", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"ev.run.x.>"}})
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			for got < n {
				batch, err := c.Fetch(n - got)
				if err != nil {
					b.Fatal(err)
				}
				for range batch.Messages() {
					got++
				}
			}
		}
	})
}

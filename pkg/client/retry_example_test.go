package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// ExampleClient_Retry re-runs a succeeded run from its second group
// (WithRetryFrom): the first group is reused, its tool not called again;
// the second group's tool is.
func ExampleClient_Retry() {
	srv, _ := natsserver.Start(natsserver.Options{})
	defer srv.Shutdown()
	nc, _ := srv.Connect()
	defer nc.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, _ := seqworker.New(nc, seqworker.Config{Logger: quiet, FetchWait: 200 * time.Millisecond})
	_ = w.Start(context.Background())
	defer func() { _ = w.Stop(context.Background()) }()
	var fetched, published atomic.Int32
	tools, _ := tool.Serve(nc, tool.ServerConfig{Name: "example-tools"},
		tool.Tool{Name: "fetch", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			fetched.Add(1)
			return map[string]int{"rows": 3}, nil
		}},
		tool.Tool{Name: "publish", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			published.Add(1)
			return "published", nil
		}})
	defer func() { _ = tools.Stop(context.Background()) }()

	s, _ := seq.ParseYAML([]byte(`
name: report
groups:
  - name: fetch
    out: {data: object}
    tools: [{tool: fetch, as: data}]
  - name: publish
    in: {data: object}
    out: {done: string}
    tools: [{tool: publish, args: {data: $args.data}, as: done}]
`))
	inline, _ := seq.Encode(s)
	ctx := context.Background()
	c, _ := client.New(nc)
	wait := func(id string) *events.RunState {
		st, err := c.Wait(ctx, id, client.WaitOptions{Poll: 100 * time.Millisecond})
		if err != nil {
			fmt.Println(err)
			return &events.RunState{}
		}
		return st
	}
	id, _ := c.Start(ctx, events.SeqRunRequest{RunID: "report-1", Inline: inline})
	fmt.Println(wait(id).Status)

	nid, err := c.Retry(ctx, id, "report-2", false, client.WithRetryFrom("publish"))
	if err != nil {
		fmt.Println(err)
		return
	}
	st := wait(nid)
	fmt.Println(st.Status, st.RetryOf, "fetch called", fetched.Load(), "publish called", published.Load())

	_, err = c.Retry(ctx, id, "", false, client.WithRetryFrom("publsh"))
	fmt.Println(err)
	// Output:
	// succeeded
	// succeeded report-1 fetch called 1 publish called 2
	// client: bad request: retry of run "report-1": from "publsh": the run has no such group (did you mean "publish"?); give a group's name or its number as runs show prints it; it may be retried from group 1 "fetch" or 2 "publish"
}

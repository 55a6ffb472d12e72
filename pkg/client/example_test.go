package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// Example starts an inline run, follows it to its end and reads its
// outputs. The embedded server, the seqworker and the tool stand for a
// deployed skillbus; a program that embeds skillbus needs only the
// connection and this package.
func Example() {
	srv, _ := natsserver.Start(natsserver.Options{})
	defer srv.Shutdown()
	nc, _ := srv.Connect()
	defer nc.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, _ := seqworker.New(nc, seqworker.Config{Logger: quiet, FetchWait: 200 * time.Millisecond})
	_ = w.Start(context.Background())
	defer func() { _ = w.Stop(context.Background()) }()
	tools, _ := tool.Serve(nc, tool.ServerConfig{Name: "example-tools"}, tool.Tool{Name: "greet", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct{ Name string }
		_ = json.Unmarshal(args, &a)
		return "hello, " + a.Name, nil
	}})
	defer func() { _ = tools.Stop(context.Background()) }()

	s, _ := seq.ParseYAML([]byte(`
name: hello
groups:
  - name: hello-greet
    in: {who: string}
    out: {greeting: string}
    tools: [{tool: greet, args: {name: $args.who}, as: greeting}]
`))
	inline, _ := seq.Encode(s)

	ctx := context.Background()
	c, _ := client.New(nc)
	id, err := c.Start(ctx, events.SeqRunRequest{RunID: "example-1", Inline: inline, Args: json.RawMessage(`{"who":"world"}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := c.Wait(ctx, id, client.WaitOptions{Poll: 100 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	slots, _ := c.Slots(ctx, st)
	fmt.Println(st.RunID, st.Status, st.Trigger, string(slots["greeting"]))

	page, _ := c.List(ctx, events.SeqListRequest{Status: events.StatusSucceeded})
	fmt.Println(page.Total, page.Runs[0].RunID)

	_, err = c.Cancel(ctx, id, "me", "too late")
	fmt.Println(errors.Is(err, client.ErrConflict))
	// Output:
	// example-1 succeeded manual "hello, world"
	// 1 example-1
	// true
}

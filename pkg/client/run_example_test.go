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
	"github.com/skillbus/skillbus/pkg/tool"
)

// ExampleClient_Run starts an inline run with options, follows its events
// and gets its outcome through the run handle. The sequence is its JSON
// AST as bytes: no import of pkg/seq (or CEL) is needed. The embedded
// server, the seqworker and the tool stand for a deployed skillbus.
func ExampleClient_Run() {
	srv, _ := natsserver.Start(natsserver.Options{})
	defer srv.Shutdown()
	nc, _ := srv.Connect()
	defer nc.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	w, _ := seqworker.New(nc, seqworker.Config{Logger: quiet, FetchWait: 200 * time.Millisecond})
	_ = w.Start(context.Background())
	defer func() { _ = w.Stop(context.Background()) }()
	tools, _ := tool.Serve(nc, tool.ServerConfig{Name: "run-example-tools"}, tool.Tool{Name: "greet", Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct{ Name string }
		_ = json.Unmarshal(args, &a)
		return "hello, " + a.Name, nil
	}})
	defer func() { _ = tools.Stop(context.Background()) }()

	hello := json.RawMessage(`{"name":"hello","groups":[{"name":"hello-greet","in":{"who":"string"},"out":{"greeting":"string"},
		"tools":[{"tool":"greet","args":{"name":"$args.who"},"as":"greeting"}]}]}`)
	ctx := context.Background()
	c, _ := client.New(nc)
	run, err := c.Run(ctx, "", client.WithInline(hello), client.WithRunID("example-run-1"), client.WithArgs(map[string]string{"who": "world"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range run.Events(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.GroupName != "" {
			fmt.Println(ev.Kind, ev.GroupName)
		} else {
			fmt.Println(ev.Kind)
		}
	}
	st, err := run.Get(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.RunID, st.Status, string(st.Slots["greeting"]))

	_, err = run.Cancel(ctx, "me", "too late")
	fmt.Println(errors.Is(err, client.ErrConflict))

	_, err = c.Run(ctx, "hello", client.WithRunID("not a run id"))
	fmt.Println(errors.Is(err, client.ErrInvalid))
	// Output:
	// started
	// group hello-greet
	// finished
	// example-run-1 succeeded "hello, world"
	// true
	// true
}

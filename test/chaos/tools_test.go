package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/tool"
)

// Environment of TestChaosToolsProcess, the tool provider process of the
// suite (this test binary run again).
const (
	envToolsURL = "SKILLBUS_CHAOS_TOOLS_URL" // the NATS server list
	envToolsLog = "SKILLBUS_CHAOS_TOOLS_LOG" // the call log it appends to
)

// stepArgs are chaos.step's arguments: which call of which group of which
// run this is, and how long to work.
type stepArgs struct {
	Run   string `json:"run"`
	Group int    `json:"group"`
	Call  int    `json:"call"`
	MS    int    `json:"ms"`
	Prev  any    `json:"prev,omitempty"`
}

// callLog is one line of the call log: the provider's sequence number of
// the call, the call, and when it started (unix ns).
type callLog struct {
	Seq   int64  `json:"seq"`
	Run   string `json:"run"`
	Group int    `json:"group"`
	Call  int    `json:"call"`
	At    int64  `json:"at"`
	// End is when the call ended (unix ns), on the second line chaos.tick
	// writes for each call (0 on the first, written when it starts).
	End int64 `json:"end,omitempty"`
}

// TestChaosToolsProcess is not a test on its own: it is the tool provider
// process of TestChaos. It serves chaos.step, which logs every call it
// receives (one JSON line, written before it works) and answers after
// the given time, and chaos.tick, the same with a second line when the
// call ends (End set: TestChaosSchedules reads when calls overlap), until
// the process is killed or gets SIGTERM.
func TestChaosToolsProcess(t *testing.T) {
	url := os.Getenv(envToolsURL)
	if url == "" {
		t.Skip("helper process for TestChaos")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	conn, err := natsconn.Dial(&natsconn.Config{URL: url}, "chaos-tools", log)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	if err := conn.WaitConnected(wctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	f, err := os.OpenFile(os.Getenv(envToolsLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var seq atomic.Int64
	var mu sync.Mutex
	schema, _ := tool.SchemaFor[stepArgs]()
	logLine := func(c callLog) error {
		line, _ := json.Marshal(c)
		mu.Lock()
		defer mu.Unlock()
		_, err := f.Write(append(line, '\n'))
		return err
	}
	tick := tool.Tool{
		Name:   "chaos.tick",
		Schema: schema,
		Func: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a stepArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, tool.Errorf("400", "bad arguments: %v", err)
			}
			c := callLog{Seq: seq.Add(1), Run: a.Run, Group: a.Group, Call: a.Call, At: time.Now().UnixNano()}
			if err := logLine(c); err != nil {
				return nil, tool.Errorf("500", "call log: %v", err)
			}
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
			case <-ctx.Done():
			}
			c.End = time.Now().UnixNano()
			if err := logLine(c); err != nil {
				return nil, tool.Errorf("500", "call log: %v", err)
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return map[string]any{"run": a.Run, "group": a.Group, "call": a.Call}, nil
		},
	}
	srv, err := tool.Serve(conn.Conn, tool.ServerConfig{Name: "chaos-tools", MaxConcurrent: 256}, tick, tool.Tool{
		Name:   "chaos.step",
		Schema: schema,
		Func: func(ctx context.Context, raw json.RawMessage) (any, error) {
			var a stepArgs
			if err := json.Unmarshal(raw, &a); err != nil {
				return nil, tool.Errorf("400", "bad arguments: %v", err)
			}
			line, _ := json.Marshal(callLog{Seq: seq.Add(1), Run: a.Run, Group: a.Group, Call: a.Call, At: time.Now().UnixNano()})
			mu.Lock()
			_, err := f.Write(append(line, '\n'))
			mu.Unlock()
			if err != nil {
				return nil, tool.Errorf("500", "call log: %v", err)
			}
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if a.MS >= 1000 {
				// TestChaosLostReply waits for this line to kill the node
				// the reply goes through.
				fmt.Fprintf(os.Stderr, "chaos tools: replying to %s group %d call %d\n", a.Run, a.Group, a.Call)
			}
			return map[string]any{"run": a.Run, "group": a.Group, "call": a.Call}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, "chaos tools ready")
	select {
	case <-ctx.Done():
	case <-conn.Lost():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Stop(sctx)
	_ = conn.Drain(sctx)
}

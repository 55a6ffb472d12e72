package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

func Example() {
	s, _ := natsserver.Start(natsserver.Options{})
	defer s.Shutdown()
	nc, _ := s.Connect()
	defer nc.Close()

	upper := tool.Tool{
		Name:   "text.upper",
		Schema: json.RawMessage(`{"type":"object","required":["text"]}`),
		Func: func(ctx context.Context, args json.RawMessage) (any, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(args, &a); err != nil || a.Text == "" {
				return nil, tool.Errorf("400", "want {\"text\": \"...\"}")
			}
			return map[string]string{"text": strings.ToUpper(a.Text)}, nil
		},
	}
	srv, _ := tool.Serve(nc, tool.ServerConfig{Name: "text-tools"}, upper)
	defer srv.Stop(context.Background())

	c, _ := tool.NewClient(nc)
	out, _ := c.Call(context.Background(), "text.upper", json.RawMessage(`{"text":"hi"}`))
	fmt.Println(string(out))

	_, err := c.Call(context.Background(), "text.upper", json.RawMessage(`{}`))
	var te *toolcall.Error
	fmt.Println(errors.As(err, &te), te.Code)

	_, err = c.Call(context.Background(), "text.lower", nil)
	fmt.Println(errors.Is(err, toolcall.ErrMissing))
	// Output:
	// {"text":"HI"}
	// true 400
	// true
}

// ExampleTyped serves a tool of typed arguments and result: the arguments
// are decoded (and checked against the derived schema) once, before the
// function runs.
func ExampleTyped() {
	s, _ := natsserver.Start(natsserver.Options{})
	defer s.Shutdown()
	nc, _ := s.Connect()
	defer nc.Close()

	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	type sum struct {
		Sum int `json:"sum"`
	}
	add, err := tool.Typed("math.add", "Adds a and b.", func(ctx context.Context, in addArgs) (sum, error) {
		return sum{Sum: in.A + in.B}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, _ := tool.Serve(nc, tool.ServerConfig{Name: "math-tools"}, add)
	defer srv.Stop(context.Background())

	c, _ := tool.NewClient(nc)
	out, _ := c.Call(context.Background(), "math.add", json.RawMessage(`{"a":2,"b":3}`))
	fmt.Println(string(out))

	_, err = c.Call(context.Background(), "math.add", json.RawMessage(`{"a":"two","b":3}`))
	var te *toolcall.Error
	fmt.Println(errors.As(err, &te), te.Code == tool.CodeBadRequest)
	// Output:
	// {"sum":5}
	// true true
}

package toolcall_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/skillbus/skillbus/pkg/toolcall"
)

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"400", true}, {"403", true}, {"404", true}, {"409", true}, {"413", true}, {"415", true}, {"422", true}, {"499", true},
		{"408", false}, {"429", false},
		{"500", false}, {"502", false}, {"503", false}, {"504", false},
		{"200", false}, {"", false}, {"4", false}, {"40", false}, {"4000", false}, {"4x0", false}, {"40a", false}, {"E400", false},
	} {
		if got := toolcall.Permanent(tc.code); got != tc.want {
			t.Errorf("Permanent(%q) = %v; want %v", tc.code, got, tc.want)
		}
	}
	if (&toolcall.Error{}).Permanent() {
		t.Error("an Error without a code (500) is permanent; want transient")
	}
	if !(&toolcall.Error{Code: "404"}).Permanent() {
		t.Error("an Error with code 404 is transient; want permanent")
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  *toolcall.Error
		want string
	}{
		{&toolcall.Error{Tool: "fs.read", Code: "404", Description: "no file"}, `tool "fs.read" failed (code 404): no file`},
		{&toolcall.Error{Tool: "fs.read", Description: "boom"}, `tool "fs.read" failed (code 500): boom`},
		{toolcall.Errorf("400", "bad %s", "path"), `bad path`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v.Error() = %q; want %q", tc.err, got, tc.want)
		}
	}
}

func Example() {
	// A Caller that serves one tool and says "missing" for the others.
	var c toolcall.Caller = toolcall.CallerFunc(func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		switch tool {
		case "math.div":
			var a struct{ X, Y int }
			if err := json.Unmarshal(args, &a); err != nil || a.Y == 0 {
				return nil, &toolcall.Error{Tool: tool, Code: "400", Description: "want {\"x\": N, \"y\": non-zero N}"}
			}
			return json.Marshal(a.X / a.Y)
		}
		return nil, fmt.Errorf("tool %q: %w", tool, toolcall.ErrMissing)
	})
	ctx := context.Background()
	out, _ := c.Call(ctx, "math.div", json.RawMessage(`{"x":7,"y":2}`))
	fmt.Println(string(out))

	_, err := c.Call(ctx, "math.div", json.RawMessage(`{"x":7,"y":0}`))
	var te *toolcall.Error
	fmt.Println(errors.As(err, &te), te.Code, te.Permanent())

	_, err = c.Call(ctx, "math.mod", json.RawMessage(`{}`))
	fmt.Println(errors.Is(err, toolcall.ErrMissing))
	// Output:
	// 3
	// true 400 true
	// true
}

package seq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skillbus/skillbus/pkg/seq"
)

func ExampleParseYAML() {
	s, err := seq.ParseYAML([]byte(`
name: greet
groups:
  - name: lookup
    in: {user: string}
    out: {profile: object}
    tools: [{tool: users.get, args: {id: $args.user}, as: profile}]
  - name: send
    in: {profile: object, channel: string}
    tools: [{tool: chat.post, args: {to: $args.channel, text: "hello $args.profile"}}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Name, s.Signature)
	// Output: greet (channel: string, user: string)
}

func ExampleParseJSON_errors() {
	_, err := seq.ParseJSON([]byte(`{"name": "s", "groups": [
	  {"name": "fetch", "on_error": "retry", "retries": 12,
	   "tools": "{\"tool\":\"http.get\",\"args\":{\"url\":\"$args.url\"}};{\"tool\":\"x\"}"}]}`))
	var errs seq.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			fmt.Println(e)
		}
	}
	fmt.Println(errors.Is(err, seq.ErrSyntax), errors.Is(err, seq.ErrInvalidValue))
	// Output:
	// group 1 "fetch": retries: got 12; retries must be from 1 to 10 (the number of further attempts after the first)
	// group 1 "fetch": tools: tool 2 (the last one) is not followed by `;`; end every tool call with `;`, e.g. {"tool":"a"};
	// true true
}

func ExampleRun() {
	s, _ := seq.ParseYAML([]byte(`
name: add
groups:
  - name: sum
    in: {a: integer, b: integer}
    out: {total: integer}
    tools: [{tool: math.add, args: {x: $args.a, y: $args.b}, as: total}]
`))
	caller := seq.CallerFunc(func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		var in struct{ X, Y int }
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, err
		}
		return json.Marshal(in.X + in.Y)
	})
	r, err := seq.Run(context.Background(), s, caller, map[string]json.RawMessage{"a": json.RawMessage("2"), "b": json.RawMessage("3")})
	fmt.Println(r.Status, string(r.Slots["total"]), err)
	// Output: succeeded 5 <nil>
}

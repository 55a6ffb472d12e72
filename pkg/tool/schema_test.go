package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

type copyArgs struct {
	From  string   `json:"from" jsonschema:"source path"`
	To    string   `json:"to" jsonschema:"destination path"`
	Force bool     `json:"force,omitempty"`
	Tags  []string `json:"tags,omitempty"`
	Limit int      `json:"limit,omitempty"`
	Opts  struct {
		Mode string `json:"mode,omitempty"`
	} `json:"opts,omitzero"`
}

// TestSchemaIsEnforced serves a tool whose schema is derived from a Go
// type and checks that calls that do not fit are answered with 400 naming
// the argument, without running the tool.
func TestSchemaIsEnforced(t *testing.T) {
	schema, err := tool.SchemaFor[copyArgs]()
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	cp := tool.Tool{Name: "fs.copy", Schema: schema, Func: func(ctx context.Context, args json.RawMessage) (any, error) {
		ran.Add(1)
		return "copied", nil
	}}
	f := withServer(t, natsserver.Options{}, cp)
	cases := []struct{ args, want string }{
		{`{"from":"a"}`, `missing argument "to"`},
		{`{"from":"a","to":7}`, `"to": got an integer (7), want a string`},
		{`{"from":"a","to":"b","force":"yes"}`, `"force": got a string ("yes"), want a boolean`},
		{`{"from":"a","to":"b","tags":["x",2]}`, `"tags[]": got an integer (2), want a string`},
		{`{"from":"a","to":"b","limit":1.5}`, `"limit": got a number (1.5), want an integer`},
		{`{"from":"a","to":"b","opts":{"mode":1}}`, `"opts.mode": got an integer (1), want a string`},
		{`{"from":"a","to":"b","dry_run":true}`, `unknown argument "dry_run"; the tool takes "force", "from", "limit", "opts", "tags", "to"`},
		{`{"from":"a","to":"b","opts":{"x":1}}`, `"opts": unknown argument "x"; the tool takes "mode"`},
		{`{"from":"a","to":"b","tags":{"a":1}}`, `"tags": got an object, want null or an array`},
	}
	for _, tc := range cases {
		_, err := f.client.Call(context.Background(), "fs.copy", json.RawMessage(tc.args))
		var te *tool.Error
		if !errors.As(err, &te) || te.Code != "400" || !strings.Contains(te.Description, tc.want) {
			t.Errorf("Call(fs.copy, %s) = %v; want code 400 with %q", tc.args, err, tc.want)
		}
	}
	if ran.Load() != 0 {
		t.Errorf("the tool ran %d times on arguments its schema refuses", ran.Load())
	}
	if res, err := f.client.Call(context.Background(), "fs.copy", json.RawMessage(`{"from":"a","to":"b","tags":["x"],"opts":{"mode":"fast"}}`)); err != nil || string(res) != `"copied"` {
		t.Errorf("Call(fs.copy) with fitting arguments = %s, %v", res, err)
	}
}

func TestCheckKnown(t *testing.T) {
	schema, _ := tool.SchemaFor[copyArgs]()
	s, err := tool.CompileSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(v string) bool { return strings.Contains(v, "$args.") }
	for _, tc := range []struct{ args, want string }{
		{`{"from":"$args.src","to":"$args.dst"}`, ""},
		{`{"from":"$args.src"}`, `missing argument "to"`},
		{`{"from":"$args.src","to":"b","limit":"$args.n"}`, ""},
		{`{"from":"$args.src","to":"b","limit":"ten"}`, `"limit": got a string ("ten"), want an integer`},
		{`{"from":"a","to":"b","tags":["$args.t",3]}`, ""},
		{`{"from":"a","to":"b","opts":{"mode":"$args.m"}}`, ""},
		{`{"from":"a","to":"b","opts":{"mode":5}}`, `"opts.mode"`},
		{`{"from":"in $args.dir/x","to":"b","extra":1}`, `unknown argument "extra"`},
		{`{"from":null,"to":"b"}`, `"from": got null, want a string`},
	} {
		err := s.CheckKnown(json.RawMessage(tc.args), ref)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "reflect")) {
			t.Errorf("CheckKnown(%s) = %v; want %q", tc.args, err, tc.want)
		}
	}
}

func TestBadSchemaIsRefused(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, s)
	ok := func(ctx context.Context, a json.RawMessage) (any, error) { return nil, nil }
	for _, bad := range []string{
		`{"type":"object","properties":{"a":{"minimum":"x"}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`,
	} {
		_, err := tool.Serve(nc, tool.ServerConfig{}, tool.Tool{Name: "x", Func: ok, Schema: json.RawMessage(bad)})
		if !errors.Is(err, tool.ErrConfig) || !errors.Is(err, tool.ErrBadSchema) {
			t.Errorf("Serve with schema %s = %v; want ErrConfig and ErrBadSchema", bad, err)
		}
	}
	srv, err := tool.Serve(nc, tool.ServerConfig{}, tool.Tool{Name: "x", Func: ok, Schema: json.RawMessage(`{"type":"nonsense"}`), Unvalidated: true})
	if err != nil {
		t.Fatalf("Serve with Unvalidated = %v; want the schema published unchecked", err)
	}
	_ = srv.Stop(context.Background())
}

func TestConflicts(t *testing.T) {
	ep := func(name, id, fp, schema string) tool.Endpoint {
		e := tool.Endpoint{Tool: name, Provider: "p", ProviderID: id, Version: "1.0.0", Fingerprint: fp, Config: "cfg " + fp}
		if schema != "" {
			e.Schema = json.RawMessage(schema)
		}
		return e
	}
	eps := []tool.Endpoint{
		ep("a", "1", "x", `{}`), ep("a", "2", "x", `{}`), // agree
		ep("b", "1", "x", ""), ep("b", "3", "y", ""), // fingerprints differ
		ep("c", "1", "x", `{"type":"object"}`), ep("c", "4", "x", `{}`), // schemas differ
		ep("d", "5", "", ""), ep("d", "6", "z", ""), // one publishes none
		ep("e", "7", "", ""), ep("e", "8", "", ""), // neither publishes one: nothing to tell
	}
	var got []string
	for _, c := range tool.Conflicts(eps) {
		got = append(got, c.Tool)
		if !strings.Contains(c.String(), "disagree") {
			t.Errorf("Conflict.String() = %q", c.String())
		}
	}
	if strings.Join(got, ",") != "b,c,d" {
		t.Errorf("Conflicts = %v; want b, c, d", got)
	}
}

// FuzzCheck checks any arguments against a schema: Check and CheckKnown
// never panic, and refuse only with a code-400 *Error that names no Go
// type.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"from":"a","to":"b"}`, `{"from":7}`, `{"tags":[1,{"x":null}]}`, `{"opts":{"mode":"$args.m"},"x":1}`, `[1]`, `"s"`, `{"from":"a","to":"b","limit":1e400}`} {
		f.Add(s)
	}
	schema, _ := tool.SchemaFor[copyArgs]()
	s, err := tool.CompileSchema(schema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, args string) {
		for _, err := range []error{
			s.Check(json.RawMessage(args)),
			s.CheckKnown(json.RawMessage(args), func(v string) bool { return strings.Contains(v, "$") }),
		} {
			if err == nil {
				continue
			}
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != "400" {
				t.Fatalf("Check(%q) = %v; want nil or a code-400 *Error", args, err)
			}
			if strings.Contains(te.Description, "interface {}") || strings.Contains(te.Description, "map[") && !strings.Contains(args, "map[") {
				t.Fatalf("Check(%q) = %q; names a Go type", args, te.Description)
			}
		}
	})
}

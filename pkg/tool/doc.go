// Package tool serves Go functions as skillbus tools and calls tools over
// NATS (docs/tools.md).
//
// A tool is a request/reply endpoint on tool.<name>: the request is a JSON
// object of arguments, the reply the JSON result, or an error carried in
// the NATS micro error headers (Nats-Service-Error-Code,
// Nats-Service-Error). Providers are NATS micro services, so `nats micro ls`
// lists them, `nats micro info` shows each tool's argument schema (endpoint
// metadata "schema"), and replicas of a provider share calls through a
// queue group. The package links nats.go, OpenTelemetry's API,
// jsonschema-go and pkg/toolcall only: a tool provider written in Go does
// not pull in the sequence language.
//
// # Serving a tool
//
// Describe the arguments as a Go struct, derive the JSON Schema from it,
// and serve a Func:
//
//	type readArgs struct {
//		Path     string `json:"path" jsonschema:"file relative to the root"`
//		MaxBytes int    `json:"max_bytes,omitempty"`
//	}
//	schema, err := tool.SchemaFor[readArgs]()
//	...
//	srv, err := tool.Serve(nc, tool.ServerConfig{Name: "fs-tools"},
//		tool.Tool{Name: "fs.read", Description: "Read a file.", Schema: schema,
//			Func: func(ctx context.Context, args json.RawMessage) (any, error) {
//				var in readArgs
//				if err := json.Unmarshal(args, &in); err != nil {
//					return nil, tool.Errorf("400", "bad arguments: %v", err)
//				}
//				...
//				return result, nil
//			}})
//	defer srv.Stop(ctx)
//
// Every call is checked against the Schema before Func runs: arguments
// that do not fit are answered with code "400" naming the argument and
// what was expected (`"max_bytes": got a string ("ten"), want an integer`),
// and Func never sees them. A Func returns any JSON-marshalable value (a
// json.RawMessage is sent as is) or an error; return an *Error (Errorf) to
// choose the code, any other error is code "500" ("504" when it wraps
// context.DeadlineExceeded). ctx ends at the caller's deadline (the
// Skillbus-Deadline header) or when Stop gives up on the call.
//
// # How calls run
//
// Calls of a tool run on kept worker goroutines, at most
// ServerConfig.MaxConcurrent at once; a tool that has been quick (its last
// 64 calls each under 100 µs) runs on the subscription's own goroutine,
// as a plain NATS callback does, until a slower call sends it back to
// workers. No span is started while no OpenTelemetry TracerProvider is
// installed; the caller's trace context is still passed on. Together this
// keeps a call close to a raw NATS request/reply (BenchmarkCall measures
// both in one run).
//
// # Metrics
//
// A Server counts the calls it answers by tool and status ("ok" or the
// error code it replied: MetricCalls, skillbus.tool.calls) and times them
// from delivery to reply (MetricProcessDuration, the OpenTelemetry
// messaging convention's messaging.process.duration), on
// ServerConfig.Meters or OpenTelemetry's global meter provider. Counting
// is an atomic add and one histogram record on attribute sets built once
// per tool: nothing is allocated per call, and with no SDK installed both
// are no-ops (BenchmarkRecord; docs/operations.md lists the metrics).
//
// # Instances that disagree
//
// Replicas share calls at random, so they must answer alike. A provider
// whose answers depend on its configuration (a root directory, an
// allow-list) puts a hash of it in ServerConfig.Metadata under
// MetadataFingerprint (and a readable form under MetadataConfig);
// Conflicts, over the endpoints Discover finds, reports tools whose
// instances have different fingerprints or schemas, and Server.Conflicts
// those that involve a server's own tools.
//
// # Calling a tool
//
// Client implements toolcall.Caller (pkg/toolcall, which pkg/seq's Caller
// is). A call with no provider fails fast with an error wrapping
// toolcall.ErrMissing ("no responders" — the engine's `missing` policy
// decides); a provider's error reply is an *Error (toolcall.Error) with its
// code and the tool's name; arguments larger than the server's max_payload
// fail before sending with ErrPayloadTooLarge.
//
//	c, _ := tool.NewClient(nc)
//	out, err := c.Call(ctx, "fs.read", json.RawMessage(`{"path":"README.md"}`))
//	var te *tool.Error
//	if errors.As(err, &te) && te.Permanent() { ... } // 4xx other than 408/429
//
// A call outlives its connection's faults (docs/tools.md, "Across NATS
// faults"): replies arrive on one subscription of the Client, a call in
// flight at a reconnect is sent again on the same reply subject (so a tool
// may run twice for one call: at-least-once), a tool that answered within
// the last minute and has no responders is waited for up to the missing
// grace (WithMissingGrace), and a deadline reached after a lost
// connection is an ErrInterrupted rather than a plain timeout. A call
// also asks its provider for keep-alives (ProgressHeader; a Server sends
// them for a call not answered within 100 ms): one that falls silent is
// sent again, and one that no provider takes up again within the lost
// grace fails with ErrProviderLost, a code "503" tool error
// (docs/tools.md, "Keep-alives"). A call
// whose context is cancelled tells its provider (tool.<name>.$cancel),
// which cancels the tool function's context (docs/tools.md, "Cancel").
//
// Before calling, a program can check arguments against a published schema
// itself: CompileSchema and ArgsSchema.Check, or ArgsSchema.CheckKnown for
// arguments some of whose values are only known later (`skillbus validate`
// checks a sequence's literal arguments that way).
package tool

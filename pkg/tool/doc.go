// Package tool serves Go functions as skillbus tools and calls tools over
// NATS (docs/tools.md).
//
// A tool is a request/reply endpoint on tool.<name>: the request is a JSON
// object of arguments, the reply the JSON result, or an error carried in
// the NATS micro error headers (Nats-Service-Error-Code,
// Nats-Service-Error). Providers are NATS micro services, so `nats micro ls`
// lists them, `nats micro info` shows each tool's argument schema (endpoint
// metadata "schema"), and replicas of a provider share calls through a
// queue group.
//
// Serve side:
//
//	srv, err := tool.Serve(nc, tool.ServerConfig{Name: "fs-tools"},
//		tool.Tool{Name: "fs.read", Func: readFile, Schema: readSchema})
//	defer srv.Stop(ctx)
//
// A Func returns any JSON-marshalable value (a json.RawMessage is sent as
// is) or an error; return *Error (Errorf) to choose the error code, any
// other error is code "500".
//
// Call side: Client implements toolcall.Caller (pkg/toolcall, which pkg/seq's
// Caller is). A call with no provider fails fast with an error wrapping
// toolcall.ErrMissing ("no responders" — the engine's `missing` policy
// decides); a provider's error reply is an *Error (toolcall.Error) with its
// code and the tool's name; arguments larger than the server's max_payload
// fail before sending with ErrPayloadTooLarge.
//
// The package links nats.go, OpenTelemetry's API and pkg/toolcall only: a
// tool provider written in Go does not pull in the sequence language.
package tool

// Package mcpserver serves skillbus to agent runtimes as a Model Context
// Protocol server (`skillbus mcp serve`, docs/mcp.md): the model-facing
// tools (seq_create, seq_list, seq_show, seq_delete, seq_run, seq_status,
// seq_cancel, seq_retry, seq_call, skill_list, skill_info), the skills as prompts and
// as resources (skill://NAME, skill://NAME/SECTION), and optionally the
// cluster's own tool.* tools under their published schemas.
//
// It is the other direction of internal/mcpbridge, which serves an MCP
// server's tools on NATS. Everything here goes through one NATS connection
// and pkg/client — the registry's and the seqworker's endpoints — so what
// the model may do is what that connection's credentials allow
// (docs/operations.md); Config.ReadOnly leaves out every tool that changes
// or runs something.
//
// # The model-facing contract
//
// Each tool has a JSON Schema derived from a Go type of this package
// (github.com/google/jsonschema-go), a description written for a model
// (what it does, when to use it, one example) and errors a model can act
// on: a tool error result (isError) whose text says what is wrong, where,
// and how to fix it — for an invalid sequence every problem, as `skillbus
// validate` prints them (docs/sequences.md, "How problems are reported").
// Unknown or mistyped arguments are errors naming the arguments the tool
// takes, never ignored.
//
// # Lifecycle
//
// New builds the server (nothing is sent on NATS); Start reads the skills
// (prompts and resources), subscribes to the registry's events to follow
// them, and discovers the re-exported tools; MCP returns the
// *mcp.Server to run over stdio (Server.Run) or serve over streamable HTTP
// (HTTPHandler). Stop ends the goroutines Start began; the connection is
// the caller's.
package mcpserver

package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxStdioLine bounds one line (one JSON-RPC message) read over stdio:
// the SDK's own bound (mcp.DefaultMaxLineLength, 16 MiB). A longer line is
// skipped and answered with a parse error.
const MaxStdioLine = mcp.DefaultMaxLineLength

// StdioTransport returns the transport of `skillbus mcp serve` over a
// process's standard input and output: newline-delimited JSON-RPC 2.0, as
// the MCP stdio transport specifies and the SDK's mcp.IOTransport reads it,
// except that one bad line does not end the session. The SDK ends the
// session (and so the process) at the first line that does not decode; a
// client's bug or a stray print of a wrapper script would take every
// skillbus tool away from the agent. Here a line that is not JSON, or
// longer than MaxStdioLine, is answered with a JSON-RPC error -32700
// "Parse error", and a JSON line that is not a JSON-RPC message with
// -32600 "Invalid Request" (with the line's id when it has one, else
// null, as JSON-RPC 2.0 section 5 asks), and skipped; so is a JSON array
// (a batch: MCP 2025-06-18 has none, and the SDK ends the session on one);
// blank lines are skipped. in's end ends the session as before. out receives whole
// messages, one Write each, never interleaved.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go filterLines(in, pw, w)
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// lockedWriter writes each message whole: the SDK's replies and the
// filter's error replies share stdout.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close leaves the underlying writer open: stdout outlives the session.
func (l *lockedWriter) Close() error { return nil }

// filterLines copies the JSON-RPC lines of in to pw and answers the others
// on out (StdioTransport). It closes pw when in ends or fails.
func filterLines(in io.Reader, pw *io.PipeWriter, out io.Writer) {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(br, MaxStdioLine)
		if t := bytes.TrimSpace(line); len(t) > 0 || tooLong {
			if reply := checkLine(t, tooLong); reply != nil {
				if _, werr := out.Write(reply); werr != nil {
					pw.CloseWithError(werr)
					return
				}
			} else if _, werr := pw.Write(append(t, '\n')); werr != nil {
				return // the session ended
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			pw.CloseWithError(err)
			return
		}
	}
}

// readLine reads up to the next newline. A line over limit bytes is read
// to its end and dropped: line is nil and tooLong true.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// checkLine returns the error reply for a line that is not one JSON-RPC
// message, or nil for one to pass on.
func checkLine(t []byte, tooLong bool) []byte {
	if tooLong {
		return errorReply(nil, jsonrpc.CodeParseError, fmt.Sprintf("Parse error: the line is longer than %d bytes, the most one message may have; it was skipped", MaxStdioLine))
	}
	if !json.Valid(t) {
		return errorReply(nil, jsonrpc.CodeParseError, "Parse error: the line is not JSON; each line must hold one JSON-RPC 2.0 message; it was skipped")
	}
	if t[0] == '[' {
		// A batch. MCP 2025-06-18 has none, and the SDK ends the session
		// on one under that version (and on any array that is not a batch
		// of messages), so arrays are refused here whatever the version.
		return errorReply(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a JSON array (a batch) is not accepted; send each JSON-RPC message on its own line; it was skipped")
	}
	if _, err := jsonrpc.DecodeMessage(t); err != nil {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(t, &probe)
		id := probe.ID
		if !validID(id) {
			id = nil
		}
		return errorReply(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: %v; it was skipped", err))
	}
	return nil
}

// validID reports whether raw is a JSON-RPC id: a string or a number.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// errorReply is a JSON-RPC 2.0 error response line with id (null when nil).
func errorReply(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return append(b, '\n')
}

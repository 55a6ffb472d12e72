package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one line of the server's standard output, as the SDK's
// own stdio transport does (mcp.DefaultMaxLineLength).
const maxLine = mcp.DefaultMaxLineLength

// commandTransport runs the MCP server and talks to it over its standard
// input and output with newline-delimited JSON, like the SDK's
// mcp.CommandTransport, except that lines of standard output that are not
// JSON — a banner, a log line printed before a reply — are skipped and
// reported to warn instead of ending the session (the MCP stdio transport
// says a server must not write anything else to stdout; servers do).
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration     // how long Close waits for the server to exit before SIGTERM, then SIGKILL
	warn      func(line string) // called with each skipped line (cut to 200 bytes)
	exited    func(err error)   // called once with the process's exit status
}

// Connect starts the command.
func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: t.cmd, stdin: stdin, terminate: t.terminate, waited: make(chan struct{})}
	go func() {
		p.err = t.cmd.Wait()
		close(p.waited)
		if t.exited != nil {
			t.exited(p.err)
		}
	}()
	filter := &lineFilter{r: bufio.NewReaderSize(stdout, 64<<10), warn: t.warn}
	return (&mcp.IOTransport{Reader: io.NopCloser(filter), Writer: p}).Connect(ctx)
}

// process is the server's standard input, closed the way the MCP stdio
// transport asks: close stdin, wait for the server to exit, then SIGTERM,
// then SIGKILL.
type process struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
	waited    chan struct{} // closed when cmd.Wait has returned; err is set
	err       error
	closeOnce sync.Once
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

func (p *process) Close() error {
	p.closeOnce.Do(func() {
		_ = p.stdin.Close()
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			select {
			case <-p.waited:
				return
			case <-time.After(p.terminate):
			}
			_ = p.cmd.Process.Signal(sig)
		}
		<-p.waited
	})
	return nil
}

// lineFilter passes on the lines of r that are JSON (an object or a batch
// array) and reports the others to warn.
type lineFilter struct {
	r       *bufio.Reader
	warn    func(line string)
	pending []byte // the rest of a JSON line not yet read
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.readLine()
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if (t[0] == '{' || t[0] == '[') && json.Valid(t) {
				f.pending = append(t, '\n')
			} else if f.warn != nil {
				f.warn(clip(string(t), 200))
			}
		}
		if err != nil && len(f.pending) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine reads one line (without its cap: a longer line is dropped with
// a warning, keeping what follows it).
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	dropping := false
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !dropping {
			if len(line)+len(chunk) > maxLine {
				dropping, line = true, nil
				if f.warn != nil {
					f.warn(fmt.Sprintf("(a line of more than %d bytes)", maxLine))
				}
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// clip cuts s to n bytes on a rune boundary, marking a cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

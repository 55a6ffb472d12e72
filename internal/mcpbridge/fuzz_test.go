package mcpbridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// FuzzLineFilter feeds arbitrary server output through the stdout filter:
// what comes out is exactly the input's lines that are JSON objects or
// arrays (trimmed, one per line), and every other non-blank line is
// reported.
func FuzzLineFilter(f *testing.F) {
	for _, s := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
		"kitchen-sink server starting\n{\"a\":1}\n",
		"  {\"a\":1}  \r\n[1,2]\nnot json {\n{broken\n\n",
		"{\"a\":\n1}\n",
		"no newline at the end {\"a\":1}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var warned []string
		lf := &lineFilter{r: bufio.NewReaderSize(strings.NewReader(in), 16), warn: func(l string) { warned = append(warned, l) }}
		out, err := io.ReadAll(lf)
		if err != nil {
			t.Fatalf("ReadAll: %v", err)
		}
		var want bytes.Buffer
		skipped := 0
		for _, line := range strings.SplitAfter(in, "\n") {
			l := bytes.TrimSpace([]byte(line))
			switch {
			case len(l) == 0:
			case (l[0] == '{' || l[0] == '[') && json.Valid(l):
				want.Write(l)
				want.WriteByte('\n')
			default:
				skipped++
			}
		}
		if !bytes.Equal(out, want.Bytes()) {
			t.Fatalf("filter(%q) = %q; want %q", in, out, want.Bytes())
		}
		if len(warned) != skipped {
			t.Fatalf("filter(%q) warned %d times; want %d", in, len(warned), skipped)
		}
	})
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// EnvNATSURL names the environment variable holding the NATS server URL(s)
// (comma-separated for a cluster), as the nats CLI reads it.
const EnvNATSURL = "NATS_URL"

// requestTimeout bounds one request to a skillbus service.
const requestTimeout = 15 * time.Second

// errNoURL explains what to do when a command needs NATS and NATS_URL is not
// set.
var errNoURL = errors.New("NATS_URL is not set: this command talks to a running skillbus. " +
	"Start one on this machine with `skillbus dev` (it prints the URL to export), " +
	"or export NATS_URL=nats://HOST:4222 for your cluster")

// connect opens a NATS connection to NATS_URL, named after the command;
// opts are added to (and may override) the defaults.
func connect(command string, opts ...nats.Option) (*nats.Conn, error) {
	url := os.Getenv(EnvNATSURL)
	if url == "" {
		return nil, errNoURL
	}
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("skillbus " + command), nats.Timeout(5 * time.Second)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to NATS at %s (NATS_URL): %v; check the URL, or start a local stack with `skillbus dev`", url, err)
	}
	return nc, nil
}

// withConn runs fn with a connection to NATS_URL, printing a connection
// problem on stderr (exit 1). The connection is drained afterwards.
func withConn(env Env, command string, fn func(nc *nats.Conn) int) int {
	nc, err := connect(command)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus %s: %v\n", command, err)
		return ExitFailure
	}
	defer drainWait(nc, 10*time.Second)
	return fn(nc)
}

// drainWait drains nc — subscriptions finish what they received, pending
// publishes are flushed — and waits until it is closed, at most d.
func drainWait(nc *nats.Conn, d time.Duration) {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	select {
	case <-closed:
	case <-time.After(d):
		nc.Close()
	}
}

// request sends req (JSON-encoded unless it is []byte) to subject and
// decodes the reply into resp (when not nil). Errors: *toolcall.Error for an
// error reply (its Code and Description), a clear message for no responders (which service to start)
// and timeouts.
func request(ctx context.Context, nc *nats.Conn, subject string, req, resp any) error {
	var data []byte
	switch v := req.(type) {
	case []byte:
		data = v
	case events.Message:
		b, err := events.Encode(v)
		if err != nil {
			return err
		}
		data = b
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		data = b
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	msg, err := events.Request(ctx, nc, &nats.Msg{Subject: subject, Data: data})
	if err != nil {
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return fmt.Errorf("no service answers on %s: %s", subject, whoServes(subject))
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
			return fmt.Errorf("no reply on %s within %v: the service is busy or stuck; check its logs", subject, requestTimeout)
		}
		return err
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		text := msg.Header.Get(micro.ErrorHeader)
		var body struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(msg.Data, &body) == nil && body.Error != "" {
			text = body.Error
		}
		return &toolcall.Error{Code: code, Description: text}
	}
	if resp == nil {
		return nil
	}
	if raw, ok := resp.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], msg.Data...)
		return nil
	}
	if m, ok := resp.(events.Message); ok {
		return events.Decode(msg.Data, m)
	}
	return json.Unmarshal(msg.Data, resp)
}

// whoServes says which process serves a subject, for "no responders".
func whoServes(subject string) string {
	switch {
	case strings.HasPrefix(subject, events.RegistryPrefix):
		return "the registry is not running; start `skillbus dev` or `registry` against this NATS"
	case strings.HasPrefix(subject, events.SeqPrefix):
		return "no seqworker is running; start `skillbus dev` or `seqworker` against this NATS"
	case strings.HasPrefix(subject, events.SkillfacePrefix):
		return "skillface is not running; start `skillbus dev` or `skillface` against this NATS"
	case strings.HasPrefix(subject, events.ToolPrefix):
		return "no provider serves this tool; list the tools with `skillbus tools`"
	}
	return "nobody listens"
}

// parseInterleaved parses args with fs, allowing flags after positional
// arguments (`run FILE --arg k=v`); everything after "--" is positional. It
// returns the positional arguments in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	return pos, nil
}

// stringList is a repeatable string flag; each value may also be a
// comma-separated list when split is true.
type stringList struct {
	values []string
	split  bool
}

func (s *stringList) String() string { return strings.Join(s.values, ",") }

func (s *stringList) Set(v string) error {
	if !s.split {
		s.values = append(s.values, v)
		return nil
	}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			s.values = append(s.values, p)
		}
	}
	return nil
}

// newFlags returns a flag set that prints errors and the command's usage on
// stderr.
func newFlags(env Env, name string, c func() command) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() { fmt.Fprint(env.Stderr, c().usage) }
	return fs
}

// flagExit maps a flag parse error onto an exit code: --help is success.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

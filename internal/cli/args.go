package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/pkg/seq"
)

// argsUsage is the shared help text on how `--arg` values are read.
const argsUsage = `  --arg KEY=VALUE is read by the type KEY has in the signature (shown by
  ` + "`skillbus validate FILE`" + `): for a string the VALUE is taken literally
  (--arg root=. , --arg title="two words"); for bool it is true or false; for
  integer and number a JSON number; for object, array and array<T> a JSON
  value ('--arg tags=["a","b"]'). null is accepted for every type but string.
  --args-file FILE reads a JSON object of arguments, each value a JSON value
  of its declared type (null fits every type), each key once; --args-file -
  reads it from standard input. --arg wins over it (a note on stderr names
  the file value it replaced). Each --arg KEY may be given once.
`

// The rules live in internal/runargs, shared with the web console's run
// form (internal/console), so both check arguments the same way.

// buildArgs turns --args-file (nil: not given; readArgsFile) and --arg
// values into run arguments for a signature (runargs.Build).
func buildArgs(want map[string]seq.Type, file *runargs.File, kvs []string, requireAll bool) (map[string]json.RawMessage, error) {
	return runargs.Build(want, file, kvs, requireAll)
}

// noteShadowed prints on stderr, as "skillbus COMMAND: note: …", each
// --arg that replaces a key of the --args-file (runargs.Shadowed): the
// --arg wins, and the user sees which file value it replaced.
func noteShadowed(env Env, command string, file *runargs.File, kvs []string) {
	for _, n := range runargs.Shadowed(file, kvs) {
		fmt.Fprintf(env.Stderr, "skillbus %s: note: %s\n", command, n)
	}
}

// readArgsFile reads --args-file NAME: the file, or standard input for
// "-". It returns nil for "" (not given). Errors name the flag and say why
// the file cannot be read (a usage error: README.md, "Exit codes").
func readArgsFile(env Env, name string) (*runargs.File, error) {
	if name == "" {
		return nil, nil
	}
	var data []byte
	var err error
	if name == "-" {
		if env.Stdin == nil {
			return nil, errors.New("--args-file -: no standard input to read")
		}
		data, err = io.ReadAll(io.LimitReader(env.Stdin, maxArgsFile+1))
	} else {
		data, err = readLimited(name, maxArgsFile+1)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("--args-file %s: %v", name, err)
	}
	if len(data) > maxArgsFile {
		return nil, fmt.Errorf("--args-file %s: more than %d MiB; run arguments this large belong in a file a tool reads", name, maxArgsFile>>20)
	}
	return &runargs.File{Name: name, Data: data}, nil
}

// maxArgsFile bounds --args-file: 8 MiB, well above what a run request
// may carry (1 MiB by default).
const maxArgsFile = 8 << 20

// checkPayload refuses a request of n bytes (what: "the run request")
// that the connected NATS server would refuse: more than its max_payload.
// nats.go says only "maximum payload exceeded"; this says the size, the
// limit and the fixes (docs/runs.md, "Large state"). file is the
// --args-file, nil when none was given.
func checkPayload(nc *nats.Conn, what string, n int, file *runargs.File) error {
	limit := nc.MaxPayload()
	if limit <= 0 || int64(n) <= limit {
		return nil
	}
	from := "its arguments"
	if file != nil {
		from = fmt.Sprintf("its arguments (--args-file %s is %s)", file.Name, sizeText(int64(len(file.Data))))
	}
	return fmt.Errorf("%s is %s with %s, more than the NATS server's max_payload of %s: "+
		"pass large data by reference instead, a path a tool reads (fs.read) or a slot an earlier group writes (a slot over 64 KiB goes to the object store), "+
		"or raise max_payload in the server's configuration (docs/runs.md, \"Large state\")", what, sizeText(int64(n)), from, sizeText(limit))
}

// sizeText says a byte count as "5.0 MiB (5242880 bytes)".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

func readLimited(name string, n int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, errors.New("it is a directory")
	}
	return io.ReadAll(io.LimitReader(f, n))
}

// argValue reads one --arg value as type t (runargs.Value).
func argValue(t seq.Type, v string) (json.RawMessage, error) { return runargs.Value(t, v) }

package cli

import (
	"encoding/json"

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
  of its declared type (null fits every type); --arg wins over it. Each
  --arg KEY may be given once.
`

// The rules live in internal/runargs, shared with the web console's run
// form (internal/console), so both check arguments the same way.

// buildArgs turns --args-file and --arg values into run arguments for a
// signature (runargs.Build).
func buildArgs(want map[string]seq.Type, file string, kvs []string, requireAll bool) (map[string]json.RawMessage, error) {
	return runargs.Build(want, file, kvs, requireAll)
}

// argValue reads one --arg value as type t (runargs.Value).
func argValue(t seq.Type, v string) (json.RawMessage, error) { return runargs.Value(t, v) }

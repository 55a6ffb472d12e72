package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// checkToolArgs checks, when a cluster is named (NATS_URL or a context)
// and answers, the literal arguments of every call in the valid sequences
// of reports against the argument schema its tool publishes there
// (tool.Discover, ArgsSchema.CheckKnown: a value holding "$args." is only
// known at run time and is left out). Each call that does not fit gets a
// warning — the provider would answer it with code 400 — so --strict fails
// on it. Without a cluster, or when it does not answer, reports are
// returned as they are (a note on stderr says the check was skipped).
func checkToolArgs(ctx context.Context, env Env, reports []registry.FileReport) []registry.FileReport {
	if !remote(env) {
		return reports
	}
	nc, err := connect(env, "validate", nats.Timeout(2*time.Second), nats.MaxReconnects(0))
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus validate: note: tool arguments not checked against the cluster's schemas: %v\n", err)
		return reports
	}
	defer nc.Close()
	eps, err := tool.Discover(ctx, nc, 500*time.Millisecond)
	if err != nil {
		fmt.Fprintf(env.Stderr, "skillbus validate: note: tool arguments not checked against the cluster's schemas: %v\n", err)
		return reports
	}
	schemas := map[string]*publishedSchema{}
	for _, e := range eps {
		if _, seen := schemas[e.Tool]; seen || len(e.Schema) == 0 {
			continue
		}
		s, err := tool.CompileSchema(e.Schema)
		if err != nil {
			continue // published unchecked by its provider: nothing to check against
		}
		schemas[e.Tool] = &publishedSchema{schema: s, provider: e.Provider}
	}
	for i, r := range reports {
		if r.Kind != "sequence" || !r.Valid {
			continue
		}
		data, err := os.ReadFile(r.Path)
		if err != nil {
			continue
		}
		s, err := seq.ParseFile(r.Path, data)
		if err != nil {
			continue
		}
		reports[i].Problems = append(reports[i].Problems, argProblems(r.Path, s, schemas)...)
	}
	return reports
}

// publishedSchema is a tool's schema as a provider on the cluster
// publishes it.
type publishedSchema struct {
	schema   *tool.ArgsSchema
	provider string
}

// argProblems checks the calls of s against schemas.
func argProblems(file string, s *seq.Sequence, schemas map[string]*publishedSchema) []registry.Problem {
	var out []registry.Problem
	for gi, g := range s.Groups {
		for ci, c := range g.Tools {
			ps := schemas[c.Tool]
			if ps == nil {
				continue
			}
			args := json.RawMessage("{}")
			if len(c.Args) > 0 {
				b, err := json.Marshal(c.Args)
				if err != nil {
					continue
				}
				args = b
			}
			err := ps.schema.CheckKnown(args, func(v string) bool { return strings.Contains(v, "$args.") })
			var te *tool.Error
			if !errors.As(err, &te) {
				continue
			}
			out = append(out, registry.Problem{
				File:    file,
				Where:   fmt.Sprintf("group %d %q: tool %d %q", gi+1, g.Name, ci+1, c.Tool),
				Message: fmt.Sprintf("args: %s (by the schema %s publishes on the cluster; the call would be refused with code 400)", strings.TrimPrefix(te.Description, "bad arguments: "), ps.provider),
				Warning: true,
			})
		}
	}
	return out
}

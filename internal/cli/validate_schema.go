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

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/tool"
)

// checkToolArgs checks the literal arguments of every call in the valid
// sequences of reports against its tool's argument schema: the one the
// tool publishes on the cluster when one is named (NATS_URL or a context)
// and answers (tool.Discover), else the built-in tools' own schemas
// (builtin.Schemas), which are known without a cluster. A value holding
// "$args." (or, in a for_each call, $item or $index) is only known at run
// time and is left out (ArgsSchema.CheckKnown).
// Each call that does not fit gets a warning — the provider would answer
// it with code 400 — so --strict fails on it. When the named cluster does
// not answer, reports are returned as they are (a note on stderr says the
// check was skipped).
func checkToolArgs(ctx context.Context, env Env, reports []registry.FileReport) []registry.FileReport {
	if !remote(env) {
		// No cluster named: the built-in tools' schemas are known here.
		return checkArgsAgainst(reports, builtinSchemas())
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
		schemas[e.Tool] = &publishedSchema{schema: s, source: "the schema " + e.Provider + " publishes on the cluster"}
	}
	return checkArgsAgainst(reports, schemas)
}

// builtinSchemas are the built-in tools' schemas (builtin.Schemas),
// compiled, by tool name.
func builtinSchemas() map[string]*publishedSchema {
	raw, err := builtin.Schemas()
	if err != nil {
		return nil
	}
	out := map[string]*publishedSchema{}
	for name, r := range raw {
		if s, err := tool.CompileSchema(r); err == nil {
			out[name] = &publishedSchema{schema: s, source: "the built-in tool's schema"}
		}
	}
	return out
}

// checkArgsAgainst adds to each valid sequence's report the calls that do
// not fit schemas (argProblems).
func checkArgsAgainst(reports []registry.FileReport, schemas map[string]*publishedSchema) []registry.FileReport {
	if len(schemas) == 0 {
		return reports
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
	schema *tool.ArgsSchema
	source string // "the schema P publishes on the cluster", or the built-in tool's
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
			forEach := c.ForEach != ""
			err := ps.schema.CheckKnown(args, func(v string) bool {
				return strings.Contains(v, "$args.") || forEach && (strings.Contains(v, "$item") || strings.Contains(v, "$index"))
			})
			var te *tool.Error
			if !errors.As(err, &te) {
				continue
			}
			out = append(out, registry.Problem{
				File:    file,
				Where:   fmt.Sprintf("group %d %q: tool %d %q", gi+1, g.Name, ci+1, c.Tool),
				Message: fmt.Sprintf("args: %s (by %s; the call would be refused with code 400)", strings.TrimPrefix(te.Description, "bad arguments: "), ps.source),
				Warning: true,
			})
		}
	}
	return out
}

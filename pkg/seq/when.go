package seq

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// `when` expressions are CEL (https://cel.dev), compiled and type-checked
// when the sequence is stored (DESIGN.md §4). CEL identifiers cannot start
// with `$`, so each `$args.KEY` outside string literals is rewritten to the
// variable `_args_KEY` (same length, so CEL's column numbers stay right) and
// declared with the CEL type of the group's `in` type:
//
//	string → string, bool → bool, integer → int, number → double (all
//	nullable: `$args.x == null` type-checks), object, array, array<T> → dyn.
//
// Numbers of different kinds compare (`$args.ratio > 1`). Nothing else may
// be read: any other identifier is undeclared and so a compile error.

const argsVarPrefix = "_args_"

// celOperator matches CEL's internal operator names such as _>_ or _&&_.
var celOperator = regexp.MustCompile(`_([^\w\s']{1,2})_`)

// whenProgram is a compiled `when` expression.
type whenProgram struct {
	prog cel.Program
	keys []string        // the in keys it reads
	in   map[string]Type // their declared types
}

// rewriteArgs replaces `$args.` outside string literals with `_args_` and
// reports the keys referenced. It returns a message when the expression
// uses `_args_` itself or `$` elsewhere.
func rewriteArgs(expr string) (string, []string, string) {
	var b strings.Builder
	var keys []string
	b.Grow(len(expr))
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case c == '"' || c == '\'':
			// Copy a CEL string literal (also triple-quoted and raw forms: a
			// raw string has no escapes; treating `\` as an escape in it only
			// matters for a trailing backslash, which CEL then rejects).
			q := string(c)
			if strings.HasPrefix(expr[i:], q+q+q) {
				q = q + q + q
			}
			j := i + len(q)
			for j < len(expr) && !strings.HasPrefix(expr[j:], q) {
				if expr[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+len(q), len(expr))
			b.WriteString(expr[i:end])
			i = end - 1
		case strings.HasPrefix(expr[i:], "$args."):
			j := i + len("$args.")
			k := j
			for k < len(expr) && (expr[k] == '_' || expr[k] >= 'a' && expr[k] <= 'z' || expr[k] >= 'A' && expr[k] <= 'Z' || expr[k] >= '0' && expr[k] <= '9') {
				k++
			}
			if k == j || !keyRE.MatchString(expr[j:k]) {
				return "", nil, fmt.Sprintf("%q at character %d is not a valid reference; write $args.KEY with KEY %s", clip(expr[i:k], 40), i+1, keyRule)
			}
			keys = append(keys, expr[j:k])
			b.WriteString(argsVarPrefix)
			b.WriteString(expr[j:k])
			i = k - 1
		case c == '$':
			return "", nil, fmt.Sprintf("`$` at character %d: an expression reads only $args.KEY (for a key declared in `in`)", i+1)
		case strings.HasPrefix(expr[i:], argsVarPrefix) && (i == 0 || !isIdent(expr[i-1])):
			return "", nil, fmt.Sprintf("the name %s… at character %d is reserved; read arguments as $args.KEY", argsVarPrefix, i+1)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), keys, ""
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func celType(t Type) *cel.Type {
	switch t {
	case "string":
		return cel.NullableType(cel.StringType)
	case "bool":
		return cel.NullableType(cel.BoolType)
	case "integer":
		return cel.NullableType(cel.IntType)
	case "number":
		return cel.NullableType(cel.DoubleType)
	}
	return cel.DynType
}

// compileWhen compiles expr against the group's in keys. It returns the
// program, or a plain-English message saying what is wrong and how to fix it.
func compileWhen(expr string, in map[string]Type) (*whenProgram, string) {
	rewritten, keys, msg := rewriteArgs(expr)
	if msg != "" {
		return nil, fmt.Sprintf("in %q: %s", clip(expr, 120), msg)
	}
	for _, k := range keys {
		if _, ok := in[k]; !ok {
			return nil, fmt.Sprintf("%q reads $args.%s, but %q is not declared in the group's `in`; add \"%s\": TYPE to `in` (declared: %s)", clip(expr, 120), k, k, k, keyList(in))
		}
	}
	opts := []cel.EnvOption{cel.CrossTypeNumericComparisons(true)}
	for k, t := range in {
		opts = append(opts, cel.Variable(argsVarPrefix+k, celType(t)))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, "internal error preparing the expression: " + err.Error()
	}
	ast, iss := env.Compile(rewritten)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Sprintf("%q does not compile: %s. Write a CEL expression over $args.KEY that yields true or false, for example \"$args.count > 0 && $args.mode == 'full'\"", clip(expr, 120), celMessage(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Sprintf("%q yields %s, not true or false; compare it, for example \"$args.name != ''\" or \"$args.count > 0\"", clip(expr, 120), celTypeName(ast.OutputType()))
	}
	prog, err := env.Program(ast)
	if err != nil {
		return nil, "internal error preparing the expression: " + err.Error()
	}
	seen := map[string]bool{}
	var uniq []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	return &whenProgram{prog: prog, keys: uniq, in: in}, ""
}

// celMessage turns a CEL issue report into one line in the language's terms.
func celMessage(s string) string {
	s = strings.ReplaceAll(s, argsVarPrefix, "$args.")
	s = strings.ReplaceAll(s, "<input>:", "at ")
	for _, w := range []string{"string", "bool", "int", "double"} {
		s = strings.ReplaceAll(s, "wrapper("+w+")", w)
	}
	s = strings.ReplaceAll(s, "ERROR: ", "")
	s = strings.ReplaceAll(s, " (in container '')", "")
	s = celOperator.ReplaceAllString(s, "$1")
	// Drop CEL's source excerpt lines ("| expr", "| ..^").
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "|") {
			continue
		}
		keep = append(keep, strings.TrimSpace(l))
	}
	return strings.Join(keep, "; ")
}

func celTypeName(t *cel.Type) string {
	s := t.String()
	s = strings.TrimSuffix(strings.TrimPrefix(s, "wrapper("), ")")
	switch s {
	case "int":
		return "an integer"
	case "double":
		return "a number"
	case "string":
		return "a string"
	}
	return s
}

// eval evaluates the program with the group's scope (key → JSON value).
func (w *whenProgram) eval(scope map[string]json.RawMessage) (bool, error) {
	vars := make(map[string]any, len(w.keys))
	for _, k := range w.keys {
		raw, ok := scope[k]
		if !ok || JSONKind(raw) == "null" {
			vars[argsVarPrefix+k] = types.NullValue
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, fmt.Errorf("$args.%s is not valid JSON: %v", k, err)
		}
		cv := celValue(v)
		switch w.in[k] {
		case "number":
			if i, ok := cv.(int64); ok {
				cv = float64(i)
			}
		}
		vars[argsVarPrefix+k] = cv
	}
	out, _, err := w.prog.Eval(vars)
	if err != nil {
		return false, fmt.Errorf("%s", celMessage(err.Error()))
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the expression yielded %v, not true or false", out)
	}
	return b, nil
}

// celValue converts a decoded JSON value for CEL: integral numbers become
// int64, others float64, null becomes CEL null.
func celValue(v any) any {
	switch x := v.(type) {
	case nil:
		return types.NullValue
	case float64:
		if x == float64(int64(x)) && x < 9.2e18 && x > -9.2e18 {
			return int64(x)
		}
		return x
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = celValue(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = celValue(e)
		}
		return a
	}
	return v
}

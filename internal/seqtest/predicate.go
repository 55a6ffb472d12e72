package seqtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
)

// predicateCostLimit bounds one slot predicate's evaluation, in CEL cost
// units (the budget of a sequence's `when`, seq.WhenCostLimit).
const predicateCostLimit = 1_000_000

// slotPredicate is a CEL expression over a slot ({cel: EXPR} under
// expect.slots, docs/testing.md): value is the slot, slots every slot.
type slotPredicate struct {
	expr string
	prog cel.Program
}

// compilePredicate compiles expr; the error says what is wrong in CEL's
// words and how the expression reads the slot.
func compilePredicate(expr string) (*slotPredicate, error) {
	env, err := cel.NewEnv(cel.CrossTypeNumericComparisons(true),
		cel.Variable("value", cel.DynType), cel.Variable("slots", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("cel: %q does not compile: %s; write a CEL expression over value (the slot) or slots.NAME that yields true or false, such as \"size(value) > 2\"", expr, strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("cel: %q yields %s, not true or false; compare it, such as \"value.count > 0\"", expr, t)
	}
	prog, err := env.Program(ast, cel.CostLimit(predicateCostLimit))
	if err != nil {
		return nil, err
	}
	return &slotPredicate{expr: expr, prog: prog}, nil
}

// eval reports whether the predicate holds for value (JSON) with the run's
// slots; an error says why it could not be decided.
func (p *slotPredicate) eval(value json.RawMessage, slots map[string]json.RawMessage) (bool, error) {
	all := make(map[string]any, len(slots))
	for k, v := range slots {
		all[k] = celValue(v)
	}
	out, _, err := p.prog.Eval(map[string]any{"value": celValue(value), "slots": all})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("it yields %v (%s), not true or false", out.Value(), out.Type().TypeName())
	}
	return b, nil
}

// celValue decodes JSON for CEL: whole numbers as int (so value.n == 2 and
// value.n % 2 read as written), other numbers as double.
func celValue(v json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(orNull(v)))
	d.UseNumber()
	var x any
	if d.Decode(&x) != nil {
		return nil
	}
	return numbers(x)
}

func numbers(x any) any {
	switch v := x.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case []any:
		for i := range v {
			v[i] = numbers(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = numbers(v[k])
		}
	}
	return x
}

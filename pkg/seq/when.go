package seq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// `when` expressions are CEL (https://cel.dev), compiled and type-checked
// when the sequence is stored (docs/sequences.md, "when"). CEL identifiers cannot start
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

// Limits of a `when` expression (docs/sequences.md, "Limits"). An
// expression comes from whoever stores a sequence — a model through
// seq.create included — so it is treated as untrusted: its length, its
// estimated cost when stored and its actual cost when run are bounded.
const (
	// MaxWhenLength is the longest `when` expression, in characters
	// (Unicode code points). A longer one is refused when stored.
	MaxWhenLength = 4096
	// WhenCostLimit is the budget of one `when`, in CEL cost units: about
	// one per operation (a comparison, a field access, one turn of a macro
	// such as all(), exists(), map() or filter()), and one per ten bytes
	// for string operations. When stored, an expression whose estimated
	// cost may exceed it is refused (ErrTooCostly); when run, evaluation
	// stops as soon as it exceeds it, or when the group's timeout ends,
	// whichever comes first (ErrTooCostly). 1,000,000 units take in the
	// order of 0.1 s on one core.
	WhenCostLimit = 1_000_000
	// whenEstimateItems is what the store-time estimate assumes about
	// each value read from $args: a list or map of at most this many
	// items, a string of at most ten times this many bytes. Larger
	// inputs are bounded at run time.
	whenEstimateItems = 10
	// whenInterruptEvery is how many turns of a macro run between two
	// looks at the group's context.
	whenInterruptEvery = 100
)

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
// program, or a plain-English message saying what is wrong and how to fix
// it, and with it ErrTooCostly when the expression is over its budget.
func compileWhen(expr string, in map[string]Type) (*whenProgram, string, error) {
	if n := utf8.RuneCountInString(expr); n > MaxWhenLength {
		return nil, fmt.Sprintf("the expression is %d characters long; a when expression is at most %d characters: test fewer things, or compute the value in an earlier group and test its slot", n, MaxWhenLength), nil
	}
	rewritten, keys, msg := rewriteArgs(expr)
	if msg != "" {
		return nil, fmt.Sprintf("in %q: %s", clip(expr, 120), msg), nil
	}
	for _, k := range keys {
		if _, ok := in[k]; !ok {
			return nil, fmt.Sprintf("%q reads $args.%s, but %q is not declared in the group's `in`; add \"%s\": TYPE to `in` (declared: %s)", clip(expr, 120), k, k, k, keyList(in)), nil
		}
	}
	opts := []cel.EnvOption{cel.CrossTypeNumericComparisons(true), cel.ParserExpressionSizeLimit(MaxWhenLength)}
	for k, t := range in {
		opts = append(opts, cel.Variable(argsVarPrefix+k, celType(t)))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, "internal error preparing the expression: " + err.Error(), nil
	}
	ast, iss := env.Compile(rewritten)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Sprintf("%q does not compile: %s. Write a CEL expression over $args.KEY that yields true or false, for example \"$args.count > 0 && $args.mode == 'full'\"", clip(expr, 120), celMessage(iss.Err().Error())), nil
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Sprintf("%q yields %s, not true or false; compare it, for example \"$args.name != ''\" or \"$args.count > 0\"", clip(expr, 120), celTypeName(ast.OutputType())), nil
	}
	est, err := env.EstimateCost(ast, whenEstimator{})
	if err != nil || est.Max > WhenCostLimit {
		got := "cannot be estimated"
		if err == nil {
			got = fmt.Sprintf("is estimated at up to %d cost units", est.Max)
		}
		return nil, fmt.Sprintf("%q: expression too costly: it %s, over the budget of %d (each list, map or string read from $args counted with %d items); nest fewer macros (all, exists, map, filter) and use shorter literal lists, or compute the value in an earlier group", clip(expr, 120), got, WhenCostLimit, whenEstimateItems), ErrTooCostly
	}
	prog, err := env.Program(ast, cel.CustomDecoratorV2(budgetDecorator), cel.InterruptCheckFrequency(whenInterruptEvery))
	if err != nil {
		return nil, "internal error preparing the expression: " + err.Error(), nil
	}
	seen := map[string]bool{}
	var uniq []string
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	return &whenProgram{prog: prog, keys: uniq, in: in}, "", nil
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

// whenEstimator sizes, for the store-time cost estimate, every value whose
// size CEL cannot know — what the expression reads from $args — as at most
// whenEstimateItems items (list and map entries, string bytes / 10).
type whenEstimator struct{}

func (whenEstimator) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: whenEstimateItems}
}

func (whenEstimator) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// whenBudgetVar is the hidden activation variable that holds one
// evaluation's *whenBudget; `@` cannot start a CEL identifier, so no
// expression can read or shadow it.
const whenBudgetVar = "@skillbus_budget"

// whenBudget is what is left of one evaluation's WhenCostLimit. One
// evaluation runs on one goroutine, so it needs no lock.
type whenBudget struct{ left int64 }

// errBudget is the panic that stops an evaluation over its budget; CEL's
// Eval recovers it and returns it as the evaluation's error.
var errBudget = interpreter.EvalCancelledError{Cause: interpreter.CostLimitExceeded, Message: "actual cost limit exceeded"}

// charge takes n units from the budget of the evaluation a belongs to.
func charge(a interpreter.Activation, n uint64) {
	v, _ := a.ResolveName(whenBudgetVar)
	if b, ok := v.(*whenBudget); ok {
		b.left -= int64(min(n, 1<<40))
		if b.left < 0 {
			panic(errBudget)
		}
	}
}

// budgetDecorator makes every call, attribute (variable or field read)
// and list or map construction of a planned expression charge the
// evaluation's budget: 1 unit each, plus, for a call, 1 per ten bytes of
// a string it builds or reads and 1 per item of a list it searches or
// compares (CEL's own cost model, docs/sequences.md "Limits").
//
// cel-go's runtime cost tracker (cel.CostLimit) would do the same, but
// its bookkeeping grows with every turn of a macro and is scanned at each
// variable read, so a plain `exists` over 100,000 items took 28 s; this
// counter takes constant time per step. Comprehensions themselves are not
// wrapped: cel-go marks them interruptible (the group's deadline) by their
// concrete type, and their every turn reads variables, which charge.
func budgetDecorator(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	switch n := i.(type) {
	case interpreter.InterpretableCall:
		return budgetCall{n}, nil
	case interpreter.InterpretableAttribute:
		return budgetAttr{n}, nil
	case interpreter.InterpretableConstructor:
		return budgetConstructor{n}, nil
	}
	return i, nil
}

type budgetAttr struct {
	interpreter.InterpretableAttribute
}

func (b budgetAttr) Exec(f *interpreter.ExecutionFrame) ref.Val {
	charge(f, 1)
	return b.InterpretableAttribute.Exec(f)
}

func (b budgetAttr) Eval(a interpreter.Activation) ref.Val {
	charge(a, 1)
	return b.InterpretableAttribute.Eval(a)
}

type budgetConstructor struct {
	interpreter.InterpretableConstructor
}

func (b budgetConstructor) Exec(f *interpreter.ExecutionFrame) ref.Val {
	charge(f, 1+uint64(len(b.InitVals())))
	return b.InterpretableConstructor.Exec(f)
}

func (b budgetConstructor) Eval(a interpreter.Activation) ref.Val {
	charge(a, 1+uint64(len(b.InitVals())))
	return b.InterpretableConstructor.Eval(a)
}

type budgetCall struct{ interpreter.InterpretableCall }

func (b budgetCall) Exec(f *interpreter.ExecutionFrame) ref.Val {
	v := b.InterpretableCall.Exec(f)
	charge(f, b.cost(f, v))
	return v
}

func (b budgetCall) Eval(a interpreter.Activation) ref.Val {
	v := b.InterpretableCall.Eval(a)
	charge(a, b.cost(a, v))
	return v
}

// cost is 1, plus a tenth of the bytes of a string result, plus what the
// function reads: for `in` the items of the list, for ==, != and the
// orderings the smaller operand, for string searches both strings.
// Operands are looked at only when they are variables or constants
// (reading them again is cheap); a computed operand was charged when it
// was built.
func (b budgetCall) cost(a interpreter.Activation, result ref.Val) uint64 {
	c := uint64(1)
	if isText(result) {
		c += costSize(result) / 10
	}
	args := b.Args()
	arg := func(i int) uint64 {
		if i >= len(args) {
			return 1
		}
		var v ref.Val
		switch x := args[i].(type) {
		case budgetAttr:
			v = x.InterpretableAttribute.Eval(a)
		case interpreter.InterpretableConst:
			v = x.Value()
		default:
			return 1
		}
		if isText(v) {
			return costSize(v)/10 + 1
		}
		return costSize(v)
	}
	switch b.Function() {
	case operators.In:
		c += arg(1)
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		c += min(arg(0), arg(1))
	case overloads.Contains, overloads.StartsWith, overloads.EndsWith, overloads.Matches, overloads.Size:
		c += arg(0) + arg(1)
	}
	return c
}

// costSize is the size of a list, map, string or bytes value (1 otherwise).
func costSize(v ref.Val) uint64 {
	switch x := v.(type) {
	case types.String:
		return uint64(len(x))
	case types.Bytes:
		return uint64(len(x))
	case traits.Sizer:
		if n, ok := x.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 1
}

func isText(v ref.Val) bool {
	switch v.(type) {
	case types.String, types.Bytes:
		return true
	}
	return false
}

// tooCostly is the error of a `when` that ran out of its budget at run
// time: errors.Is(err, ErrTooCostly) holds, and also
// errors.Is(err, ErrGroupTimeout) when the group's deadline stopped it.
type tooCostly struct {
	msg      string
	deadline bool
}

func (e *tooCostly) Error() string { return e.msg }

func (e *tooCostly) Is(target error) bool {
	return target == ErrTooCostly || e.deadline && target == ErrGroupTimeout
}

// eval evaluates the program with the group's scope (key → JSON value)
// under ctx, the group's context: the group's deadline and the run's
// cancellation stop a long evaluation, and so does WhenCostLimit. Numbers
// keep their exact value (see celNumber).
func (w *whenProgram) eval(ctx context.Context, scope map[string]json.RawMessage) (bool, error) {
	ok, _, err := w.evalCost(ctx, scope)
	return ok, err
}

// evalCost is eval that also returns the cost units the evaluation used.
func (w *whenProgram) evalCost(ctx context.Context, scope map[string]json.RawMessage) (_ bool, used int64, _ error) {
	budget := &whenBudget{left: WhenCostLimit}
	defer func() { used = WhenCostLimit - budget.left }()
	vars := make(map[string]any, len(w.keys)+1)
	vars[whenBudgetVar] = budget
	for _, k := range w.keys {
		raw, ok := scope[k]
		if !ok || JSONKind(raw) == "null" {
			vars[argsVarPrefix+k] = types.NullValue
			continue
		}
		v, err := decodeJSON(raw)
		if err != nil {
			return false, 0, fmt.Errorf("$args.%s is not valid JSON: %v", k, err)
		}
		cv, err := celArg(w.in[k], v)
		if err != nil {
			return false, 0, fmt.Errorf("$args.%s: %v", k, err)
		}
		vars[argsVarPrefix+k] = cv
	}
	out, _, err := w.prog.ContextEval(ctx, vars)
	if err != nil {
		var ce interpreter.EvalCancelledError
		if errors.As(err, &ce) && ce.Cause == interpreter.CostLimitExceeded {
			return false, 0, &tooCostly{msg: fmt.Sprintf("expression too costly: the evaluation went over its budget of %d cost units (about one per operation); read less data or nest fewer macros (all, exists, map, filter)", WhenCostLimit)}
		}
		if ctx.Err() != nil {
			why := "the run was cancelled"
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = "the group's timeout ended (context deadline exceeded)"
			}
			return false, 0, &tooCostly{msg: "expression too costly: it did not finish before " + why + "; read less data or nest fewer macros (all, exists, map, filter)", deadline: errors.Is(ctx.Err(), context.DeadlineExceeded)}
		}
		return false, 0, fmt.Errorf("%s", celMessage(err.Error()))
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, 0, fmt.Errorf("the expression yielded %v, not true or false", out)
	}
	return b, 0, nil
}

// decodeJSON decodes one JSON value keeping numbers as json.Number, so
// that no integer goes through float64.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// celArg converts a decoded JSON value (json.Number numbers) for CEL by the
// key's declared type: `number` → double (an error when a whole value
// between 2^53 and 2^64 would lose digits as a double), every other type by
// celValue.
func celArg(t Type, v any) (any, error) {
	n, ok := v.(json.Number)
	if !ok || t != "number" {
		return celValue(v)
	}
	s := string(n)
	if i, ok := exactInt(s); ok {
		f, _ := new(big.Float).SetInt(i).Float64()
		if bf := new(big.Float).SetFloat64(f); bf.Cmp(new(big.Float).SetInt(i)) != 0 && i.BitLen() <= 64 {
			return nil, fmt.Errorf("the number %s cannot be represented exactly as a CEL double (the type `number`), which keeps 53 bits; declare the key as integer to compare it exactly", clip(s, 40))
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("the number %s is out of the range of a CEL double (about ±1.8e308)", clip(s, 40))
	}
	return f, nil
}

// celValue converts a decoded JSON value for CEL: a whole number that fits
// in 64 bits becomes int (or uint above 2^63-1), any other number double,
// null becomes CEL null; objects and arrays are converted item by item. A
// number CEL cannot represent — an integer literal beyond 64 bits, or a
// value beyond the range of a double — is an error at the top level;
// inside an object or array it becomes a CEL error value, so that the
// expression fails with the message only if it reads that item.
func celValue(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return types.NullValue, nil
	case json.Number:
		return celNumber(string(x))
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			c, err := celValue(e)
			if err != nil {
				c = types.NewErr("%s: %v", clip(k, 40), err)
			}
			m[k] = c
		}
		return m, nil
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			c, err := celValue(e)
			if err != nil {
				c = types.NewErr("item %d: %v", i+1, err)
			}
			a[i] = c
		}
		return a, nil
	}
	return v, nil
}

// celNumber converts the text of a JSON number: whole values that fit in
// int64 (or uint64) exactly → int64 (uint64), others → float64.
func celNumber(s string) (any, error) {
	if i, ok := exactInt(s); ok {
		switch {
		case i.IsInt64():
			return i.Int64(), nil
		case i.IsUint64():
			return i.Uint64(), nil
		case isIntLiteral(s):
			return nil, fmt.Errorf("the integer %s does not fit in 64 bits, and CEL integers have 64 bits", clip(s, 40))
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("the number %s is out of the range of a CEL double (about ±1.8e308)", clip(s, 40))
	}
	return f, nil
}

// isIntLiteral reports whether s is written as an integer: digits with an
// optional minus sign, no fraction and no exponent.
func isIntLiteral(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".eE")
}

// exactInt returns the exact value of the JSON number text s when it is a
// whole number of at most 40 significant digits (fraction and exponent
// forms included: 5.0, 1e3, 9.007199254740993e15); ok is false for a
// fraction, an invalid number or a larger magnitude. It never builds a
// number from a large exponent, so hostile input stays cheap.
func exactInt(s string) (*big.Int, bool) {
	const maxDigits = 40
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		es := strings.TrimPrefix(s[i+1:], "+")
		e, err := strconv.Atoi(es)
		if err != nil || len(es) > 6 {
			// An exponent this large: whole only when the mantissa is zero.
			if strings.Trim(mant, "0.") == "" && mant != "" && err == nil {
				return new(big.Int), true
			}
			return nil, false
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	if digits == "" {
		if intPart == "" && frac == "" {
			return nil, false
		}
		return new(big.Int), true
	}
	for exp < 0 && strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if exp < 0 || len(digits)+exp > maxDigits {
		return nil, false
	}
	i, ok := new(big.Int).SetString(digits+strings.Repeat("0", exp), 10)
	if !ok {
		return nil, false
	}
	if neg {
		i.Neg(i)
	}
	return i, true
}

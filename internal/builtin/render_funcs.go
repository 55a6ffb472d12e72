package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

// MaxRenderWorkBytes bounds the text that template functions (printf,
// join, json, html, ...) may build in one text.render call, intermediate
// results included: four times the output limit. Each function reserves
// the size of its result before building it, so a template cannot make the
// provider allocate more than this (plus the output itself) however it
// nests and loops them.
const MaxRenderWorkBytes = 4 * DefaultMaxRenderBytes

// renderSlack is how far a function's reserved size may pass the output
// limit: sizes are upper bounds (a number counts 64 bytes, a verb 16 more),
// and a string that really is too long is refused by the output cap.
const renderSlack = 4 << 10

// errBuildTooBig ends an Execute from a template function whose result
// would pass the limits.
var errBuildTooBig = errors.New("text.render budget")

// renderBudget is one render's account of the text its functions build.
type renderBudget struct {
	w     *renderWriter
	built int // bytes reserved by functions so far
}

// reserve accounts for a string of at most n bytes that fn is about to
// build. Errors: errBuildTooBig (wrapped, naming fn and the sizes) when the
// string would be larger than the output limit, or the functions' total
// would pass MaxRenderWorkBytes.
func (b *renderBudget) reserve(fn string, n int) error {
	switch {
	case n < 0 || n > DefaultMaxRenderBytes+renderSlack:
		return fmt.Errorf("%w: %s would build about %s, over the %d KiB output limit of text.render", errBuildTooBig, fn, sizeText(n), DefaultMaxRenderBytes>>10)
	case b.built+n > MaxRenderWorkBytes:
		return fmt.Errorf("%w: template functions built %s of text and %s would add %s, over the %d KiB text.render allows in one render", errBuildTooBig, sizeText(b.built), fn, sizeText(n), MaxRenderWorkBytes>>10)
	}
	b.built += n
	return nil
}

func sizeText(n int) string {
	if n < 0 {
		return "more than 2 GiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// funcs returns the functions text.render's templates may call: the
// skillbus ones (join, lines, first, trunc, json, keys, default, upper,
// lower, trim) and, in place of text/template's own string builders
// (printf, print, println, html, js, urlquery), versions that reserve
// their result's size first. The other built-ins (len, index, slice, and,
// or, not, eq, ne, lt, le, gt, ge, call) build no text and stay.
func (b *renderBudget) funcs() template.FuncMap {
	return template.FuncMap{
		fieldFunc: field,
		textFunc:  text,
		"len":     length,
		"printf": func(format string, args ...any) (string, error) {
			args = nilText(args)
			if err := b.reserve("printf", printfSize(format, args)); err != nil {
				return "", err
			}
			return fmt.Sprintf(format, args...), nil
		},
		"print": func(args ...any) (string, error) {
			args = nilText(args)
			if err := b.reserve("print", printSize(args)); err != nil {
				return "", err
			}
			return fmt.Sprint(args...), nil
		},
		"println": func(args ...any) (string, error) {
			args = nilText(args)
			if err := b.reserve("println", printSize(args)+1); err != nil {
				return "", err
			}
			return fmt.Sprintln(args...), nil
		},
		"html":     b.escaper("html", 6, template.HTMLEscapeString),
		"js":       b.escaper("js", 6, template.JSEscapeString),
		"urlquery": b.escaper("urlquery", 3, url.QueryEscape),
		// join joins a list of values (of the data, or of keys or lines)
		// with sep.
		"join": func(sep string, list any) (string, error) {
			var xs []any
			switch v := list.(type) {
			case []any:
				xs = v
			case []string:
				xs = make([]any, len(v))
				for i, x := range v {
					xs[i] = x
				}
			case nil:
			default:
				return "", fmt.Errorf("join: %s is not a list", valueKind(list))
			}
			n := len(sep) * max(len(xs)-1, 0)
			for _, x := range xs {
				n = addSize(n, valueSize(x, 'v'))
			}
			if err := b.reserve("join", n); err != nil {
				return "", err
			}
			ss := make([]string, len(xs))
			for i, x := range xs {
				if x != nil { // null is empty text, as printed
					ss[i] = fmt.Sprint(x)
				}
			}
			return strings.Join(ss, sep), nil
		},
		// lines splits text into lines (no trailing empty line).
		"lines": func(s string) ([]string, error) {
			s = strings.TrimRight(s, "\n")
			if s == "" {
				return nil, nil
			}
			// The list of n lines costs 16 bytes a line; the text is shared.
			if err := b.reserve("lines", 16*(strings.Count(s, "\n")+1)); err != nil {
				return nil, err
			}
			return strings.Split(s, "\n"), nil
		},
		// first returns the first n items of a list (all when fewer).
		"first": func(n any, xs any) (any, error) {
			k, err := count("first", n)
			if err != nil {
				return nil, err
			}
			switch v := xs.(type) {
			case []any:
				return v[:min(k, len(v))], nil
			case []string:
				return v[:min(k, len(v))], nil
			}
			return xs, nil
		},
		// trunc cuts text to n bytes, marking a cut with "…".
		"trunc": func(n any, s string) (string, error) {
			k, err := count("trunc", n)
			if err != nil {
				return "", err
			}
			// Only the first k bytes (and a rune's worth more) of the
			// trimmed text can be kept: validate only those (invalid
			// UTF-8 is replaced, up to 3 bytes per byte).
			t, cut := strings.TrimSpace(s), false
			if len(t) > k+utf8.UTFMax {
				t, cut = t[:k+utf8.UTFMax], true
			}
			if err := b.reserve("trunc", 3*len(t)+3); err != nil {
				return "", err
			}
			t = strings.ToValidUTF8(t, "\uFFFD")
			if !cut && len(t) <= k {
				return t, nil
			}
			for k > 0 && !utf8.RuneStart(t[k]) {
				k--
			}
			return t[:k] + "…", nil
		},
		// json renders a value as compact JSON.
		"json": func(v any) (string, error) {
			if err := b.reserve("json", jsonSize(v, MaxRenderWorkBytes+1)); err != nil {
				return "", err
			}
			out, err := json.Marshal(v)
			return string(out), err
		},
		// keys returns the sorted keys of an object.
		"keys": func(m map[string]any) ([]string, error) {
			if err := b.reserve("keys", 16*len(m)); err != nil {
				return nil, err
			}
			ks := make([]string, 0, len(m))
			for k := range m {
				ks = append(ks, k)
			}
			slices.Sort(ks)
			return ks, nil
		},
		// default returns def when v is null or "".
		"default": func(def, v any) any {
			if v == nil || v == "" {
				return def
			}
			return v
		},
		"upper": func(s string) (string, error) {
			if err := b.reserve("upper", 3*len(s)/2+4); err != nil {
				return "", err
			}
			return strings.ToUpper(s), nil
		},
		"lower": func(s string) (string, error) {
			if err := b.reserve("lower", 3*len(s)/2+4); err != nil {
				return "", err
			}
			return strings.ToLower(s), nil
		},
		"trim": strings.TrimSpace,
	}
}

// escaper returns a budgeted version of text/template's html, js or
// urlquery: the arguments are printed as text/template prints them, and
// the escaped text (at most grow times longer) is reserved first.
func (b *renderBudget) escaper(name string, grow int, escape func(string) string) func(args ...any) (string, error) {
	return func(args ...any) (string, error) {
		var s string
		if str, ok := oneString(args); ok {
			s = str
		} else {
			if err := b.reserve(name, printSize(args)); err != nil {
				return "", err
			}
			s = fmt.Sprint(args...)
		}
		if err := b.reserve(name, grow*len(s)); err != nil {
			return "", err
		}
		return escape(s), nil
	}
}

func oneString(args []any) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	s, ok := args[0].(string)
	return s, ok
}

// count reads a count argument of first or trunc: a template integer, a
// JSON integer from the data, or a float64 with no fraction.
func count(fn string, n any) (int, error) {
	var k int64
	switch v := n.(type) {
	case int:
		k = int64(v)
	case int64:
		k = v
	case renderInt:
		k = int64(v)
	case float64:
		if v != float64(int64(v)) {
			return 0, fmt.Errorf("%s: count %v is not a whole number", fn, v)
		}
		k = int64(v)
	default:
		return 0, fmt.Errorf("%s: count %s is not a number", fn, valueKind(n))
	}
	if k < 0 {
		return 0, fmt.Errorf("%s: count %d is negative", fn, k)
	}
	return int(min(k, 1<<31)), nil
}

// addSize adds sizes, staying negative ("too big") once either is.
func addSize(a, b int) int {
	if a < 0 || b < 0 || a+b < 0 || a+b > 1<<40 {
		return -1
	}
	return a + b
}

// mulSize multiplies a size by a count, -1 when too big.
func mulSize(a, n int) int {
	if a < 0 || n < 0 {
		return -1
	}
	if a != 0 && n > (1<<40)/a {
		return -1
	}
	return a * n
}

// printSize bounds what fmt.Sprint(args...) builds.
func printSize(args []any) int {
	n := len(args) // spaces between operands
	for _, a := range args {
		n = addSize(n, valueSize(a, 'v'))
	}
	return n
}

// printfSize bounds what fmt.Sprintf(format, args...) builds, without
// building it. It walks the format as fmt's doPrintf does (flags,
// [n] argument indexes, widths and precisions from digits or from '*'
// arguments) and counts the literal text, every error fmt may print
// (32 bytes each), and for every verb the size of its argument printed
// with that verb plus its width and precision once per element (a width
// applies to every element of a list or map). Arguments no verb uses are
// printed at the end (%!(EXTRA ...)) with the last verb's width. The result
// is -1 when it would pass 1 TiB.
func printfSize(format string, args []any) int {
	end := len(format)
	n := 0
	argNum := 0
	reordered := false
	pad := 0 // the current verb's width + precision; kept after the last verb
	// argNumber mirrors fmt's: an explicit index [n] at format[i:].
	argNumber := func(argNum, i int) (int, int, bool) {
		if i >= end || format[i] != '[' {
			return argNum, i, false
		}
		reordered = true
		for j := i + 1; j < end; j++ {
			if format[j] == ']' {
				k, err := strconv.Atoi(format[i+1 : j])
				if err == nil && k >= 1 && k <= len(args) {
					return k - 1, j + 1, true
				}
				return argNum, j + 1, err == nil
			}
		}
		return argNum, i + 1, false
	}
	// parsenum mirrors fmt's: digits; fmt gives up (and skips the rest of
	// the format) once a number passed 10⁶ before its next digit.
	parsenum := func(i int) (int, int) {
		num := 0
		for i < end && format[i] >= '0' && format[i] <= '9' {
			if num > 1e6 {
				return 0, end
			}
			num = num*10 + int(format[i]-'0')
			i++
		}
		return num, i
	}
	star := func(argNum int) (int, int) { // a '*' width or precision
		n = addSize(n, 32) // %!(BADWIDTH) or %!(BADPREC)
		if argNum < len(args) {
			return min(starSize(args[argNum]), 1e6), argNum + 1
		}
		return 0, argNum
	}
	for i := 0; i < end; {
		lasti := i
		for i < end && format[i] != '%' {
			i++
		}
		n += i - lasti
		if i >= end {
			break
		}
		i++
		for i < end && strings.IndexByte("#0+- ", format[i]) >= 0 {
			i++
		}
		n = addSize(n, 32) // %!v(MISSING), %!v(BADINDEX), %!(NOVERB)
		var width, prec int
		var afterIndex bool
		argNum, i, afterIndex = argNumber(argNum, i)
		if i < end && format[i] == '*' {
			width, argNum = star(argNum)
			i++
			afterIndex = false
		} else {
			width, i = parsenum(i)
		}
		if i+1 < end && format[i] == '.' {
			i++
			argNum, i, afterIndex = argNumber(argNum, i)
			if i < end && format[i] == '*' {
				prec, argNum = star(argNum)
				i++
				afterIndex = false
			} else {
				prec, i = parsenum(i)
			}
		}
		if !afterIndex {
			argNum, i, _ = argNumber(argNum, i)
		}
		pad = width + prec
		if i >= end {
			break
		}
		verb, size := utf8.DecodeRuneInString(format[i:])
		i += size
		if verb == '%' || argNum >= len(args) {
			continue
		}
		a := args[argNum]
		argNum++
		n = addSize(n, addSize(valueSize(a, verb), mulSize(pad+16, leaves(a))))
	}
	if !reordered {
		for _, a := range args[min(argNum, len(args)):] { // %!(EXTRA type=value, ...)
			n = addSize(n, addSize(valueSize(a, 'v'), mulSize(pad+48, leaves(a))))
		}
	}
	return n
}

// starSize is the size of a '*' width or precision argument: fmt takes
// the absolute value of an integer (a negative width pads on the right).
func starSize(v any) int {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i := rv.Int()
		if i < 0 {
			i = -i
		}
		return int(min(uint64(i), 1<<31))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return int(min(rv.Uint(), 1<<31))
	}
	return 0 // not an integer: fmt prints %!(BADWIDTH)
}

// leaves counts the values fmt prints separately in v (1 for a scalar),
// the elements a width applies to.
func leaves(v any) int {
	switch v := v.(type) {
	case []any:
		n := 0
		for _, x := range v {
			n += leaves(x)
		}
		return max(n, 1)
	case map[string]any:
		n := 0
		for _, x := range v {
			n += leaves(x) + 1
		}
		return max(n, 1)
	case []string:
		return max(len(v), 1)
	}
	return 1
}

// valueSize bounds the size of v printed by fmt with verb (not counting
// width and precision): strings by their length (times the growth of %q
// and %x), numbers and booleans 32 bytes, lists and maps their elements'
// sizes plus punctuation, anything else (a text/template value of another
// Go type) by fmt's own %v of it, cut at the work limit. -1 when too big.
func valueSize(v any, verb rune) int {
	switch v := v.(type) {
	case nil:
		return 16
	case string:
		return stringSize(v, verb)
	case []byte:
		return stringSize(string(v), verb)
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, uintptr,
		float32, float64, complex64, complex128, renderInt:
		return 64
	case json.Number:
		return len(v) + 32
	case []any:
		n := 16
		for _, x := range v {
			if n = addSize(n, addSize(valueSize(x, verb), 2)); n < 0 || n > MaxRenderWorkBytes {
				return -1
			}
		}
		return n
	case []string:
		n := 16
		for _, x := range v {
			if n = addSize(n, addSize(stringSize(x, verb), 2)); n < 0 || n > MaxRenderWorkBytes {
				return -1
			}
		}
		return n
	case map[string]any:
		n := 16
		for k, x := range v {
			if n = addSize(n, addSize(addSize(stringSize(k, verb), valueSize(x, verb)), 3)); n < 0 || n > MaxRenderWorkBytes {
				return -1
			}
		}
		return n
	}
	// Another Go value: text/template's own results are the types above;
	// a number or a boolean of another type is small, anything else is
	// refused rather than measured (measuring would build it).
	switch reflect.ValueOf(v).Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return 64
	}
	return -1
}

// stringSize bounds the size of s printed with verb.
func stringSize(s string, verb rune) int {
	switch verb {
	case 'q':
		return quotedSize(s)
	case 'x', 'X':
		return 3 * len(s) // "% x" puts a space between bytes
	case 's', 'v':
		return len(s)
	}
	return len(s) + 32 // %!d(string=...)
}

// quotedSize is the length of strconv.Quote(s) (or a little more), counted
// without building it.
func quotedSize(s string) int {
	n := 2
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case r == utf8.RuneError && size == 1:
			n += 4 // \xff
		case r == '"' || r == '\\' || r == '\a' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t' || r == '\v':
			n += 2
		case r < ' ' || r == 0x7f:
			n += 4
		case r < utf8.RuneSelf:
			n++
		case strconv.IsPrint(r):
			n += size
		case r < 0x10000:
			n += 6
		default:
			n += 10
		}
	}
	return n
}

// jsonSize bounds the size of json.Marshal(v) without building it, or
// returns -1 when it passes limit.
func jsonSize(v any, limit int) int {
	n := 0
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case nil, bool:
			n += 5
		case string:
			n += jsonStringSize(v)
		case []any:
			n += 2
			for _, x := range v {
				n++
				if !walk(x) {
					return false
				}
			}
		case []string:
			n += 2
			for _, x := range v {
				n += jsonStringSize(x) + 1
			}
		case map[string]any:
			n += 2
			for k, x := range v {
				n += jsonStringSize(k) + 2
				if !walk(x) {
					return false
				}
			}
		case json.Number:
			n += len(v)
		default:
			// Numbers and other values text/template produces: measure.
			b, err := json.Marshal(v)
			if err != nil {
				n += 32
			} else {
				n += len(b)
			}
		}
		return n <= limit
	}
	if !walk(v) {
		return -1
	}
	return n
}

// jsonStringSize is the length of s encoded by encoding/json (quotes,
// escapes, HTML characters as \u003c, invalid UTF-8 as \ufffd).
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < ' ' || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// renderInt is a JSON integer of text.render's data. It is an int64 to
// text/template (eq, lt, index, len and range take it) and to
// encoding/json, and prints as its digits with %v, %d and %s; with %f, %e
// or %g it prints as the float it also is, so a template that formats a
// number which happens to be whole still works.
type renderInt int64

// Format implements fmt.Formatter.
func (i renderInt) Format(f fmt.State, verb rune) {
	switch verb {
	case 'e', 'E', 'f', 'F', 'g', 'G':
		fmt.Fprintf(f, fmt.FormatString(f, verb), float64(i))
	case 's', 'q':
		fmt.Fprintf(f, fmt.FormatString(f, verb), strconv.FormatInt(int64(i), 10))
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), int64(i))
	}
}

// decodeData decodes text.render's data keeping numbers exact: a JSON
// integer that fits in 64 bits becomes a renderInt, a larger one stays a
// json.Number (printed digit for digit), and a number with a fraction or
// exponent a float64. Objects are map[string]any, arrays []any. Empty
// input is nil. Errors: the JSON decoder's, or more than one value.
func decodeData(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return exactNumbers(v), nil
}

// exactNumbers replaces the json.Numbers in v (see decodeData).
func exactNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return renderInt(i)
			}
			return v
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = exactNumbers(x)
		}
	case map[string]any:
		for k, x := range v {
			v[k] = exactNumbers(x)
		}
	}
	return v
}

var _ fmt.Formatter = renderInt(0)

// valueKind names a template value for an error by its JSON kind, quoting
// a short string ("the string \"ten\""), never by its Go type: a
// sequence's author wrote JSON and YAML, not Go.
func valueKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) <= 40 {
			return fmt.Sprintf("the string %q", x)
		}
		return "a string"
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case []any, []string:
		return "a list"
	case map[string]any:
		return "an object"
	case float64, json.Number, renderInt, int, int64:
		return fmt.Sprintf("the number %v", x)
	}
	return "a value of another kind"
}

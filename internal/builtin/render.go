package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/skillbus/skillbus/pkg/tool"
)

// MaxRenderSteps bounds the work of one text.render call: every range
// iteration and every template invocation ({{template}} and the template
// itself) is one step. It stops templates that loop without writing, such
// as nested {{range}}s with empty bodies, which the output cap cannot catch.
// 2 million steps take from a fifth of a second (empty range bodies) to a
// few seconds (template calls); the caller's deadline also ends a render.
const MaxRenderSteps = 2_000_000

// errRenderTooLong and errRenderTooBig end an Execute from renderWriter.
var (
	errRenderTooBig  = errors.New("output cap reached")
	errRenderTooLong = errors.New("step limit reached")
)

// renderWriter collects a template's output up to max bytes. Every Write
// also counts one step (see stepMarks) and checks ctx, so Execute stops
// with an error as soon as the output is too big, the steps run out or the
// caller has gone.
type renderWriter struct {
	ctx   context.Context
	buf   bytes.Buffer
	max   int
	steps int
}

func (w *renderWriter) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	if w.steps++; w.steps > MaxRenderSteps {
		return 0, errRenderTooLong
	}
	if w.buf.Len()+len(p) > w.max {
		return 0, errRenderTooBig
	}
	return w.buf.Write(p)
}

// stepMarks puts an empty text node at the start of every template body
// and every range body of t's templates. text/template writes text nodes
// even when empty, so each iteration and each template call reaches
// renderWriter.Write, which counts it and checks the context: there is no
// other way for a template to loop (its functions are all linear in their
// input, and the data is JSON, so it holds no functions to call).
func stepMarks(t *template.Template) {
	var mark func(n parse.Node)
	prepend := func(l *parse.ListNode) {
		if l == nil {
			return
		}
		for _, n := range l.Nodes {
			mark(n)
		}
		l.Nodes = append([]parse.Node{&parse.TextNode{NodeType: parse.NodeText, Pos: l.Pos, Text: []byte{}}}, l.Nodes...)
	}
	mark = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			for _, c := range n.Nodes {
				mark(c)
			}
		case *parse.RangeNode:
			prepend(n.List)
			if n.ElseList != nil {
				mark(n.ElseList)
			}
		case *parse.IfNode:
			mark(n.List)
			if n.ElseList != nil {
				mark(n.ElseList)
			}
		case *parse.WithNode:
			mark(n.List)
			if n.ElseList != nil {
				mark(n.ElseList)
			}
		}
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			prepend(tt.Tree.Root)
		}
	}
}

// RenderArgs are text.render's arguments.
type RenderArgs struct {
	Template string `json:"template" jsonschema:"Go text/template; functions: join lines first trunc json keys default upper lower trim, and text/template's own (printf, len, index, eq, ...); a missing key or a null is empty text"`
	// Data is decoded by decodeData (exact integers), not by encoding/json.
	Data json.RawMessage `json:"data,omitempty" jsonschema:"the value the template renders (. in the template)"`
}

// render is text.render: it executes a Go text/template (with the
// functions of renderFuncs) on data and returns the text as a JSON string.
// A missing key and a JSON null are empty text, also under a field of
// them and in printf (nilSafe; docs/tools.md).
// Numbers in data keep their exact value (decodeData): a JSON integer is
// an integer (9007199254740993 prints as such), other numbers are float64.
//
// Limits: output over DefaultMaxRenderBytes is an error with code "413"
// (nothing is returned: a cut report would pass for a whole one), and so is
// a template function asked to build a string over that size, or functions
// building more than MaxRenderWorkBytes in one render — checked before the
// string is built, so a hostile printf width cannot make the provider
// allocate it; more than MaxRenderSteps range iterations and template calls
// is code "400"; the end of ctx (the caller's deadline) stops the render
// with ctx's error (code "504" on the wire for a deadline). A template
// error is code "400" with the template's own line and column.
func render(ctx context.Context, args json.RawMessage) (any, error) {
	var in RenderArgs
	if err := decodeArgs(args, &in); err != nil {
		return nil, err
	}
	if in.Template == "" {
		return nil, tool.Errorf("400", "bad arguments: template is required (Go text/template syntax, for example \"Hello {{.name}}\")")
	}
	data, err := decodeData(in.Data)
	if err != nil {
		return nil, tool.Errorf("400", "bad arguments: data: %v", err)
	}
	w := &renderWriter{ctx: ctx, max: DefaultMaxRenderBytes}
	b := &renderBudget{w: w}
	t, err := template.New("template").Option("missingkey=zero").Funcs(b.funcs()).Parse(in.Template)
	if err != nil {
		return nil, tool.Errorf("400", "template: %v", strings.TrimPrefix(err.Error(), "template: "))
	}
	stepMarks(t)
	written := nilSafe(t)
	switch err := t.Execute(w, data); {
	case err == nil:
	case errors.Is(err, errRenderTooBig):
		return nil, tool.Errorf("413", "template output over %d bytes (%d KiB), the limit of text.render: render less (for example with first N or trunc N) or split the report", DefaultMaxRenderBytes, DefaultMaxRenderBytes>>10)
	case errors.Is(err, errBuildTooBig):
		return nil, tool.Errorf("413", "template: %v", strings.TrimPrefix(err.Error(), "template: "))
	case errors.Is(err, errRenderTooLong):
		return nil, tool.Errorf("400", "template ran more than %d steps (range iterations and template calls), the limit of text.render: it loops too much (nested range over the same list?); range over less data", MaxRenderSteps)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("text.render stopped: %w", ctx.Err())
	default:
		msg := strings.TrimPrefix(err.Error(), "template: ")
		for call, chain := range written { // name what the author wrote, not nilSafe's rewrite
			msg = strings.ReplaceAll(strings.ReplaceAll(msg, "("+call+")", chain), call, chain)
		}
		msg = strings.ReplaceAll(msg, "error calling "+fieldFunc+": ", "")
		return nil, tool.Errorf("400", "template: %v", msg)
	}
	return w.buf.String(), nil
}

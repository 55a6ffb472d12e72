package builtin

import (
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

// The functions nilSafe calls from a rewritten template. They are in the
// template's FuncMap (renderBudget.funcs) under names no JSON data or
// template of ours uses.
const (
	fieldFunc = "_skillbus_field"
	textFunc  = "_skillbus_text"
)

// nilSafe rewrites t's templates so that a missing key and a JSON null
// render as empty text (docs/tools.md, "text.render"), where Go's
// text/template prints "<no value>" for them even with missingkey=zero
// (a nil interface{} from a map[string]any is "no value" to it) and fails
// on a field of one (`.a.b` with a missing: "nil pointer evaluating
// interface {}.b"):
//
//   - every field chain (.a.b, $x.a, $.a) becomes a call of fieldFunc, which
//     walks the objects and gives nil for a missing key or a null anywhere
//     on the way (a field of a list, a number or text is still an error);
//   - every action that prints ({{...}} without a declaration) ends its
//     pipeline with textFunc, which gives "" for nil.
//
// `if`, `with` and `range` see nil as before: false, no iterations. It
// returns the text of each rewritten field call and the field chain it
// replaced, so that template errors can name what the author wrote.
func nilSafe(t *template.Template) map[string]string {
	written := map[string]string{}
	var pipe func(p *parse.PipeNode)
	arg := func(n parse.Node) parse.Node {
		var names []string
		var recv parse.Node
		switch n := n.(type) {
		case *parse.FieldNode:
			recv, names = &parse.DotNode{NodeType: parse.NodeDot, Pos: n.Pos}, n.Ident
		case *parse.VariableNode:
			if len(n.Ident) < 2 {
				return n
			}
			recv, names = &parse.VariableNode{NodeType: parse.NodeVariable, Pos: n.Pos, Ident: n.Ident[:1]}, n.Ident[1:]
		case *parse.PipeNode:
			pipe(n)
			return n
		default:
			return n
		}
		args := []parse.Node{&parse.IdentifierNode{NodeType: parse.NodeIdentifier, Pos: n.Position(), Ident: fieldFunc}, recv}
		for _, name := range names {
			args = append(args, &parse.StringNode{NodeType: parse.NodeString, Pos: n.Position(), Quoted: fmt.Sprintf("%q", name), Text: name})
		}
		p := &parse.PipeNode{NodeType: parse.NodePipe, Pos: n.Position(), Cmds: []*parse.CommandNode{{NodeType: parse.NodeCommand, Pos: n.Position(), Args: args}}}
		written[p.String()] = n.String()
		return p
	}
	pipe = func(p *parse.PipeNode) {
		if p == nil {
			return
		}
		for _, c := range p.Cmds {
			for i, a := range c.Args {
				c.Args[i] = arg(a)
			}
		}
	}
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			pipe(n.Pipe)
			if len(n.Pipe.Decl) == 0 {
				n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos,
					Args: []parse.Node{&parse.IdentifierNode{NodeType: parse.NodeIdentifier, Pos: n.Pos, Ident: textFunc}}})
			}
		case *parse.IfNode:
			pipe(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			pipe(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			pipe(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			pipe(n.Pipe)
		}
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil && tt.Tree.Root != nil {
			walk(tt.Tree.Root)
		}
	}
	return written
}

// field is fieldFunc: the value at names under v, nil when a key is
// missing or a value on the way is null.
func field(v any, names ...string) (any, error) {
	for i, name := range names {
		switch m := v.(type) {
		case nil:
			return nil, nil
		case map[string]any:
			v = m[name]
		default:
			at := "." + strings.Join(names[:i], ".")
			if i == 0 {
				at = "the value"
			}
			return nil, fmt.Errorf("can't read field %s of %s: %s is %s, not an object", name, at, at, valueKind(v))
		}
	}
	return v, nil
}

// text is textFunc: "" for nil (a missing key, a null), else v.
func text(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// nilText returns args with nil (a missing key, a null) replaced by "",
// for the functions that print their arguments (print, printf, println,
// join): they would print "<nil>".
func nilText(args []any) []any {
	for i, a := range args {
		if a == nil {
			args[i] = ""
		}
	}
	return args
}

// length is text.render's len: text/template's, but 0 for nil (a missing
// key, a null), which is empty text everywhere else too; the length of a
// number or a boolean is an error.
func length(v any) (int, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case string:
		return len(x), nil
	case []any:
		return len(x), nil
	case []string:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	}
	return 0, fmt.Errorf("len of %s: len takes text, a list or an object", valueKind(v))
}

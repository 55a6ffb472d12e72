package seq

import "context"

// CallPosition is a tool call's place in a run, in the engine's order:
// groups in sequence order, a group's calls in the order of its tools
// (also when the group is parallel), a for_each call's items in list
// order. A Caller reads it from the context of its Call with
// CallPositionOf, for example to report calls made at the same moment in
// a stable order (`skillbus test`'s trace, docs/testing.md).
type CallPosition struct {
	Group   int // the group's index in Sequence.Groups, from 0
	Call    int // the call's index in the group's tools, from 0
	Item    int // the for_each item's index ($index, from 0); -1 for a call without for_each
	Attempt int // the attempt of this call or item, from 1 (retries add one)
}

// positionKey is the context key of a CallPosition.
type positionKey struct{}

// positionCtx is a context carrying a call's position: one allocation
// per call, where context.WithValue makes two (the context and the
// position boxed in an interface), on the path every tool call takes.
// Cancellation, deadline and other values are the parent's.
type positionCtx struct {
	context.Context
	pos CallPosition
}

// Value returns the position for positionKey and asks the parent for any
// other key.
func (c *positionCtx) Value(key any) any {
	if _, ok := key.(positionKey); ok {
		return c.pos
	}
	return c.Context.Value(key)
}

// withPosition returns ctx carrying p for the Caller.
func withPosition(ctx context.Context, p CallPosition) context.Context {
	return &positionCtx{Context: ctx, pos: p}
}

// CallPositionOf returns the position of the tool call whose context is
// ctx, and false for a context that Run or RunGroup did not give to a
// Caller.
func CallPositionOf(ctx context.Context) (CallPosition, bool) {
	if pc, ok := ctx.(*positionCtx); ok {
		return pc.pos, true // the Caller's own context: no boxing
	}
	p, ok := ctx.Value(positionKey{}).(CallPosition)
	return p, ok
}

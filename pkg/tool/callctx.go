package tool

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context a tool function gets: the server's base context
// (its values, and its cancellation when Stop gives up on running calls)
// with the call's deadline. Unlike context.WithDeadline it starts no timer
// until someone asks for Done: most quick tools never do, and a timer per
// call costs as much as the rest of the call path. Err is correct without
// the timer (it compares the deadline with the clock).
type callCtx struct {
	context.Context // the parent
	deadline        time.Time

	mu       sync.Mutex // mu guards the fields below
	done     chan struct{}
	err      error
	timer    *time.Timer
	stop     func() bool // stops the watch on the parent
	cancelBy bool        // its caller cancelled the call (cancelByCaller)
}

func newCallCtx(parent context.Context, deadline time.Time) *callCtx {
	return &callCtx{Context: parent, deadline: deadline}
}

// Deadline returns the call's deadline.
func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done returns a channel closed at the deadline, when the parent is done,
// or when the call ends; the first call starts the timer and the watch on
// the parent.
func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.errLocked() != nil {
		close(c.done)
		return c.done
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.cancel(context.DeadlineExceeded) })
	c.stop = context.AfterFunc(c.Context, func() { c.cancel(c.Context.Err()) })
	return c.done
}

// Err returns context.DeadlineExceeded once the deadline has passed, the
// parent's error once it is done, context.Canceled once the call has
// ended, and nil before.
func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.errLocked()
	if err != nil && c.done != nil {
		c.closeLocked()
	}
	return err
}

// errLocked settles c.err from the parent and the clock.
func (c *callCtx) errLocked() error {
	if c.err == nil {
		if err := c.Context.Err(); err != nil {
			c.err = err
		} else if !time.Now().Before(c.deadline) {
			c.err = context.DeadlineExceeded
		}
	}
	return c.err
}

// cancel ends the context with err (unless it has ended already) and
// releases the timer and the watch.
func (c *callCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	c.closeLocked()
}

// cancelByCaller ends the context with context.Canceled because the
// caller sent a cancel (docs/tools.md, "Cancel").
func (c *callCtx) cancelByCaller() {
	c.mu.Lock()
	if c.err == nil {
		c.cancelBy = true
	}
	c.mu.Unlock()
	c.cancel(context.Canceled)
}

// byCaller reports whether the call's caller cancelled it.
func (c *callCtx) byCaller() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cancelBy
}

func (c *callCtx) closeLocked() {
	if c.done != nil {
		select {
		case <-c.done:
		default:
			close(c.done)
		}
	}
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

// String names the context in panics and logs.
func (c *callCtx) String() string { return "tool call context (deadline " + c.deadline.String() + ")" }

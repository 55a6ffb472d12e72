package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// DefaultCallTimeout bounds a call whose context has no deadline.
const DefaultCallTimeout = 60 * time.Second

// DefaultMissingGrace is how long a call waits, by default, for a tool
// that has no provider right now but answered within the last minute (or
// right after the caller's own reconnect) before the tool counts as
// missing: its provider is most likely reconnecting to another NATS server
// (docs/tools.md, "Across NATS faults").
const DefaultMissingGrace = 15 * time.Second

// recentWindow: a tool that answered within it is expected back when it
// has no responders (see DefaultMissingGrace).
const recentWindow = time.Minute

// Client calls tools over NATS request/reply. It implements toolcall.Caller (and so pkg/seq's Caller), so
// the seqworker's engine runs sequences against real tool providers. A
// Client is safe for concurrent use.
//
// Replies arrive on one subscription of the Client (an inbox of the
// connection, with one token per call), which lets a call outlive its
// connection: a call in flight when the connection drops is sent again,
// with the same reply subject, once it is back (docs/tools.md, "Across
// NATS faults").
type Client struct {
	nc        *nats.Conn
	timeout   time.Duration
	grace     time.Duration
	keepAlive time.Duration // asked of providers; 0: no progress messages
	lostGrace time.Duration
	progress  []string // the ProgressHeader value sent (shared, never changed)
	tr        tracing

	tools  sync.Map     // tool name → *toolEntry
	ntools atomic.Int32 // names stored in tools (at most maxSubjects)

	// The reply subscription and the connection watch, set up by the first
	// call (start).
	initMu  sync.Mutex
	started atomic.Bool
	prefix  string // replies arrive on prefix + token
	sub     *nats.Subscription
	next    atomic.Uint64 // the last token handed out
	reconAt atomic.Int64  // unix ns of the last reconnect; 0 none

	mu        sync.Mutex // mu guards the fields below
	pending   map[string]*pendingCall
	connected bool
	gen       uint64        // connections so far; a call sent on an older one is sent again
	up        chan struct{} // closed while connected
	closed    bool
	// tracked are the pending calls that had a progress message, which
	// the watchdog looks after while it runs (watching).
	tracked  map[string]*pendingCall
	watching bool
}

// toolEntry is what the Client keeps per tool name.
type toolEntry struct {
	subject, cancel string
	lastOK          atomic.Int64 // unix ns of the last answer; 0 never
	// speaks: a provider of the tool sent a progress message (the
	// keep-alive protocol, progress.go): a call of it that gets neither
	// an acknowledgement nor its reply was lost on its way, and is sent
	// again (watchdog).
	speaks atomic.Bool
}

// pendingCall is a call waiting for its reply. Its fields other than ch
// and msg are guarded by Client.mu.
type pendingCall struct {
	ch     chan *nats.Msg // the reply (or closed: the connection closed)
	msg    *nats.Msg      // the request, sent again after a reconnect
	gen    uint64         // the connection it was last sent on
	lost   bool           // the connection dropped while it was pending
	resent int            // times sent again after a reconnect
	// The keep-alive protocol (progress.go): acked says a progress
	// message came; beat is when the last one came (or the call was last
	// sent again); silentSince is when the progress messages stopped (zero
	// while they come); quietResends counts the times it was sent again
	// for that.
	acked        bool
	beat         time.Time
	silentSince  time.Time
	quietResends int
	te           *toolEntry // the tool called (its speaks flag)
}

// ClientOption configures a Client.
type ClientOption func(*Client) error

// WithDefaultTimeout sets the deadline applied when a call's context has
// none; d must be positive. Default DefaultCallTimeout (60 s).
func WithDefaultTimeout(d time.Duration) ClientOption {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("%w: default timeout %s; want more than 0", ErrConfig, d)
		}
		c.timeout = d
		return nil
	}
}

// WithMissingGrace sets how long a call waits for a tool that answered in
// the last minute (or any tool right after the client's own reconnect) to
// have a provider again before it counts as missing; 0 decides at once,
// as for a tool never seen. Default DefaultMissingGrace (15 s). Errors:
// ErrConfig for a negative d.
func WithMissingGrace(d time.Duration) ClientOption {
	return func(c *Client) error {
		if d < 0 {
			return fmt.Errorf("%w: missing grace %s; want 0 or more", ErrConfig, d)
		}
		c.grace = d
		return nil
	}
}

// WithKeepAlive sets the keep-alive interval the Client asks providers
// for (the ProgressHeader, docs/tools.md "Keep-alives"): a call whose
// provider acknowledged it and then sent nothing for 3 intervals is sent
// again. 0 asks for none (no header is sent: every call waits for its
// reply until its deadline). Default DefaultKeepAlive (1 s). Errors:
// ErrConfig for a d that is negative or, when not 0, under 100 ms or over
// a minute.
func WithKeepAlive(d time.Duration) ClientOption {
	return func(c *Client) error {
		if d < 0 || (d > 0 && (d < minKeepAlive || d > maxKeepAlive)) {
			return fmt.Errorf("%w: keep-alive %s; want 0 (none) or from %s to %s", ErrConfig, d, minKeepAlive, maxKeepAlive)
		}
		c.keepAlive = d
		return nil
	}
}

// WithLostGrace sets how long, after a call's keep-alives stopped, the
// Client keeps sending it again (waiting for an acknowledgement, or for a
// provider after "no responders") before it takes the provider for dead
// and the call fails with ErrProviderLost (a code "503" tool error).
// Default DefaultLostGrace (5 s). Errors: ErrConfig for a negative d.
func WithLostGrace(d time.Duration) ClientOption {
	return func(c *Client) error {
		if d < 0 {
			return fmt.Errorf("%w: lost grace %s; want 0 or more", ErrConfig, d)
		}
		c.lostGrace = d
		return nil
	}
}

// NewClient returns a Client over nc. Errors: ErrConfig from an option.
func NewClient(nc *nats.Conn, opts ...ClientOption) (*Client, error) {
	c := &Client{nc: nc, timeout: DefaultCallTimeout, grace: DefaultMissingGrace, keepAlive: DefaultKeepAlive, lostGrace: DefaultLostGrace, tr: newTracing()}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.keepAlive > 0 {
		c.progress = []string{c.keepAlive.String()}
	}
	return c, nil
}

var _ toolcall.Caller = (*Client)(nil)

// Call sends args (a JSON object; nil or empty means "{}") to tool.<name>
// and returns the provider's JSON result. The call ends at ctx's deadline,
// or after the default timeout when ctx has none; the deadline travels in
// the DeadlineHeader and the trace context in traceparent.
//
// Across NATS faults (docs/tools.md): a call made while the connection is
// down is sent once it is back; a call in flight when the connection drops
// is sent again, on the same reply subject, after the reconnect (so the
// provider may run it twice: at-least-once); a tool with no responders
// that answered within the last minute is called again for up to the
// missing grace (WithMissingGrace) before it counts as missing. When ctx
// is cancelled (not at its deadline), the provider is told to cancel the
// call (tool.<name>.$cancel).
//
// Errors:
//   - ErrBadName, ErrBadArgs (args are not braced like a JSON object):
//     nothing was sent. Malformed JSON inside the braces is sent and the
//     provider answers it with a code "400" *Error.
//   - ErrPayloadTooLarge: args exceed the server's max_payload; nothing
//     was sent.
//   - an error wrapping toolcall.ErrMissing (and nats.ErrNoResponders): no
//     provider serves the tool; returned at once for a tool not seen
//     lately, not after the timeout.
//   - *Error (toolcall.Error): the provider answered with an error (its code and
//     description).
//   - an error wrapping ErrTimeout and context.DeadlineExceeded, or
//     context.Canceled: no reply in time. When the connection dropped while
//     the call was in flight, the timeout also wraps ErrInterrupted.
//   - an error wrapping ErrProviderLost and a code "503" *Error: the
//     provider acknowledged the call, its keep-alives stopped, and the
//     call sent again was taken up by no provider within the lost grace
//     (WithLostGrace; docs/tools.md, "Keep-alives").
//   - nats.ErrConnectionClosed: the connection closed for good.
//
// A call asks its provider for keep-alives (WithKeepAlive): one whose
// provider acknowledged it and then fell silent for 3 intervals is sent
// again, on the same reply subject, without an error (a reply lost on the
// provider's side, a provider that reconnected). A provider that sends
// none is waited for until the deadline.
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	te, err := c.entry(name)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadName, err)
	}
	subject := te.subject
	if len(args) == 0 || isBlank(args) {
		args = json.RawMessage("{}")
	} else if !looksLikeObject(args) {
		return nil, fmt.Errorf("%w: tool %q: got %s", ErrBadArgs, name, preview(args))
	}
	if max := c.nc.MaxPayload(); int64(len(args)) > max {
		return nil, tooLarge(name, len(args), max)
	}
	// A context that can never end (context.Background) needs no timer of
	// its own: a pooled timer bounds the wait.
	deadline, hasDeadline := ctx.Deadline()
	plain := !hasDeadline && ctx.Done() == nil
	if !hasDeadline && !plain {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
		deadline, _ = ctx.Deadline()
	} else if plain {
		deadline = time.Now().Add(c.timeout)
	}
	ctx, span := c.tr.start(ctx, func() string { return "request " + subject }, trace.SpanKindClient, "request", subject, len(args))
	msg := &nats.Msg{Subject: subject, Data: args, Header: nats.Header{DeadlineHeader: []string{formatDeadline(deadline)}}}
	if c.progress != nil {
		msg.Header[ProgressHeader] = c.progress
	}
	c.tr.inject(ctx, msg.Header)
	start := time.Now()
	reply, interrupted, err := c.roundTrip(ctx, plain, deadline, te, msg)
	end(span, err)
	if err != nil {
		return nil, c.callError(name, subject, len(args), start, interrupted, err)
	}
	if len(reply.Header) > 0 {
		if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
			if code == "504" && (ctx.Err() != nil || !time.Now().Before(deadline)) {
				// The provider gave up at our deadline and said so first:
				// the caller's own timeout.
				return nil, c.callError(name, subject, len(args), start, false, context.DeadlineExceeded)
			}
			return nil, &toolcall.Error{Tool: name, Code: code, Description: reply.Header.Get(micro.ErrorHeader)}
		}
	}
	return json.RawMessage(reply.Data), nil
}

// callError is the error of a call of tool name on subject (its
// arguments size bytes, sent at start) whose round trip failed with err
// (interrupted: the connection dropped while it was in flight), in the
// words of docs/tools.md. It is kept out of Call so that Call's frame
// stays small: a call runs on a goroutine of its own, whose stack grows
// (and is copied) when a deep call path needs more.
func (c *Client) callError(name, subject string, size int, start time.Time, interrupted bool, err error) error {
	var lost *lostCall
	switch {
	case errors.As(err, &lost):
		return fmt.Errorf("%w: %w", ErrProviderLost, &toolcall.Error{Tool: name, Code: "503", Description: fmt.Sprintf(
			"its provider acknowledged the call, then sent no keep-alive for %s, and the call sent again %d time(s) was taken up by no provider: it died, or lost its connection to NATS (docs/tools.md, \"Keep-alives\")",
			lost.quiet.Round(time.Millisecond), lost.resends)})
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("tool %q: no provider serves %s: %w (%w)", name, subject, toolcall.ErrMissing, err)
	case errors.Is(err, nats.ErrMaxPayload):
		// The arguments fit, but not with the headers (trace context,
		// deadline) added.
		return tooLarge(name, size, c.nc.MaxPayload())
	case interrupted && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)):
		return fmt.Errorf("tool %q: %w: no reply before the deadline (waited %s), and the connection to NATS was lost while the call was in flight (%w; %w)",
			name, ErrInterrupted, time.Since(start).Round(time.Millisecond), ErrTimeout, context.DeadlineExceeded)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("tool %q: %w (waited %s): %w", name, ErrTimeout, time.Since(start).Round(time.Millisecond), context.DeadlineExceeded)
	default:
		return fmt.Errorf("tool %q: %w", name, err)
	}
}

// roundTrip sends msg and waits for its reply until ctx ends (or, when
// plain, until deadline), sending it again after a reconnect and, for a
// tool seen lately, after "no responders" within the missing grace.
// interrupted reports that the connection dropped while the call was in
// flight.
func (c *Client) roundTrip(ctx context.Context, plain bool, deadline time.Time, te *toolEntry, msg *nats.Msg) (reply *nats.Msg, interrupted bool, err error) {
	if err := c.start(); err != nil {
		return nil, false, err
	}
	var done <-chan struct{}
	var expired <-chan time.Time
	if plain {
		t := acquireTimer(time.Until(deadline))
		defer releaseTimer(t)
		expired = t.C
	} else {
		done = ctx.Done()
	}
	token := strconv.FormatUint(c.next.Add(1), 36)
	msg.Reply = c.prefix + token
	p := &pendingCall{ch: make(chan *nats.Msg, 1), msg: msg, te: te}
	var missingSince time.Time
	missingTries := 0
	// ended says why the wait ended when done or expired fired: the
	// caller's error, after telling the provider when the caller gave up.
	ended := func() error {
		c.mu.Lock()
		delete(c.pending, token)
		interrupted = p.lost || p.resent > 0
		c.mu.Unlock()
		if plain {
			return nats.ErrTimeout
		}
		if err := ctx.Err(); errors.Is(err, context.Canceled) {
			c.sendCancel(te, msg.Reply)
			return err
		}
		return ctx.Err()
	}
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, interrupted, nats.ErrConnectionClosed
		}
		if !c.connected {
			// Wait for the connection rather than leave the call in the
			// reconnect buffer (it would go out twice: from the buffer
			// and again after the reconnect).
			up := c.up
			c.mu.Unlock()
			poll := time.NewTimer(250 * time.Millisecond)
			select {
			case <-up:
			case <-poll.C:
				if c.nc.IsConnected() {
					c.onConnected() // a missed status event
				}
			case <-done:
				poll.Stop()
				return nil, interrupted, ended()
			case <-expired:
				poll.Stop()
				return nil, interrupted, ended()
			}
			poll.Stop()
			continue
		}
		p.gen = c.gen
		c.pending[token] = p
		if p.acked || (c.keepAlive > 0 && te.speaks.Load()) {
			// Sent again after "no responders", or a call of a tool whose
			// providers send progress messages: the watchdog looks after
			// it, from now (one never acknowledged is sent again when its
			// acknowledgement does not come: progress.go).
			p.beat = time.Now()
			c.trackLocked(token, p)
		}
		c.mu.Unlock()
		if err := c.nc.PublishMsg(msg); err != nil {
			c.mu.Lock()
			delete(c.pending, token)
			c.mu.Unlock()
			return nil, interrupted, err
		}
		select {
		case m, ok := <-p.ch:
			if !ok {
				return nil, true, nats.ErrConnectionClosed
			}
			c.mu.Lock()
			interrupted = p.lost || p.resent > 0
			silentSince, quiet := p.silentSince, p.quietResends
			c.mu.Unlock()
			if m == lostMsg {
				c.sendCancel(te, msg.Reply) // in case a provider still holds it, unheard
				return nil, interrupted, &lostCall{quiet: time.Since(silentSince), resends: quiet}
			}
			if len(m.Data) == 0 && m.Header.Get(statusHeader) == noRespondersStatus {
				var wait time.Duration
				if !silentSince.IsZero() {
					// Sent again because its keep-alives stopped, and now
					// nobody serves the tool: its provider is reconnecting,
					// or dead once the lost grace is over.
					if wait = c.lostWait(silentSince, &missingTries, deadline); wait <= 0 {
						return nil, interrupted, &lostCall{quiet: time.Since(silentSince), resends: quiet}
					}
				} else {
					wait = c.missingWait(te, &missingSince, &missingTries, deadline)
				}
				if wait <= 0 {
					return nil, interrupted, nats.ErrNoResponders
				}
				t := time.NewTimer(wait)
				select {
				case <-t.C:
					continue
				case <-done:
				case <-expired:
				}
				t.Stop()
				// The deadline (or a cancel) came while the tool was
				// missing: say so, not "no reply".
				if err := ended(); errors.Is(err, context.Canceled) {
					return nil, interrupted, err
				}
				if !silentSince.IsZero() {
					return nil, interrupted, &lostCall{quiet: time.Since(silentSince), resends: quiet}
				}
				return nil, interrupted, nats.ErrNoResponders
			}
			te.lastOK.Store(time.Now().UnixNano())
			if interrupted || quiet > 0 {
				// The call went out twice: a provider may still be
				// running the other copy.
				c.sendCancel(te, msg.Reply)
			}
			return m, interrupted, nil
		case <-done:
			return nil, interrupted, ended()
		case <-expired:
			return nil, interrupted, ended()
		}
	}
}

// The status header of the message the NATS server sends when a request
// has no responders (nats.go's own constants are not exported).
const (
	statusHeader       = "Status"
	noRespondersStatus = "503"
)

// missingWait returns how long to wait before calling again a tool that
// has no responders, or 0 when it counts as missing now: a tool that
// answered within recentWindow, or any tool within the grace after this
// client's reconnect, is given up to the grace (and never past deadline).
func (c *Client) missingWait(te *toolEntry, since *time.Time, tries *int, deadline time.Time) time.Duration {
	if c.grace <= 0 {
		return 0
	}
	now := time.Now()
	last, recon := te.lastOK.Load(), c.reconAt.Load()
	recent := (last != 0 && now.Sub(time.Unix(0, last)) < recentWindow) || (recon != 0 && now.Sub(time.Unix(0, recon)) < c.grace)
	if !recent {
		return 0
	}
	if since.IsZero() {
		*since = now
	}
	left := min(c.grace-now.Sub(*since), deadline.Sub(now))
	if left <= 0 {
		return 0
	}
	wait := 50 * time.Millisecond << min(*tries, 4) // 50 ms doubling to 800 ms
	*tries++
	return min(wait, left)
}

// sendCancel tells the provider running the call whose reply subject is
// reply to cancel it (tool.<name>.$cancel; best effort).
func (c *Client) sendCancel(te *toolEntry, reply string) {
	if te.cancel != "" {
		_ = c.nc.Publish(te.cancel, []byte(reply))
	}
}

// start subscribes to the client's reply subjects and starts watching the
// connection, once.
func (c *Client) start() error {
	if c.started.Load() {
		return nil
	}
	c.initMu.Lock()
	defer c.initMu.Unlock()
	if c.started.Load() {
		return nil
	}
	if c.nc.IsClosed() {
		return nats.ErrConnectionClosed
	}
	status := c.nc.StatusChanged(nats.CONNECTED, nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	prefix := c.nc.NewInbox() + "."
	c.prefix = prefix
	sub, err := c.nc.Subscribe(prefix+"*", c.onReply)
	if err != nil {
		c.nc.RemoveStatusListener(status)
		return err
	}
	c.mu.Lock()
	c.sub = sub
	c.pending = map[string]*pendingCall{}
	c.up = make(chan struct{})
	c.mu.Unlock()
	if c.nc.IsConnected() {
		c.onConnected()
	}
	go c.watch(status)
	c.started.Store(true)
	return nil
}

// watch follows the connection's status until it closes.
func (c *Client) watch(status chan nats.Status) {
	for st := range status {
		switch st {
		case nats.CONNECTED:
			c.onConnected()
		case nats.DISCONNECTED, nats.RECONNECTING:
			c.onDisconnected()
		case nats.CLOSED:
			c.onClosed()
			c.nc.RemoveStatusListener(status) // closes status: the loop ends
		}
	}
}

// onReply hands a reply to its call (the first reply wins; a call sent
// twice may be answered twice).
func (c *Client) onReply(m *nats.Msg) {
	token := m.Subject[len(c.prefix):]
	if isProgress(m) {
		if c.keepAlive > 0 { // else asked for none: ignored
			c.onProgress(token)
		}
		return
	}
	c.mu.Lock()
	p := c.pending[token]
	if p != nil {
		delete(c.pending, token)
		delete(c.tracked, token) // answered: the watchdog has nothing to look after
	}
	c.mu.Unlock()
	if p != nil {
		select {
		case p.ch <- m:
		default:
		}
	}
}

// onConnected marks the connection up and sends again every pending call
// that went out on an earlier connection: its request or its reply may
// have been lost with it.
func (c *Client) onConnected() {
	c.mu.Lock()
	if c.connected || c.closed || c.up == nil {
		c.mu.Unlock()
		return
	}
	c.connected = true
	first := c.gen == 0
	c.gen++
	close(c.up)
	var again []*nats.Msg
	now := time.Now()
	for _, p := range c.pending {
		if p.gen < c.gen {
			p.gen = c.gen
			p.resent++
			p.beat = now // the watchdog counts its silence from here
			again = append(again, p.msg)
		}
	}
	c.mu.Unlock()
	if !first {
		c.reconAt.Store(time.Now().UnixNano())
	}
	for _, m := range again {
		_ = c.nc.PublishMsg(m)
	}
}

// onDisconnected marks the connection down and the pending calls as
// possibly lost.
func (c *Client) onDisconnected() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.connected {
		c.connected = false
		c.up = make(chan struct{})
	}
	for _, p := range c.pending {
		p.lost = true
	}
}

// onClosed ends every pending call and every call waiting for the
// connection: it closed for good.
func (c *Client) onClosed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if !c.connected && c.up != nil {
		close(c.up)
	}
	c.connected = false
	for token, p := range c.pending {
		delete(c.pending, token)
		close(p.ch)
	}
}

// timers is a pool of stopped timers for calls without a context deadline.
var timers sync.Pool

func acquireTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func releaseTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// formatDeadline writes t as DeadlineHeader wants it: RFC 3339 with
// nanoseconds, UTC.
func formatDeadline(t time.Time) string {
	var buf [40]byte
	return string(t.UTC().AppendFormat(buf[:0], time.RFC3339Nano))
}

// toolSubject returns tool.<name>. A name of letters, digits, '-', '_'
// and single dots between parts is joined at once; anything else goes
// through events.ToolSubject, which explains what is wrong.
func toolSubject(name string) (string, error) {
	ok := name != "" && name[0] != '.' && name[len(name)-1] != '.'
	for i := 0; ok && i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		case c == '.':
			ok = name[i-1] != '.'
		default:
			ok = false
		}
	}
	if ok {
		return events.ToolPrefix + name, nil
	}
	return events.ToolSubject(name)
}

// entry returns the Client's record of a tool: its subject
// (toolSubject), its cancel subject and when it last answered. The
// records of the first maxSubjects names are kept, so that a call does not
// build its subjects again and "answered lately" is known.
func (c *Client) entry(name string) (*toolEntry, error) {
	if e, ok := c.tools.Load(name); ok {
		return e.(*toolEntry), nil
	}
	s, err := toolSubject(name)
	if err != nil {
		return nil, err
	}
	e := &toolEntry{subject: s, cancel: s + "." + events.ToolCancelToken}
	if c.ntools.Add(1) <= maxSubjects {
		if prev, loaded := c.tools.LoadOrStore(name, e); loaded {
			return prev.(*toolEntry), nil
		}
	}
	return e, nil
}

// maxSubjects bounds Client's subject cache.
const maxSubjects = 1024

func tooLarge(tool string, size int, max int64) error {
	return fmt.Errorf("%w: arguments for tool %q are %d bytes (with headers) and the server's max_payload is %d bytes — pass a reference (a path, a URL, a KV key) instead of the data, or raise max_payload", ErrPayloadTooLarge, tool, size, max)
}

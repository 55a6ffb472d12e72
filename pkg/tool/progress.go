package tool

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Progress: how a caller learns within seconds that a call is no longer
// being worked on (docs/tools.md, "Keep-alives").
//
// A caller that wants to know sends its request with the ProgressHeader
// set to the keep-alive interval it asks for ("1s"). A provider that
// speaks the protocol (every pkg/tool Server) sends, on the call's reply
// subject and until it replies, progress messages: an empty body with
// the ProgressHeader set to ProgressAccepted once the call has been with
// it for progressAckAfter without being answered, then ProgressAlive at
// the interval. A call answered within progressAckAfter gets its reply
// and nothing else, so a quick call costs no more messages. A provider
// without the protocol (a plain NATS micro service) ignores the header:
// the caller sees no progress message and waits for the reply until the
// deadline, as before.
//
// The caller (Client) tracks a call once a progress message came for it.
// When none has come for keepAliveMisses intervals, the call is no longer
// being worked on where it was sent — its reply was lost with a NATS node,
// its provider reconnected, or its provider died — and the Client sends it
// again, on the same reply subject (a provider that has the call still
// running there acknowledges it and does not run it twice). A call taken
// up again (acknowledged, or answered) carries on: it was an interruption,
// and no attempt of the group is used. A call taken up by no provider
// within the lost grace (WithLostGrace) — every copy unanswered, or no
// responders — had a provider that died with it: the call fails with a
// code "503" *Error wrapping ErrProviderLost, a tool error the group's
// on_error decides (docs/sequences.md).

// ProgressHeader is the header of the keep-alive protocol: on a request,
// the keep-alive interval the caller asks for (a Go duration such as
// "1s"); on a message to a call's reply subject, ProgressAccepted or
// ProgressAlive — a progress message, not the reply.
const ProgressHeader = "Skillbus-Progress"

// The values of ProgressHeader on progress messages.
const (
	// ProgressAccepted is the first progress message of a call: the
	// provider has it and has not answered it yet.
	ProgressAccepted = "accepted"
	// ProgressAlive is every later one: the call is still being worked on.
	ProgressAlive = "alive"
)

// DefaultKeepAlive is the keep-alive interval a Client asks providers for
// (WithKeepAlive).
const DefaultKeepAlive = time.Second

// DefaultLostGrace is how long a Client keeps sending again a call whose
// keep-alives stopped before it takes the provider for dead
// (WithLostGrace).
const DefaultLostGrace = 5 * time.Second

// keepAliveMisses is how many intervals without a progress message make
// a tracked call silent.
const keepAliveMisses = 3

// unackedResends is how many times a call of a tool whose providers speak
// the keep-alive protocol is sent again when no acknowledgement comes for
// keepAliveMisses intervals (docs/tools.md, "Keep-alives", step 4).
const unackedResends = 2

// progressAckAfter is how long a provider holds a call asking for
// progress before its first progress message (none for a call answered
// sooner); progressTick is how often the provider looks for progress
// messages due. A provider honours intervals from minKeepAlive to
// maxKeepAlive (others are clamped).
const (
	progressAckAfter = 100 * time.Millisecond
	progressTick     = 100 * time.Millisecond
	minKeepAlive     = 100 * time.Millisecond
	maxKeepAlive     = time.Minute
)

// ErrProviderLost: a call's provider stopped sending keep-alives mid-call
// and no provider took the call up again within the lost grace: the
// provider died, or lost its connection to NATS for longer than that. The
// error is also a code "503" *Error (errors.As), a tool error that the
// group's on_error decides (docs/tools.md, "Keep-alives").
var ErrProviderLost = errors.New("tool: provider lost mid-call")

// parseKeepAlive reads a request's ProgressHeader: the interval asked
// for (clamped to [minKeepAlive, maxKeepAlive]), or 0 when the header is
// absent or unreadable (no progress messages).
func parseKeepAlive(h nats.Header) time.Duration {
	v := h[ProgressHeader]
	if len(v) == 0 {
		return 0
	}
	if v[0] == "1s" {
		return time.Second
	}
	d, err := time.ParseDuration(strings.TrimSpace(v[0]))
	if err != nil || d <= 0 {
		return 0
	}
	return min(max(d, minKeepAlive), maxKeepAlive)
}

// isProgress reports whether m, received on a call's reply subject, is a
// progress message rather than the reply.
func isProgress(m *nats.Msg) bool {
	return len(m.Header) > 0 && len(m.Header[ProgressHeader]) > 0
}

// keepAlives sends the progress messages due, every progressTick, while
// calls asking for them are with the server; it ends when there are none
// (progressed starts it again) or the server stops.
func (s *Server) keepAlives() {
	tick := time.NewTicker(progressTick)
	defer tick.Stop()
	type due struct {
		reply string
		first bool
	}
	var send []due
	for {
		select {
		case <-tick.C:
		case <-s.base.Done():
			s.mu.Lock()
			s.ticking = false
			s.mu.Unlock()
			return
		}
		now := time.Now()
		send = send[:0]
		refused := s.replyRefused()
		s.mu.Lock()
		if s.nprogress == 0 {
			s.ticking = false
			s.mu.Unlock()
			return
		}
		if refused {
			// The user may send one message per request: no more progress
			// messages, or the reply would be the one refused.
			s.noProgress = true
			for c := s.calls.next; c != &s.calls; c = c.next {
				c.every = 0
			}
			s.nprogress = 0
		}
		for c := s.calls.next; c != &s.calls; c = c.next {
			if c.every > 0 && !now.Before(c.nextBeat) {
				send = append(send, due{c.progressTo, !c.acked})
				c.acked = true
				c.nextBeat = now.Add(c.every)
			}
		}
		s.mu.Unlock()
		for _, d := range send {
			s.sendProgress(d.reply, d.first)
		}
	}
}

// refusedPublish finds the subject of a refused publish in a
// permissions violation.
var refusedPublish = regexp.MustCompile(`(?i)publish to "([^"]+)"`)

// replyRefused reports whether the connection's last error, new since
// the last look, is the server refusing a message to a reply subject
// (_INBOX.…): the provider's user has a response permission of one
// message per request (creds generated before tool roles could send
// progress messages; docs/security.md).
func (s *Server) replyRefused() bool {
	err := s.nc.LastError()
	if err == nil || err == s.lastErr {
		return false
	}
	s.lastErr = err
	m := refusedPublish.FindStringSubmatch(err.Error())
	return errors.Is(err, nats.ErrPermissionViolation) && m != nil && strings.HasPrefix(m[1], "_INBOX.")
}

// progressedLocked registers a call asking for progress every interval
// on reply, and starts the keep-alive loop if it is not running. s.mu is
// held.
func (s *Server) progressedLocked(in *inflight, reply string, every time.Duration) {
	if s.noProgress {
		return
	}
	in.every, in.progressTo, in.nextBeat = every, reply, in.start.Add(min(progressAckAfter, every))
	s.nprogress++
	if !s.ticking && !s.stopped {
		s.ticking = true
		go s.keepAlives()
	}
}

// sendProgress publishes a progress message on reply.
func (s *Server) sendProgress(reply string, first bool) {
	v := ProgressAlive
	if first {
		v = ProgressAccepted
	}
	_ = s.nc.PublishMsg(&nats.Msg{Subject: reply, Header: nats.Header{ProgressHeader: []string{v}}})
}

// lostMsg is handed to a call whose provider is taken for dead (watchdog).
var lostMsg = &nats.Msg{}

// lostCall is roundTrip's error for a call whose provider is taken for
// dead; Call turns it into the code "503" error.
type lostCall struct {
	quiet   time.Duration // since the last progress message
	resends int           // times sent again after its keep-alives stopped
}

func (l *lostCall) Error() string {
	return fmt.Sprintf("no keep-alive for %s", l.quiet.Round(time.Millisecond))
}

// onProgress records a progress message for the call with token: it is
// tracked (watchdog) and no longer silent.
func (c *Client) onProgress(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[token]
	if p == nil {
		return
	}
	p.acked, p.beat, p.silentSince = true, time.Now(), time.Time{}
	if p.te != nil {
		p.te.speaks.Store(true)
	}
	c.trackLocked(token, p)
}

// trackLocked adds a call that had a progress message to the calls the
// watchdog looks after, and starts it if it is not running. c.mu is
// held.
func (c *Client) trackLocked(token string, p *pendingCall) {
	if c.tracked == nil {
		c.tracked = map[string]*pendingCall{}
	}
	c.tracked[token] = p
	if !c.watching && !c.closed {
		c.watching = true
		go c.watchdog()
	}
}

// watchdog looks after the tracked calls every quarter interval: a call
// without a progress message for keepAliveMisses intervals is sent again,
// and one still silent after the lost grace is handed lostMsg. It ends
// when no call is tracked (trackLocked starts it again) or the connection
// closes.
func (c *Client) watchdog() {
	tick := time.NewTicker(c.keepAlive / 4)
	defer tick.Stop()
	silence := keepAliveMisses * c.keepAlive
	var again []*nats.Msg
	for range tick.C {
		now := time.Now()
		again = again[:0]
		c.mu.Lock()
		if c.closed || len(c.tracked) == 0 {
			c.watching = false
			c.mu.Unlock()
			return
		}
		for token, p := range c.tracked {
			if c.pending[token] != p {
				delete(c.tracked, token) // answered, ended, or waiting out "no responders" (roundTrip tracks it again)
				continue
			}
			// A call gone silent is sent again every interval until the
			// lost grace ends, not every silence: its provider may be back
			// on another node moments after one copy was lost, and while
			// the cluster still routes to the node it left, a copy may go
			// there and be lost too. With a copy every 3 s, a chaos run
			// (a provider's node cut off for 7.4 s, the provider on
			// another node 5.6 s after the cut) had two calls taken up by
			// no copy within the 8 s, and their runs failed with 503.
			wait := silence
			if !p.silentSince.IsZero() {
				wait = c.keepAlive
			}
			if !c.connected || p.gen < c.gen || now.Sub(p.beat) < wait {
				continue // a reconnect sends it again (onConnected)
			}
			if !p.acked {
				// A call of a tool that speaks the protocol, neither
				// acknowledged nor answered for the silence: lost on its
				// way to a provider (a node that died with it). Sent
				// again, at most unackedResends times; it is never taken
				// for lost on that account (a provider of the tool that
				// does not speak the protocol answers at its own pace).
				if p.quietResends >= unackedResends {
					delete(c.tracked, token)
					continue
				}
				p.beat = now
				p.quietResends++
				again = append(again, p.msg)
				continue
			}
			if p.silentSince.IsZero() {
				p.silentSince = p.beat
			}
			if now.Sub(p.silentSince) >= c.lostGrace+silence {
				delete(c.tracked, token)
				delete(c.pending, token)
				select {
				case p.ch <- lostMsg:
				default:
				}
				continue
			}
			p.beat = now
			p.quietResends++
			again = append(again, p.msg)
		}
		c.mu.Unlock()
		for _, m := range again {
			_ = c.nc.PublishMsg(m)
		}
	}
}

// lostWait returns how long to wait before sending again a call that went
// silent and then met "no responders", or 0 when the lost grace is over
// (the provider is taken for dead). tries counts the waits so far.
func (c *Client) lostWait(silentSince time.Time, tries *int, deadline time.Time) time.Duration {
	now := time.Now()
	left := min(c.lostGrace+keepAliveMisses*c.keepAlive-now.Sub(silentSince), deadline.Sub(now))
	if left <= 0 {
		return 0
	}
	wait := 50 * time.Millisecond << min(*tries, 4) // 50 ms doubling to 800 ms
	*tries++
	return min(wait, left)
}

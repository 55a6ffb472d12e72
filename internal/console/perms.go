package console

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/natsconn"
	"github.com/skillbus/skillbus/pkg/events"
)

// The console and the NATS server's permissions (docs/console.md,
// "Security"; the console role of docs/security.md). The server reports a
// refused publish or subscription only asynchronously, through the
// connection's error handler, and a refused request would wait for its
// timeout. So every API request that talks to NATS runs on a context
// watched for refusals of its subjects (natsconn.PermissionWatch): a
// refusal ends it at once and it answers 403 with the subject and the
// credentials (their role). A refusal no request asked for (the RUNS
// watch, the events subscription) is kept, with what it costs the pages,
// and shown on every page (/api/info, and the stream's hello and refused
// events). When the credentials are known (Config.Creds), what they do not
// allow is not even tried: the Tools page says at once that calling tools
// needs a permission the console role has only with `skillbus auth
// --console-calls-tools`.

// maxRefusals bounds the refusals kept for the pages.
const maxRefusals = 20

// refusalView is a refusal as the pages show it.
type refusalView struct {
	// Op is "publish" or "subscribe".
	Op      string `json:"op"`
	Subject string `json:"subject"`
	Queue   string `json:"queue,omitempty"`
	// Role is the skillbus role of the console's credentials ("" when
	// unknown); Credentials describes them.
	Role        string `json:"role,omitempty"`
	Credentials string `json:"credentials,omitempty"`
	// Error is the whole message; Effect what the pages lose.
	Error  string    `json:"error"`
	Effect string    `json:"effect,omitempty"`
	At     time.Time `json:"at"`
}

// access is what the console knows of its NATS permissions.
type access struct {
	watch *natsconn.PermissionWatch
	// perms are the user JWT's lists (nil: unknown, everything is tried).
	perms       *natsconn.Permissions
	role        string
	credentials string

	mu      sync.Mutex
	refused []refusalView
}

// newAccess reads the permissions of cfg.Creds (when given and readable)
// and describes the credentials for messages.
func newAccess(cfg Config) *access {
	a := &access{credentials: cfg.Credentials}
	if cfg.Creds != "" {
		if p, err := natsconn.PermissionsOf(cfg.Creds); err == nil {
			a.perms, a.role = p, p.Role
		}
		if a.credentials == "" {
			a.credentials = "creds " + cfg.Creds
			if a.role != "" {
				a.credentials += ", role " + a.role
			}
		}
	}
	return a
}

// who names the credentials in messages: "the console's credentials
// (creds FILE, role console)".
func (a *access) who() string {
	if a.credentials == "" {
		return "the console's NATS credentials"
	}
	return "the console's NATS credentials (" + a.credentials + ")"
}

// mayPublish reports whether the credentials allow publishing to subject;
// true when they are not known.
func (a *access) mayPublish(subject string) bool {
	return a.perms == nil || a.perms.MayPublish(subject)
}

// view is a refusal as the pages show it.
func (a *access) view(pe *natsconn.PermissionError) refusalView {
	return refusalView{Op: pe.Op(), Subject: pe.Subject, Queue: pe.Queue, Role: a.role, Credentials: pe.Credentials,
		Error: pe.Error(), Effect: effectOf(pe), At: pe.At}
}

// effectOf says what a refusal costs the pages, for the refusals of the
// console's own feeds.
func effectOf(pe *natsconn.PermissionError) string {
	switch {
	case !pe.Publish && natsconn.MatchSubject(pe.Subject, "events.run.x.started"):
		return "the pages are not updated live (no run, registry or schedule events): reload a page to see changes"
	case isRunsWatch(refusalView{Op: pe.Op(), Subject: pe.Subject}):
		return "the runs list is not live: it is read through seq.list and read again when a run starts, moves or ends, so a queued run shows only once it starts"
	}
	return ""
}

// note keeps a refusal no request claimed and tells the open pages. One
// per operation and subject; the latest first. A refused tool publish is
// the tail of a call already answered (its cancel message): only logged.
func (s *Server) note(pe *natsconn.PermissionError) {
	if pe.Publish && strings.HasPrefix(pe.Subject, events.ToolPrefix) {
		s.log.Debug("console: the NATS server refused "+pe.Op()+" to "+pe.Subject, "credentials", pe.Credentials)
		return
	}
	v := s.access.view(pe)
	s.access.mu.Lock()
	kept := []refusalView{v}
	for _, o := range s.access.refused {
		if (o.Op != v.Op || o.Subject != v.Subject || o.Queue != v.Queue) && len(kept) < maxRefusals {
			kept = append(kept, o)
		}
	}
	s.access.refused = kept
	s.access.mu.Unlock()
	s.log.Warn("console: the NATS server refused "+pe.Op()+" to "+pe.Subject, "credentials", pe.Credentials, "effect", v.Effect)
	s.hub.broadcast("refused", v)
}

// forget drops the refusals kept for which drop is true (an operation
// that has since succeeded: the RUNS watch after a reconnect with other
// credentials) and sends the open pages the list left.
func (s *Server) forget(drop func(refusalView) bool) {
	s.access.mu.Lock()
	kept := s.access.refused[:0:0]
	for _, r := range s.access.refused {
		if !drop(r) {
			kept = append(kept, r)
		}
	}
	changed := len(kept) != len(s.access.refused)
	s.access.refused = kept
	s.access.mu.Unlock()
	if changed {
		s.hub.broadcast("refusals", s.refusals())
	}
}

// isRunsWatch reports whether r is a refusal of the live runs list: its
// subscription to the RUNS bucket's subjects, or the bucket's info.
func isRunsWatch(r refusalView) bool {
	return r.Op == "subscribe" && r.Subject == events.RunsKeySubject(">") ||
		r.Op == "publish" && strings.HasPrefix(r.Subject, "$JS.API.") && strings.Contains(r.Subject, ".KV_"+events.BucketRuns)
}

// refusals returns the refusals kept, latest first.
func (s *Server) refusals() []refusalView {
	s.access.mu.Lock()
	defer s.access.mu.Unlock()
	return append([]refusalView{}, s.access.refused...)
}

// eventsRefused reports whether the server refused the events.>
// subscription (the pages are then not live).
func (s *Server) eventsRefused() bool {
	s.access.mu.Lock()
	defer s.access.mu.Unlock()
	for _, r := range s.access.refused {
		if r.Op == "subscribe" && r.Subject == events.SubjectEventsAll {
			return true
		}
	}
	return false
}

// watched runs h on a request context that a refusal of one of patterns
// (natsconn.PermissionWatch.Context) ends at once; writeFail then answers
// 403 with the refusal.
func (s *Server) watched(h http.HandlerFunc, patterns ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, done := s.access.watch.Context(r.Context(), patterns...)
		defer done()
		h(w, r.WithContext(ctx))
	}
}

// toolCallRefused says why the console may not call tool.<name> when its
// credentials are known not to allow it, else "".
func (s *Server) toolCallRefused(name string) string {
	subject := events.ToolPrefix + name
	if s.access.mayPublish(subject) {
		return ""
	}
	why := fmt.Sprintf("calling tools from the console needs the permission to publish to %s, which %s do not have. ", subject, s.access.who())
	if s.access.role == auth.RoleConsole {
		return why + "The console role leaves it out by default: a direct call is not a run, so it leaves no record in RUNS or EVENTS — run the tool in a sequence instead, " +
			"or give the console the permission with `skillbus auth " + auth.ConsoleCallsToolsFlag + "` (docs/security.md)"
	}
	return why + "Run the tool in a sequence instead, or give the console the console role's creds made with `skillbus auth " + auth.ConsoleCallsToolsFlag + "` (docs/security.md)"
}

// limitView is something the console's credentials are known not to allow
// (the user JWT's permissions of Config.Creds), said up front on every
// page — a page that cannot be read, an action whose button is disabled —
// rather than when it is tried (docs/console.md, "What the credentials do
// not allow").
type limitView struct {
	// What is a page (runs, run, seqs, skills, preview, tools,
	// schedules) or an action (start, cancel, rerun, retry, signal, pause,
	// trigger, backfill).
	What string `json:"what"`
	// Label names it in words ("the Runs page", "starting runs").
	Label string `json:"label"`
	// Subject is what it needs to publish to; Reason says so in words.
	Subject string `json:"subject"`
	Reason  string `json:"reason"`
}

// needs are the pages and actions limits checks, with the subject each
// needs to publish to (the requests their API calls make: server.go's
// routes).
var needs = []struct{ what, label, subject string }{
	{"runs", "the Runs page", events.SeqListSubject},
	{"run", "a run's page", events.SeqStatusSubject},
	{"seqs", "the Sequences pages", events.RegistrySeqListSubject},
	{"skills", "the Skills pages", events.RegistrySkillListSubject},
	{"preview", "the assembly preview", events.RegistrySkillGetSubject},
	{"tools", "the Tools pages", "$SRV.INFO"},
	{"schedules", "the Schedules pages", events.SeqSchedulesListSubject},
	{"start", "starting runs (Run…, Edit and rerun)", events.SeqRunSubject},
	{"cancel", "cancelling runs", events.SeqCancelSubject},
	{"rerun", "rerunning runs", events.SeqRerunSubject},
	{"retry", "retrying runs", events.SeqRetrySubject},
	{"signal", "answering waiting runs (Approve, Reject)", events.SeqSignalSubject},
	{"pause", "pausing and unpausing schedule entries", events.SeqSchedulesPauseSubject},
	{"trigger", "triggering schedule entries (Trigger now)", events.SeqSchedulesTriggerSubject},
	{"backfill", "backfilling schedule entries", events.SeqSchedulesBackfillSubject},
}

// limits returns what the credentials are known not to allow, in the
// order of needs; none when their permissions are not known (no creds
// file: what is refused is then said when it is tried).
func (a *access) limits() []limitView {
	out := []limitView{}
	if a.perms == nil {
		return out
	}
	for _, n := range needs {
		if a.perms.MayPublish(n.subject) {
			continue
		}
		out = append(out, limitView{What: n.what, Label: n.label, Subject: n.subject,
			Reason: fmt.Sprintf("%s needs to publish to %s, which %s may not (docs/security.md lists what each role may do; the console role may do all of this)", n.label, n.subject, a.who())})
	}
	return out
}

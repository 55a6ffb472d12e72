package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillbus/skillbus/pkg/events"
)

// Role names. A tool provider for a prefix P is the role "tools-P"
// (ToolRole); the leaf node connection of an edge site S is the role
// "edge-S" (EdgeRole).
const (
	RoleRegistry  = "registry"
	RoleSeqworker = "seqworker"
	RoleSkillface = "skillface"
	RoleTools     = "tools"
	RoleAgent     = "agent"
	RoleRunner    = "runner"
	RoleReader    = "reader"
	RoleConsole   = "console"
	RoleEdge      = "edge"
)

// ConsoleCallsToolsFlag is the option of `skillbus auth` that lets the
// console role call tools directly (TableOptions.ConsoleCallsTools); the
// docs show the grants it adds under its name.
const ConsoleCallsToolsFlag = "--console-calls-tools"

// BuiltinToolFamilies are the first subject tokens of the built-in tools
// (internal/builtin): fs.*, text.render and cmd.run. The "tools" role may
// answer exactly these families; a test keeps the list in step with the
// tools internal/builtin serves.
var BuiltinToolFamilies = []string{"fs", "text", "cmd"}

// Grant is one subject a role may publish to or subscribe to, and why it
// needs it (the docs/security.md tables show Why).
type Grant struct {
	// Subject is a NATS subject or pattern (* one token, > the rest).
	Subject string
	// Why says which operation needs the subject.
	Why string
	// OptIn, when set, names the `skillbus auth` option that adds the
	// grant (ConsoleCallsToolsFlag); without it the role does not have
	// it. Table leaves such grants out unless the option is on, and
	// Markdown shows them under the option's name.
	OptIn string
}

// Role is one NATS user of a skillbus deployment and exactly what it may
// do: nothing is allowed that is not listed here (docs/security.md).
type Role struct {
	// Name is the user's name and the base of its files: NAME.creds,
	// the Kubernetes Secret skillbus-NAME-creds.
	Name string
	// Summary says who uses the role, on one line.
	Summary string
	// Pub and Sub are the publish and subscribe allow-lists.
	Pub, Sub []Grant
	// DenyPub are subjects refused even though an allow pattern matches
	// them (the durable consumers of other roles).
	DenyPub []Grant
	// Responds lets the user answer requests it received (allow_responses:
	// one reply per request, within ResponseWindow), which is how services
	// and tool providers reply without a publish grant on _INBOX.>.
	Responds bool
	// Progresses lets a user that Responds send any number of messages
	// to the reply subject of a request it received (within
	// ResponseWindow): a tool provider's acknowledgement and keep-alives
	// before its reply (docs/tools.md, "Keep-alives").
	Progresses bool
	// Site, when set, makes the user the leaf node connection of that
	// edge site (its leaf server dialling the hub, docs/edge.md) and
	// nothing else: the server refuses it as a client. Pub is then what
	// the site may send to the hub and Sub what the hub may send to the
	// site, for every client of the leaf server together; a reply is
	// allowed per request for as many services of the site as answer it
	// (discovery), within ResponseWindow.
	Site string
}

// InboxPrefix returns the role's private inbox prefix, _INBOX.<name>: its
// replies arrive under it and no other role may subscribe there. A client
// must use it as its inbox prefix (natsconn does so from the creds file,
// InboxPrefixOf; the nats CLI takes --inbox-prefix or a context's
// inbox_prefix).
func (r Role) InboxPrefix() string { return "_INBOX." + r.Name }

// ToolRole returns the role name of a tool provider for prefix:
// "tools-" + prefix with the prefix's dots replaced by '-'.
func ToolRole(prefix string) string { return RoleTools + "-" + strings.ReplaceAll(prefix, ".", "-") }

// EdgeRole returns the role name of the leaf node connection of edge site
// site: "edge-" + site with the site's dots replaced by '-'.
func EdgeRole(site string) string { return RoleEdge + "-" + strings.ReplaceAll(site, ".", "-") }

// The JetStream names a role's grants are made of. KV bucket B is the
// stream KV_B with subjects $KV.B.>; object store B is OBJ_B with $O.B.>.
const (
	jsAPI = "$JS.API."
	kvSK  = "KV_" + events.BucketSkills
	kvSQ  = "KV_" + events.BucketSequences
	kvRU  = "KV_" + events.BucketRuns
	kvSS  = "KV_" + events.BucketSessions
	kvRL  = "KV_" + events.BucketRegistryLease
	objRS = "OBJ_" + events.BucketRunSlots
	kvSC  = "KV_" + events.BucketSchedules
)

// Streams are every stream skillbus provisions (events.Provision); the
// service that owns each (events.OwnerOf) is the only role that may create
// or delete consumers on it (docs/security.md, "Consumers").
var Streams = []string{kvSK, kvSQ, kvRU, kvSS, kvRL, objRS, kvSC, events.StreamSeqRuns, events.StreamEvents}

// TableOptions choose the optional parts of the permission table.
type TableOptions struct {
	// ToolPrefixes adds one tool provider role per prefix (each may answer
	// only tool.<prefix>.>).
	ToolPrefixes []string
	// EdgeSites adds one leaf node role per edge site (EdgeRole): the leaf
	// server of site S may answer only tool.S.> (docs/edge.md).
	EdgeSites []string
	// ConsoleCallsTools lets the console role publish on tool.>, so the
	// Tools page's form can call any tool on the bus directly (skillbus
	// auth --console-calls-tools). Off by default: a direct call is not a
	// run, so it leaves no record in RUNS or EVENTS (docs/security.md).
	ConsoleCallsTools bool
}

// Roles returns the permission table with the default options and a tool
// provider role per prefix in toolPrefixes: Table(TableOptions{ToolPrefixes:
// toolPrefixes}).
func Roles(toolPrefixes ...string) ([]Role, error) {
	return Table(TableOptions{ToolPrefixes: toolPrefixes})
}

// Table returns the permission table: the service roles, the built-in tool
// provider, one tool provider per prefix of o.ToolPrefixes (each may answer
// only tool.<prefix>.>), and the client roles, the console among them.
// The table is data: Generate turns it into user JWTs and docs/security.md
// renders it (Markdown). Errors: ErrConfig for a bad tool prefix or edge
// site, or a site that is also a tool prefix.
func Table(o TableOptions) ([]Role, error) {
	roles := []Role{registryRole(), seqworkerRole(), skillfaceRole(), toolsRole(RoleTools, "the built-in tools (`skillbus tools serve`, skillbus dev)", BuiltinToolFamilies)}
	seen := map[string]bool{}
	for _, p := range o.ToolPrefixes {
		if err := checkToolPrefix(p); err != nil {
			return nil, err
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		roles = append(roles, toolsRole(ToolRole(p), fmt.Sprintf("a tool provider for the prefix `%s` (`tools serve --prefix %s`, `skillbus mcp --prefix %s`)", p, p, p), []string{p}))
	}
	edges, err := edgeRoles(o.EdgeSites, seen)
	if err != nil {
		return nil, err
	}
	roles = append(roles, edges...)
	roles = append(roles, agentRole(), runnerRole(), readerRole(), consoleRole(o.ConsoleCallsTools))
	names := map[string]bool{}
	for _, r := range roles {
		if names[r.Name] {
			return nil, fmt.Errorf("%w: two roles are named %q: pick tool prefixes whose names differ once dots become '-'", ErrConfig, r.Name)
		}
		names[r.Name] = true
	}
	return roles, nil
}

// checkToolPrefix reports a prefix that is not one or more subject tokens
// of letters, digits, '-' and '_' separated by dots, or that is a built-in
// family (its tools belong to the "tools" role).
func checkToolPrefix(p string) error { return checkPrefix("--tool-prefix", p) }

// checkPrefix is checkToolPrefix for the option flag (--tool-prefix,
// --edge), which the message names.
func checkPrefix(flag, p string) error {
	if p == "" {
		return fmt.Errorf("%w: %s is empty", ErrConfig, flag)
	}
	for _, part := range strings.Split(p, ".") {
		if part == "" {
			return fmt.Errorf("%w: %s %q has an empty part", ErrConfig, flag, p)
		}
		for _, c := range part {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("%w: %s %q: use letters, digits, '-' and '_', with dots between parts (as tools serve --prefix)", ErrConfig, flag, p)
			}
		}
	}
	if slices.Contains(BuiltinToolFamilies, strings.Split(p, ".")[0]) {
		return fmt.Errorf("%w: %s %q starts with a built-in tool family (%s), which the \"tools\" role answers; pick another prefix", ErrConfig, flag, p, strings.Join(BuiltinToolFamilies, ", "))
	}
	return nil
}

// grants builds a list of grants sharing one reason.
func grants(why string, subjects ...string) []Grant {
	out := make([]Grant, len(subjects))
	for i, s := range subjects {
		out[i] = Grant{Subject: s, Why: why}
	}
	return out
}

// optIn marks grants as added only by the `skillbus auth` option flag.
func optIn(flag string, gs []Grant) []Grant {
	for i := range gs {
		gs[i].OptIn = flag
	}
	return gs
}

// cat joins grant lists, keeping the first grant of each subject.
func cat(lists ...[]Grant) []Grant {
	var out []Grant
	seen := map[string]bool{}
	for _, l := range lists {
		for _, g := range l {
			if !seen[g.Subject] {
				seen[g.Subject] = true
				out = append(out, g)
			}
		}
	}
	return out
}

// inbox is the subscribe grant of a role's private inbox.
func inbox(name string) []Grant {
	return grants("replies to its requests (private inbox)", "_INBOX."+name+".>")
}

// provisioning is what events.Provision does at the start of the service
// owner (Options.Owner = owner): it creates every stream, bucket and object
// store that is missing — creating one that exists with the same
// configuration changes nothing, and the server refuses one with another —
// so start order does not matter (docs/operations.md), and it updates only
// the ones it owns (events.OwnerOf).
func provisioning(owner string) []Grant {
	create := []string{jsAPI + "INFO"}
	var update []string
	for _, s := range Streams {
		create = append(create, jsAPI+"STREAM.CREATE."+s, jsAPI+"STREAM.INFO."+s)
		if events.OwnerOf(s) == owner {
			update = append(update, jsAPI+"STREAM.UPDATE."+s)
		}
	}
	return cat(
		grants("provisioning at start: create what is missing (start order does not matter)", create...),
		grants("provisioning at start: apply its settings to what it owns", update...))
}

// streamRead is reading single messages of a stream: its info, and a
// message by sequence or the last one of a subject (KV get, object
// metadata). KV and object store streams answer direct gets; SEQ_RUNS and
// EVENTS the STREAM.MSG.GET API.
func streamRead(why, stream string) []Grant {
	if strings.HasPrefix(stream, "KV_") || strings.HasPrefix(stream, "OBJ_") {
		return grants(why, jsAPI+"STREAM.INFO."+stream, jsAPI+"DIRECT.GET."+stream, jsAPI+"DIRECT.GET."+stream+".>")
	}
	return grants(why, jsAPI+"STREAM.INFO."+stream, jsAPI+"STREAM.MSG.GET."+stream)
}

// clientRead is reading single messages of a stream as a client role: its
// info and the STREAM.MSG.GET API, never direct gets, whatever the stream.
// A direct get's reply is the stored message as it is, published on the
// reply subject the requester names (no permission checks it): replayed
// onto a subject a stream captures ($KV.RUNS.<id>, seq.run.<seq>) it would
// be stored there as if published. STREAM.MSG.GET answers with a JSON
// wrapper (base64 body), which is no run state, request or sequence
// (docs/security.md, "Reply subjects are not permissions";
// TestNoConsumersOnOthersStreams).
func clientRead(why, stream string) []Grant {
	return grants(why, jsAPI+"STREAM.INFO."+stream, jsAPI+"STREAM.MSG.GET."+stream)
}

// ephemeral is reading a stream through consumers of the service's own
// (ordered consumers: KV watches and key lists, object reads), named by
// the service: create (with one filter subject, it is part of the API
// subject), fetch, info, delete, flow control. Only the owner of a stream
// (events.OwnerOf) gets it: a consumer's deliver_subject is in the
// CONSUMER.CREATE body, which permissions cannot filter, so whoever may
// create one may have the server deliver the stream's messages onto any
// subject. Every other role reads by direct gets, STREAM.MSG.GET and core
// subscriptions (pkg/streamread; TestNoConsumersOnOthersStreams).
func ephemeral(why, stream string) []Grant {
	return grants(why,
		jsAPI+"CONSUMER.CREATE."+stream+".*", jsAPI+"CONSUMER.CREATE."+stream+".*.>", jsAPI+"CONSUMER.MSG.NEXT."+stream+".*",
		jsAPI+"CONSUMER.INFO."+stream+".*", jsAPI+"CONSUMER.DELETE."+stream+".*", "$JS.FC."+stream+".>")
}

// microService is what a NATS micro service needs beyond its endpoints:
// answering discovery ($SRV.PING, $SRV.INFO, $SRV.STATS).
func microService() []Grant {
	return grants("NATS micro discovery (`nats micro ls`, `skillbus tools`)", "$SRV.>")
}

// discovery is asking the micro services who they are (`skillbus tools`,
// `nats micro ls`).
func discovery() []Grant {
	return grants("list services and tools (`skillbus tools`, `nats micro ls`)", "$SRV.PING", "$SRV.PING.>", "$SRV.INFO", "$SRV.INFO.>", "$SRV.STATS", "$SRV.STATS.>")
}

func registryRole() Role {
	return Role{
		Name:     RoleRegistry,
		Summary:  "the registry (`cmd/registry`): the only writer of SKILLS and SEQUENCES",
		Responds: true,
		Pub: cat(
			provisioning(events.OwnerRegistry),
			grants("store skills and sequences (KV put and delete)", "$KV."+events.BucketSkills+".>", "$KV."+events.BucketSequences+".>"),
			streamRead("read stored skills and sequences", kvSK), streamRead("read stored skills and sequences", kvSQ),
			ephemeral("watch SKILLS and SEQUENCES (revert writes of others) and list their keys", kvSK),
			ephemeral("watch SKILLS and SEQUENCES (revert writes of others) and list their keys", kvSQ),
			grants("take, renew and release the lease of the one replica that writes (KV create, update, delete)", "$KV."+events.BucketRegistryLease+".>"),
			streamRead("read the lease", kvRL), ephemeral("watch the lease (take over when the leader releases it)", kvRL),
			grants("forward seq.create and seq.delete to the replica holding the lease", events.RegistryLeaderPrefix+".>"),
			grants("registry events (put, delete, invalid, fixed, clash, warning, reverted, differs)", events.SubjectRegistryEventsAll),
		),
		Sub: cat(inbox(RoleRegistry),
			grants("its endpoints (skill and sequence list, get, info; seq.create, seq.delete; the leader's forwarded seq.create and seq.delete)", events.RegistryPrefix+".>"),
			microService()),
	}
}

func seqworkerRole() Role {
	sr, ev := events.StreamSeqRuns, events.StreamEvents
	c, b := events.ConsumerSeqworker, events.ConsumerSeqworkerBoot
	return Role{
		Name:     RoleSeqworker,
		Summary:  "the seqworker (`cmd/seqworker`): the only writer of RUNS and RUN_SLOTS, the only consumer of SEQ_RUNS, the only caller of tools",
		Responds: true,
		Pub: cat(
			provisioning(events.OwnerSeqworker),
			grants("provisioning at start: its consumer of run requests",
				jsAPI+"CONSUMER.CREATE."+sr+"."+c+".>", jsAPI+"CONSUMER.INFO."+sr+"."+c),
			grants("run states and checkpoints (KV put)", "$KV."+events.BucketRuns+".>"),
			grants("slot values too large for RUNS (object put)", "$O."+events.BucketRunSlots+".>"),
			streamRead("read run states", kvRU), ephemeral("list runs (skillbus.seq.list)", kvRU),
			streamRead("read large slot values", objRS), ephemeral("read large slot values", objRS),
			grants("replace or remove large slot values", jsAPI+"STREAM.PURGE."+objRS),
			streamRead("read stored sequences; watch SEQUENCES (schedules, boot sequences) by direct gets", kvSQ),
			grants("queue run requests (seq.run, boot runs) and keep schedules", events.SubjectRunAll, events.SubjectScheduleAll),
			streamRead("read schedules", sr),
			grants("replace a sequence's schedule", jsAPI+"STREAM.PURGE."+sr),
			grants("schedule entries' state: pause, current and buffered ticks, counters (KV create, compare-and-set update, purge)", "$KV."+events.BucketSchedules+".>"),
			streamRead("read schedule entries' state; list a sequence's entries (stream info)", kvSC),
			grants("delete the state of a removed schedule entry", jsAPI+"STREAM.PURGE."+kvSC),
			grants("pull run requests from its durable consumer and ack them (in-progress heartbeats included)",
				jsAPI+"CONSUMER.MSG.NEXT."+sr+"."+c, "$JS.ACK."+sr+"."+c+".>"),
			grants("boot runs: its durable consumer of agent_ready events",
				jsAPI+"CONSUMER.CREATE."+ev+"."+b+".>", jsAPI+"CONSUMER.INFO."+ev+"."+b,
				jsAPI+"CONSUMER.MSG.NEXT."+ev+"."+b, "$JS.ACK."+ev+"."+b+".>"),
			grants("run and schedule events (started, group, finished, cancelling ...)", events.SubjectRunEventsAll, "events.schedule.>"),
			grants("call tools", events.SubjectToolAll),
		),
		Sub: cat(inbox(RoleSeqworker),
			grants("its endpoints (seq.run, status, cancel, list, rerun, call)", events.SeqPrefix+".>"),
			grants("watch SEQUENCES: a write wakes its direct gets (no consumer on a stream the registry owns)", "$KV."+events.BucketSequences+".>"),
			grants("cancel signals to the worker holding a run", "events.run.*."+events.RunCancelling),
			grants("runs that used up their deliveries (server advisory)", events.AdvisoryMaxDeliveriesSeqworker),
			microService()),
	}
}

func skillfaceRole() Role {
	return Role{
		Name:     RoleSkillface,
		Summary:  "skillface (`cmd/skillface`): prompt assembly; the only reader of prompts and the only writer of SKILLFACE_SESSIONS",
		Responds: true,
		Pub: cat(
			provisioning(events.OwnerSkillface),
			streamRead("read skills; watch SKILLS by direct gets", kvSK),
			grants("session activation state (KV create and compare-and-set update)", "$KV."+events.BucketSessions+".>"),
			streamRead("read session state", kvSS),
		),
		Sub: cat(inbox(RoleSkillface),
			grants("its endpoints (assemble, info): the prompts", events.SkillfacePrefix+".>"),
			grants("watch SKILLS: a write wakes its direct gets (no consumer on a stream the registry owns)", "$KV."+events.BucketSkills+".>"),
			microService()),
	}
}

func toolsRole(name, who string, families []string) Role {
	var answer []string
	for _, f := range families {
		answer = append(answer, events.ToolPrefix+f+".>")
	}
	return Role{
		Name:     name,
		Summary:  who + ": may answer only `" + strings.Join(answer, "`, `") + "`",
		Responds: true,
		Pub:      grants("warn when instances of one tool disagree (tools serve)", "$SRV.INFO"),
		Sub: cat(inbox(name),
			grants("answer its tools (queue group)", answer...),
			microService()),
		Progresses: true,
	}
}

// edgeRoles returns the leaf node role of each edge site (docs/edge.md),
// refusing a bad site name and a site that is also one of the tool
// prefixes (both roles would answer tool.<site>.>).
func edgeRoles(sites []string, prefixes map[string]bool) ([]Role, error) {
	var out []Role
	seen := map[string]bool{}
	for _, site := range sites {
		if err := checkPrefix("--edge", site); err != nil {
			return nil, err
		}
		if prefixes[site] {
			return nil, fmt.Errorf("%w: --edge %q is also a --tool-prefix: both would answer tool.%s.>; serve the site's tools at the site only (--drop-tool-prefix %s), or name the site otherwise", ErrConfig, site, site, site)
		}
		if seen[site] {
			continue
		}
		seen[site] = true
		r := toolsRole(EdgeRole(site), "", []string{site})
		r.Summary = fmt.Sprintf("the leaf node connection of the edge site `%s` (its leaf nats-server dials the hub; `tools serve --prefix %s` and `skillbus mcp --prefix %s` at the site connect to that server, docs/edge.md): connects only as a leaf node; the site receives nothing but its own tools' calls (`%s`) and discovery, and sends nothing but replies and `$SRV.INFO`", site, site, site, events.ToolPrefix+site+".>")
		r.Site = site
		// allow_responses does not carry a reply across a leaf node
		// connection (nats-server#2949: the hub sends a leaf interest only
		// in subjects its user may publish), so the callers' inboxes are
		// granted: the seqworker's for the calls, the reader's and the
		// console's for discovery. docs/security.md says what that allows.
		r.Pub = cat(r.Pub,
			grants("replies to its tools' calls, which only the seqworker makes (a reply crosses a leaf node connection only to a subject its user may publish to)", Role{Name: RoleSeqworker}.InboxPrefix()+".>"),
			grants("replies to discovery: `skillbus tools` as the reader, the console's Tools page", Role{Name: RoleReader}.InboxPrefix()+".>", Role{Name: RoleConsole}.InboxPrefix()+".>"))
		out = append(out, r)
	}
	return out, nil
}

// reads are the requests and stream reads of every client role: list and
// read skills, sequences and runs, watch events.
func reads(name string) []Grant {
	ev := events.StreamEvents
	return cat(
		grants("list and read skills and sequences (`skillbus skills`, `seqs`)",
			events.RegistrySkillListSubject, events.RegistrySkillGetSubject, events.RegistrySkillInfoSubject,
			events.RegistrySeqListSubject, events.RegistrySeqGetSubject),
		grants("list and read runs (`skillbus runs ls`, `runs show`)", events.SeqStatusSubject, events.SeqListSubject),
		grants("list and read schedule entries (`skillbus schedules`, `schedules show`)", events.SeqSchedulesListSubject, events.SeqSchedulesShowSubject),
		streamRead("read and follow events (`skillbus watch`, STREAM.MSG.GET from a cursor)", ev),
		clientRead("a run's state (`skillbus watch RUN`; STREAM.MSG.GET, no direct gets)", kvRU),
		clientRead("a run's large slot values (STREAM.MSG.GET of the object's metadata and chunks)", objRS),
		discovery(),
	)
}

// scheduleOps are the schedule operations of the roles that start and
// cancel runs (as seq.retry and seq.cancel): pause and unpause an entry,
// run a tick now, backfill a range (docs/runs.md, "Scheduled runs").
func scheduleOps(where string) []Grant {
	return grants("pause, unpause, trigger and backfill schedule entries "+where,
		events.SeqSchedulesPauseSubject, events.SeqSchedulesUnpauseSubject, events.SeqSchedulesTriggerSubject, events.SeqSchedulesBackfillSubject)
}

// clientSub is what a client role subscribes to: its inbox and the live
// events (the EVENTS stream, which it may read anyway, as core messages).
func clientSub(name string) []Grant {
	return cat(inbox(name), grants("live events: a run's progress (`skillbus run`, `watch`)", events.SubjectEventsAll))
}

func runnerRole() Role {
	return Role{
		Name:    RoleRunner,
		Summary: "a client that starts, watches, signals and cancels runs (`skillbus run`, `call`, `runs cancel`, `runs signal`, `agent-ready`, CI jobs): runs start only through the `skillbus.seq` endpoints",
		Pub: cat(
			grants("start, cancel, re-run and retry runs, run one group (`skillbus run`, `call`, `runs cancel`, `runs rerun`, `runs retry`)",
				events.SeqRunSubject, events.SeqCancelSubject, events.SeqRerunSubject, events.SeqRetrySubject, events.SeqCallSubject),
			grants("signal a waiting run: approve or reject its wait (`skillbus runs signal`)", events.SeqSignalSubject),
			grants("announce an agent boot (`skillbus agent-ready`): boot sequences run once per boot id", events.SubjectAgentReadyAll),
			scheduleOps("(`skillbus schedules pause`, `unpause`, `trigger`, `backfill`)"),
			reads(RoleRunner),
		),
		Sub: clientSub(RoleRunner),
	}
}

func agentRole() Role {
	r := runnerRole()
	r.Name = RoleAgent
	r.Summary = "an agent runtime: what a runner may do, plus prompt assembly (`skillbus.skillface.assemble`, `info`) and storing or deleting sequences through the registry (seq_create, `skillbus seqs rm`)"
	r.Pub = cat(
		grants("assemble prompts and read skill sections (its own requests only)", events.SkillfaceAssembleSubject, events.SkillfaceInfoSubject),
		grants("store and delete sequences through the registry, which validates them (seq_create, `skillbus seqs rm`)", events.RegistrySeqCreateSubject, events.RegistrySeqDeleteSubject),
		r.Pub,
	)
	r.Sub = clientSub(RoleAgent)
	return r
}

func readerRole() Role {
	return Role{
		Name:    RoleReader,
		Summary: "a read-only client (`skillbus skills`, `seqs`, `runs ls`, `runs show`, `watch`, `tools`, dashboards): starts nothing",
		Pub:     reads(RoleReader),
		Sub:     clientSub(RoleReader),
	}
}

// consoleRole is the web console (`skillbus ui`, `skillbus dev`;
// docs/console.md): what its pages read and do, and nothing else. It
// lists runs through seq.list and keeps the list live from a core
// subscription to the RUNS bucket's subjects (the summary headers of each
// write; queued runs included) — no consumer: it owns no stream; reads
// runs through seq.status (no direct reads of RUNS), their large slots, events,
// skills, sequences and the tools served; starts, cancels and re-runs runs
// through the seqworker's endpoints. It needs no skillface endpoint (the
// assembly preview runs pkg/skillface in the console's process, on the
// skills the registry serves), no seq.call and no agent_ready. Calling
// tools directly is opt-in (callsTools): a direct call is not a run, so it
// leaves no trace in RUNS or EVENTS, while a run of a sequence does.
func consoleRole(callsTools bool) Role {
	ev := events.StreamEvents
	pub := cat(
		grants("start, cancel, re-run and retry runs (the run form, Cancel run…, Rerun, Retry from group N, Retry from here)", events.SeqRunSubject, events.SeqCancelSubject, events.SeqRerunSubject, events.SeqRetrySubject),
		grants("signal a waiting run (the approve and reject form of a waiting run's page)", events.SeqSignalSubject),
		grants("a run's page (seq.status); the runs list (seq.list)", events.SeqStatusSubject, events.SeqListSubject),
		grants("the Schedules page: list and show schedule entries", events.SeqSchedulesListSubject, events.SeqSchedulesShowSubject),
		scheduleOps("(the Schedules page)"),
		grants("the runs list: the RUNS bucket's TTL (runs it expired leave the list)", jsAPI+"STREAM.INFO."+kvRU),
		clientRead("a run's large slot values (RUN_SLOTS, STREAM.MSG.GET)", objRS),
		streamRead("a run's timeline and a schedule's last state (the EVENTS stream, STREAM.MSG.GET)", ev),
		grants("the Sequences and Skills pages, and the skills of the assembly preview",
			events.RegistrySkillListSubject, events.RegistrySkillGetSubject, events.RegistrySkillInfoSubject,
			events.RegistrySeqListSubject, events.RegistrySeqGetSubject),
		grants("the Tools page: the tools served (NATS micro discovery)", "$SRV.INFO"),
	)
	if callsTools {
		pub = cat(pub, optIn(ConsoleCallsToolsFlag, grants("call any tool from the Tools page's form, directly (not a run: no record in RUNS or EVENTS)", events.SubjectToolAll)))
	}
	return Role{
		Name:    RoleConsole,
		Summary: "the web console (`skillbus ui`, `skillbus dev`): follows RUNS live (core messages), reads runs, events, skills, sequences and tools, starts, cancels and re-runs runs; calls tools directly only with `" + ConsoleCallsToolsFlag + "`",
		Pub:     pub,
		Sub: cat(inbox(RoleConsole),
			grants("live events: runs moving on, registry and schedule events", events.SubjectEventsAll),
			grants("the live runs list: each write of RUNS (its summary headers), as core messages", "$KV."+events.BucketRuns+".>")),
	}
}

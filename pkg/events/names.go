package events

import (
	"fmt"
	"strings"
)

// KV bucket names (docs/architecture.md, NATS resources).
const (
	// BucketSkills: key = skill name; value = the validated skill record
	// (JSON, pkg/skill.Skill) including body, sections index and fingerprint.
	BucketSkills = "SKILLS"
	// BucketSequences: key = KeyFor(sequence name); value = the parsed,
	// validated AST as JSON — never raw source text.
	BucketSequences = "SEQUENCES"
	// BucketRuns: key = run id; value = RunState. Keys expire after
	// Options.RunsTTL (default 7 days).
	BucketRuns = "RUNS"
	// BucketRunSlots is an object store of the slot values too large for a
	// RUNS entry: object RunSlotObject(run id, slot), with the RUNS
	// retention (docs/runs.md, Large state).
	BucketRunSlots = "RUN_SLOTS"
	// BucketSessions: key = session id; value = skillface's per-session
	// activation state, updated with compare-and-set. Keys expire after
	// Options.SessionsTTL (default 24 h).
	BucketSessions = "SKILLFACE_SESSIONS"
	// BucketRegistryLease holds one key, RegistryLeaseKey: the lease of
	// the registry replica that writes SKILLS and SEQUENCES (the leader;
	// value RegistryLease). Its entries expire RegistryLeaseTTL after they
	// are written, so a leader that dies without releasing the lease is
	// replaced within that time (docs/skills.md, "One writer").
	BucketRegistryLease = "REGISTRY_LEASE"
	// RegistryLeaseKey is the key of the lease in BucketRegistryLease.
	RegistryLeaseKey = "leader"
)

// Stream and consumer names (docs/architecture.md, NATS resources).
const (
	// StreamSeqRuns is the work-queue stream of run requests and schedules,
	// with subjects SubjectRunAll and SubjectScheduleAll and message
	// schedules allowed.
	StreamSeqRuns = "SEQ_RUNS"
	// StreamEvents is the limits-retention stream of events (SubjectEventsAll).
	StreamEvents = "EVENTS"
	// ConsumerSeqworker is the durable pull consumer on SubjectRunAll shared
	// by all seqworker replicas.
	ConsumerSeqworker = "seqworker"
)

// Subjects and subject patterns (docs/architecture.md, NATS resources). Use the functions below to
// build concrete subjects: they check the tokens.
const (
	// SubjectRunAll matches every run request: seq.run.<sequence>.
	SubjectRunAll = "seq.run.>"
	// SubjectScheduleAll matches every schedule: seq.schedule.<sequence>.
	SubjectScheduleAll = "seq.schedule.>"
	// SubjectEventsAll matches every event.
	SubjectEventsAll = "events.>"
	// SubjectAgentReadyAll matches every agent_ready event.
	SubjectAgentReadyAll = "events.agent_ready.*"
	// SubjectRunEventsAll matches every run progress event.
	SubjectRunEventsAll = "events.run.>"
	// SubjectRegistryEventsAll matches every registry change event.
	SubjectRegistryEventsAll = "events.registry.>"
	// SubjectToolAll matches every tool call subject.
	SubjectToolAll = "tool.>"

	// ToolPrefix is the prefix of a tool's subject: tool.<name>.
	ToolPrefix = "tool."
	// ToolCancelToken is the last token of a tool's cancel subject,
	// tool.<name>.$cancel (ToolCancelSubject; docs/tools.md, "Cancel"). A
	// tool name cannot contain '$', so no tool's own subject is a cancel
	// subject.
	ToolCancelToken = "$cancel"
	// RegistryPrefix, SkillfacePrefix and SeqPrefix are the subject prefixes
	// of the micro service endpoints (for example skillbus.registry.skill.get).
	RegistryPrefix  = "skillbus.registry"
	SkillfacePrefix = "skillbus.skillface"
	SeqPrefix       = "skillbus.seq"
)

// Micro service names as shown by `nats micro ls` (letters, digits, - and _
// only, a rule of the micro protocol).
const (
	ServiceRegistry  = "skillbus-registry"
	ServiceSkillface = "skillbus-skillface"
	ServiceSeq       = "skillbus-seq"
)

// Registry event kinds and operations: events.registry.<kind>.<op>.
const (
	KindSkill    = "skill"
	KindSequence = "sequence"

	// OpPut: a valid definition was stored (new or changed).
	OpPut = "put"
	// OpDelete: a definition was removed (its file deleted).
	OpDelete = "delete"
	// OpInvalid: a file failed validation; the last good version, if any,
	// is kept. (docs/architecture.md lists every op.)
	OpInvalid = "invalid"
	// OpFixed: a file that was invalid (an OpInvalid event) loads again.
	// Published whether or not its content differs from the last good
	// version: fixed back to that content, the bucket does not change and
	// no OpPut follows (docs/architecture.md lists every op).
	OpFixed = "fixed"
	// OpClash: two files define the same skill name or group name; the
	// event names both files and the one kept.
	OpClash = "clash"
	// OpWarning: a file loaded, but with warnings (an unknown field such
	// as allowed_tools for allowed-tools); published each time the
	// registry reads the file — at its start and after every change — with
	// the lines in Warnings (docs/skills.md).
	OpWarning = "warning"
	// OpReverted: a write to SKILLS or SEQUENCES that did not come from
	// the registry was undone — the key put back to the registry's version,
	// or removed; Error says what was written and what was restored
	// (docs/skills.md, "The registry owns its buckets").
	OpReverted = "reverted"
	// OpDiffers (kind KindTree): a registry replica that does not hold the
	// lease has a tree that differs from the leader's (another directory,
	// another ConfigMap version): its tree is not loaded while the leader
	// holds the lease. Error says both trees' fingerprints, file counts
	// and holders (docs/skills.md, "One writer").
	OpDiffers = "differs"

	// KindTree: the event is about the registry's directory tree itself,
	// not one definition: a directory the registry refuses to enter (a
	// symlink leading outside the tree, an unreadable directory, with
	// OpInvalid), or a replica whose tree differs from the leader's (with
	// OpDiffers).
	KindTree = "tree"
)

// RunSlotObject returns the name of the BucketRunSlots object holding the
// value of slot in run runID: "<run id>/<slot>".
func RunSlotObject(runID, slot string) string { return runID + "/" + slot }

// RunsKeySubject returns the subject of a RUNS key ($KV.RUNS.<key>), where
// a writer that adds headers to a run's state (the run summary the
// listing reads, RunHeader*) publishes it.
func RunsKeySubject(key string) string { return "$KV." + BucketRuns + "." + key }

// RunSubject returns seq.run.<token>, the subject of a run request for a
// stored sequence, with the sequence name encoded by TokenFor:
// RunSubject("repo-survey") is seq.run.repo-survey, RunSubject("开机自检")
// is seq.run.=5byA5py66Ieq5qOA. Inline runs use the sequence token
// "_inline". Errors: ErrBadToken for an empty name or one longer than
// MaxNameLength bytes.
func RunSubject(sequence string) (string, error) {
	tok, err := nameToken("sequence name", sequence)
	if err != nil {
		return "", err
	}
	return "seq.run." + tok, nil
}

// InlineRunToken is the subject token used by RunSubject callers for a run
// of an inline (unstored) sequence: seq.run._inline.
const InlineRunToken = "_inline"

// ScheduleSubject returns seq.schedule.<token>, where the seqworker
// publishes a sequence's schedule message (docs/sequences.md,
// "Schedules"), the name encoded by TokenFor (NameOfSubject decodes it).
// Errors: ErrBadToken, as for RunSubject.
func ScheduleSubject(sequence string) (string, error) {
	tok, err := nameToken("sequence name", sequence)
	if err != nil {
		return "", err
	}
	return "seq.schedule." + tok, nil
}

// AgentReadySubject returns events.agent_ready.<token>, the agent name
// encoded by TokenFor: AgentReadySubject("机器人") is
// events.agent_ready.=5py65Zmo5Lq6. Errors: ErrBadToken, as for
// RunSubject.
func AgentReadySubject(agent string) (string, error) {
	tok, err := nameToken("agent name", agent)
	if err != nil {
		return "", err
	}
	return "events.agent_ready." + tok, nil
}

// RunEventSubject returns events.run.<run_id>.<kind>, kind one of the
// Run* event kinds. Errors: ErrBadToken (also for a run id longer than
// MaxRunIDLength).
func RunEventSubject(runID, kind string) (string, error) {
	if runID == "" {
		return "", fmt.Errorf("%w: run id is empty", ErrBadToken)
	}
	if len(runID) > MaxRunIDLength {
		return "", fmt.Errorf("%w: run id is %d bytes long; the limit is %d", ErrBadToken, len(runID), MaxRunIDLength)
	}
	switch kind {
	case RunStarted, RunGroup, RunItems, RunFinished, RunInterrupted, RunResumed, RunCancelling, RunWaiting, RunSignalled:
	default:
		return "", fmt.Errorf("%w: run event kind %q; want started, group, items, finished, interrupted, resumed, cancelling, waiting or signalled", ErrBadToken, kind)
	}
	return "events.run." + TokenFor(runID) + "." + kind, nil
}

// RegistryEventSubject returns events.registry.<kind>.<op>, kind one of
// KindSkill, KindSequence, KindTree and op one of OpPut, OpDelete,
// OpInvalid, OpFixed, OpClash, OpWarning, OpReverted, OpDiffers. Errors:
// ErrBadToken.
func RegistryEventSubject(kind, op string) (string, error) {
	switch kind {
	case KindSkill, KindSequence, KindTree:
	default:
		return "", fmt.Errorf("%w: registry event kind %q; want %q, %q or %q", ErrBadToken, kind, KindSkill, KindSequence, KindTree)
	}
	switch op {
	case OpPut, OpDelete, OpInvalid, OpFixed, OpClash, OpWarning, OpReverted, OpDiffers:
	default:
		return "", fmt.Errorf("%w: registry event op %q; want put, delete, invalid, fixed, clash, warning, reverted or differs", ErrBadToken, op)
	}
	return "events.registry." + kind + "." + op, nil
}

// ToolSubject returns tool.<name>. A tool name may hold dots (fs.read →
// tool.fs.read) but no empty token, spaces, wildcards (* >) or control
// characters. Errors: ErrBadToken.
func ToolSubject(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: tool name is empty", ErrBadToken)
	}
	for _, tok := range strings.Split(name, ".") {
		if err := checkToken("tool name "+fmt.Sprintf("%q", name)+" part", tok); err != nil {
			return "", err
		}
	}
	return ToolPrefix + name, nil
}

// ToolCancelSubject returns tool.<name>.$cancel, where a caller that gave
// up on a call of the tool publishes the call's reply subject so that the
// provider running it cancels it (docs/tools.md, "Cancel"). Errors: those
// of ToolSubject.
func ToolCancelSubject(name string) (string, error) {
	s, err := ToolSubject(name)
	if err != nil {
		return "", err
	}
	return s + "." + ToolCancelToken, nil
}

// checkToken reports whether s is one valid NATS subject token: non-empty,
// no '.', '*', '>', whitespace or control characters.
func checkToken(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: %s is empty", ErrBadToken, what)
	}
	for _, r := range s {
		switch {
		case r == '.', r == '*', r == '>':
			return fmt.Errorf("%w: %s %q contains %q, which NATS subjects reserve; use letters, digits, '-' or '_'", ErrBadToken, what, s, r)
		case r <= ' ' || r == 0x7f:
			return fmt.Errorf("%w: %s %q contains a space or control character", ErrBadToken, what, s)
		}
	}
	return nil
}

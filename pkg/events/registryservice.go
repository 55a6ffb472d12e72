package events

import (
	"fmt"
	"time"
)

// Endpoints of the ServiceRegistry micro service: list and read skills and
// sequences, store a sequence sent in its JSON form (seq_create) and delete
// one (docs/skills.md, docs/sequences.md). pkg/client calls them.
//
// Requests and replies are plain JSON, without the "v" field of the other
// messages of this package: the registry rejects unknown fields in a
// request, so a request carries exactly the fields of its type. An error
// reply has the NATS micro error headers (Nats-Service-Error-Code: 400 bad
// request, 404 not found, 409 conflict, 413 too large, 500 internal, 503
// unavailable) and a RegistryErrorReply body, whose Error is the whole
// message (the header is cut at 1,024 bytes) and whose Problems list every
// problem of an invalid sequence.
const (
	// RegistrySkillListSubject: {} → SkillList.
	RegistrySkillListSubject = RegistryPrefix + ".skill.list"
	// RegistrySkillGetSubject: RegistryNameRequest{Name} → the stored
	// skill record (pkg/skill's Skill as JSON).
	RegistrySkillGetSubject = RegistryPrefix + ".skill.get"
	// RegistrySkillInfoSubject: RegistryNameRequest{Name, Section} →
	// SkillInfo.
	RegistrySkillInfoSubject = RegistryPrefix + ".skill.info"
	// RegistrySeqListSubject: {} → SequenceList.
	RegistrySeqListSubject = RegistryPrefix + ".seq.list"
	// RegistrySeqGetSubject: RegistryNameRequest{Name} → the stored
	// sequence AST (canonical JSON, pkg/seq's Decode reads it).
	RegistrySeqGetSubject = RegistryPrefix + ".seq.get"
	// RegistrySeqCreateSubject: a sequence in its JSON form
	// (docs/sequences.md, "Two forms" and "The tools string") → SeqCreated. Errors: 400 with every problem in
	// RegistryErrorReply.Problems; 409 a sequence of that name defined by a
	// file, or a group name another sequence uses; 413 too large.
	RegistrySeqCreateSubject = RegistryPrefix + ".seq.create"
	// RegistrySeqDeleteSubject: RegistryNameRequest{Name} → SeqDeleted.
	// Errors: 404 no sequence of that name was created over NATS; 409 the
	// sequence is defined by a file (delete the file).
	RegistrySeqDeleteSubject = RegistryPrefix + ".seq.delete"

	// RegistryLeaderPrefix is the prefix of the subjects on which only the
	// registry replica holding the lease (BucketRegistryLease) listens: a
	// replica that does not hold it forwards the seq.create and seq.delete
	// requests it receives there, so that one replica writes SKILLS and
	// SEQUENCES (docs/skills.md, "One writer"). Only registries use them.
	RegistryLeaderPrefix = RegistryPrefix + ".leader"
	// RegistryLeaderSeqCreateSubject and RegistryLeaderSeqDeleteSubject
	// take the body of RegistrySeqCreateSubject and RegistrySeqDeleteSubject
	// and answer as they do.
	RegistryLeaderSeqCreateSubject = RegistryLeaderPrefix + ".seq.create"
	RegistryLeaderSeqDeleteSubject = RegistryLeaderPrefix + ".seq.delete"
)

// RegistryLease is the value of RegistryLeaseKey in BucketRegistryLease:
// who writes SKILLS and SEQUENCES, and the tree it loads. The leader
// writes it with compare-and-set when it takes the lease, renews it every
// RegistryLeaseTTL/10 and deletes it when it stops; the other replicas
// compare Tree with their own to report a tree that differs (OpDiffers).
// `nats kv get REGISTRY_LEASE leader` shows it.
type RegistryLease struct {
	// Holder identifies the registry process: host, process id and a
	// random part.
	Holder string `json:"holder"`
	// Host is the host name of the process (a pod's name).
	Host string `json:"host,omitempty"`
	// Dir is the tree's root as the holder names it.
	Dir string `json:"dir,omitempty"`
	// Tree is the tree's fingerprint: "sha256:" and the SHA-256 of every
	// definition file's path (relative to the root) and content, in path
	// order; equal trees — the same files with the same bytes — have equal
	// fingerprints wherever they are mounted.
	Tree string `json:"tree"`
	// Files is the number of definition files in the tree.
	Files int `json:"files"`
	// Version is the holder's skillbus version.
	Version string `json:"version,omitempty"`
	// Since is when the holder took the lease.
	Since time.Time `json:"since"`
}

// MaxSkillInfoBytes bounds SkillInfo.Text (64 KiB): a section longer than
// that (or a whole skill of few but very long lines) is cut at the last
// line end that fits, and a note gives the lines left out and how to read
// them, so the reply always fits in a NATS message and in a model's
// context.
const MaxSkillInfoBytes = 64 << 10

// RegistryErrorReply is the body of every error reply of the registry.
type RegistryErrorReply struct {
	// Code is the error code, as in the Nats-Service-Error-Code header.
	Code string `json:"code"`
	// Error says what is wrong and how to fix it, whole.
	Error string `json:"error"`
	// Problems lists every problem of an invalid sequence (seq.create).
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is one thing wrong with a skill or sequence definition: where
// and what. A warning does not stop the definition from loading. For a
// sequence, Where is "group N "name": tool M "tool": field" as `skillbus
// validate` prints it (docs/sequences.md, "How problems are reported").
type Problem struct {
	// File is the definition's file ("" for one sent over NATS).
	File string `json:"file,omitempty"`
	// Line is 1-based; 0 when unknown.
	Line    int    `json:"line,omitempty"`
	Where   string `json:"where,omitempty"`
	Message string `json:"message"`
	Warning bool   `json:"warning,omitempty"`
}

// String returns "FILE:LINE: WHERE: MESSAGE" ("FILE:LINE: warning: …" for a
// warning), the parts that are empty left out.
func (p Problem) String() string {
	s := p.File
	if p.Line > 0 {
		s = fmt.Sprintf("%s:%d", s, p.Line)
	}
	if p.Warning {
		if s != "" {
			s += ": "
		}
		s += "warning"
	}
	if p.Where != "" {
		if s != "" {
			s += ": "
		}
		s += p.Where
	}
	if s != "" {
		s += ": "
	}
	return s + p.Message
}

// RegistryNameRequest is the request of the get, info and delete
// endpoints.
type RegistryNameRequest struct {
	// Name is the skill's or sequence's name (required).
	Name string `json:"name"`
	// Section (skill.info only) is a section title; "" asks for the whole
	// skill or its table of contents (docs/skills.md, "What is injected").
	// Titles match exactly (case and spaces ignored), then as a substring.
	Section string `json:"section,omitempty"`
}

// SkillSummary is one entry of SkillList.
type SkillSummary struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Source is the skill's file, relative to the registry's directory.
	Source string `json:"source"`
	// Warnings are the skill's warnings (an unknown field, an empty
	// allowed-tools …), one "FILE:LINE: message" line each; the skill is
	// loaded, but may not behave as its author meant.
	Warnings []string `json:"warnings,omitempty"`
}

// SkillList is the reply of skill.list, sorted by name.
type SkillList struct {
	Skills []SkillSummary `json:"skills"`
}

// SkillInfo is the reply of skill.info.
type SkillInfo struct {
	Name    string `json:"name"`
	Section string `json:"section,omitempty"`
	// Text is what a model reads: the skill, its head and table of
	// contents, or one section with its subsections — at most
	// MaxSkillInfoBytes, cut at a line end with a note saying what was
	// left out.
	Text string `json:"text"`
	// Warnings are the skill's warnings, as in SkillSummary (for people;
	// not part of Text).
	Warnings []string `json:"warnings,omitempty"`
}

// SequenceSummary is one entry of SequenceList.
type SequenceSummary struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Source is the sequence's file, relative to the registry's directory,
	// or a label saying it was created over NATS.
	Source string `json:"source"`
	// Groups are the group names in order: each is a signature callable
	// by seq_call.
	Groups   []string `json:"groups"`
	Boot     bool     `json:"boot,omitempty"`
	Schedule string   `json:"schedule,omitempty"`
	// TimeZone is the IANA zone a cron Schedule is read in; "" is UTC
	// (docs/sequences.md, Schedules).
	TimeZone string `json:"timezone,omitempty"`
	// Signature maps each run argument to its type (docs/sequences.md,
	// "Types").
	Signature map[string]string `json:"signature"`
}

// SequenceList is the reply of seq.list, sorted by name.
type SequenceList struct {
	Sequences []SequenceSummary `json:"sequences"`
}

// SeqCreated is the reply of seq.create.
type SeqCreated struct {
	Name string `json:"name"`
	// Replaced is true when a sequence of that name created earlier over
	// NATS was replaced.
	Replaced bool `json:"replaced"`
	// Signature maps each run argument to its type.
	Signature map[string]string `json:"signature"`
}

// SeqDeleted is the reply of seq.delete.
type SeqDeleted struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

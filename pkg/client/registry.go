package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/pkg/events"
)

// The registry's endpoints (skillbus.registry.*): list and read skills and
// sequences, store a sequence sent in its JSON form, delete one. The
// request and reply types are those of pkg/events (registryservice.go);
// errors are those of the run methods: ErrBadRequest, ErrNotFound,
// ErrConflict, ErrUnavailable (errors.Is), each holding the registry's
// code and whole message as a *toolcall.Error (errors.As), and ErrClosed
// for a closed connection.

// SkillList lists the stored skills, sorted by name. Errors:
// ErrUnavailable (no registry answers).
func (c *Client) SkillList(ctx context.Context) (*events.SkillList, error) {
	var out events.SkillList
	if err := c.registryRequest(ctx, events.RegistrySkillListSubject, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SkillGet returns the stored record of the skill name: pkg/skill's Skill
// as JSON (frontmatter fields, body, sections index, fingerprint). Errors:
// ErrNotFound (no such skill), ErrBadRequest (an empty name),
// ErrUnavailable.
func (c *Client) SkillGet(ctx context.Context, name string) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.registryRequest(ctx, events.RegistrySkillGetSubject, events.RegistryNameRequest{Name: name}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// SkillInfo returns a skill as a model reads it (skill_info,
// docs/skills.md): with section "", the whole text of a short skill or the
// head and table of contents of a long one; else that section and its
// subsections (title matched exactly, then as a substring, case and spaces
// ignored). Errors: ErrNotFound (no such skill, or no such section: the
// message lists the titles), ErrBadRequest, ErrUnavailable.
func (c *Client) SkillInfo(ctx context.Context, name, section string) (*events.SkillInfo, error) {
	var out events.SkillInfo
	if err := c.registryRequest(ctx, events.RegistrySkillInfoSubject, events.RegistryNameRequest{Name: name, Section: section}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SeqList lists the stored sequences, sorted by name, each with its groups
// and signature. Errors: ErrUnavailable.
func (c *Client) SeqList(ctx context.Context) (*events.SequenceList, error) {
	var out events.SequenceList
	if err := c.registryRequest(ctx, events.RegistrySeqListSubject, struct{}{}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SeqGet returns the stored sequence name as its canonical JSON AST
// (pkg/seq's Decode reads it). Errors: ErrNotFound, ErrBadRequest,
// ErrUnavailable.
func (c *Client) SeqGet(ctx context.Context, name string) (json.RawMessage, error) {
	var out json.RawMessage
	if err := c.registryRequest(ctx, events.RegistrySeqGetSubject, events.RegistryNameRequest{Name: name}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// SeqCreate stores a sequence sent in its JSON form (the form a model
// writes, docs/sequences.md: `tools` is a string of JSON objects each
// followed by ';') and returns its name and signature. A sequence of the
// same name created earlier this way is replaced. Errors: ErrBadRequest
// for an invalid sequence — Problems(err) lists every problem, each saying
// where and how to fix it; ErrConflict (a sequence of that name comes from
// a file, or a group name is used by another sequence); a *toolcall.Error
// with code 413 for a sequence too large to store; ErrUnavailable.
func (c *Client) SeqCreate(ctx context.Context, jsonForm []byte) (*events.SeqCreated, error) {
	var out events.SeqCreated
	if err := c.registryRequest(ctx, events.RegistrySeqCreateSubject, json.RawMessage(jsonForm), &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SeqDelete deletes a sequence created with SeqCreate. Errors: ErrNotFound
// (no sequence of that name was created over NATS), ErrConflict (it comes
// from a file: delete the file), ErrBadRequest, ErrUnavailable.
func (c *Client) SeqDelete(ctx context.Context, name string) (*events.SeqDeleted, error) {
	var out events.SeqDeleted
	if err := c.registryRequest(ctx, events.RegistrySeqDeleteSubject, events.RegistryNameRequest{Name: name}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Problems returns the problems of an invalid sequence carried by an error
// of SeqCreate (every one, in order, as `skillbus validate` prints them);
// nil for any other error.
func Problems(err error) []events.Problem {
	var pe *problemsError
	if errors.As(err, &pe) {
		return pe.problems
	}
	return nil
}

// problemsError adds the problems of an error reply to the error it wraps.
type problemsError struct {
	err      error
	problems []events.Problem
}

func (e *problemsError) Error() string { return e.err.Error() }
func (e *problemsError) Unwrap() error { return e.err }

// registryRequest sends req (plain JSON: registry requests have no "v"
// field) to subject and decodes the reply into out (a *json.RawMessage
// takes it as is). Errors: as request; the whole message of an error reply
// is taken from its body (the header is cut at 1,024 bytes), with its
// problems (Problems).
func (c *Client) registryRequest(ctx context.Context, subject string, req, out any) error {
	return Requester{
		Timeout: c.timeout,
		NoResponders: func(subject string) error {
			return fmt.Errorf("%w: no registry answers on %s", ErrUnavailable, subject)
		},
		NoReply: func(subject string, waited time.Duration) error {
			return fmt.Errorf("%w: %s", ErrUnavailable, noReply("the registry", subject, waited))
		},
		ErrorReply: func(subject, code string, reply *nats.Msg) error {
			err := serviceError(subject, code, ReplyText(reply))
			var body events.RegistryErrorReply
			if json.Unmarshal(reply.Data, &body) == nil && len(body.Problems) > 0 {
				err = &problemsError{err: err, problems: body.Problems}
			}
			return err
		},
	}.Do(ctx, c.nc, subject, req, out)
}

package skillface

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error skillface itself detects wraps one of them,
// so callers test with errors.Is; a SessionStore's own errors and ctx.Err()
// are passed through (wrapped with the session id).
var (
	// ErrInvalidOption: an Option was given a value out of range; returned
	// by New.
	ErrInvalidOption = errors.New("skillface: invalid option")
	// ErrInvalidRequest: a Request is malformed (no session id, a round
	// below 1, a message without a role). Terminal: retrying the same
	// request fails the same way.
	ErrInvalidRequest = errors.New("skillface: invalid request")
	// ErrUnknownSkill: a Request mounts a skill that is not loaded. The
	// error is an *UnknownSkillError naming the skills. Terminal.
	ErrUnknownSkill = errors.New("skillface: unknown skill")
	// ErrInvalidSkill: PutSkill or SetSkills was given a skill record that
	// skillface cannot use (no name, an unknown invocation, a malformed
	// path glob or tool pattern). The skill set is left unchanged.
	ErrInvalidSkill = errors.New("skillface: invalid skill")
	// ErrSessionNotFound: SessionStore.Get found no state for the session
	// (never written, or expired by the store's TTL).
	ErrSessionNotFound = errors.New("skillface: session not found")
	// ErrRevisionMismatch: SessionStore.CompareAndSet was given a revision
	// that is not the session's current one (another writer came first).
	// Retryable: read again and reapply.
	ErrRevisionMismatch = errors.New("skillface: session revision mismatch")
	// ErrContention: Assemble lost the compare-and-set race for one session
	// more times than WithMaxAttempts allows. Retryable.
	ErrContention = errors.New("skillface: session contention")
)

// UnknownSkillError is returned by Assemble when Request.Mounts names skills
// that are not loaded (docs/skills.md). It matches ErrUnknownSkill with
// errors.Is.
type UnknownSkillError struct {
	// Names are the unknown mounts in request order, each once.
	Names []string
}

// Error names every unknown skill and says how to find the loaded ones.
func (e *UnknownSkillError) Error() string {
	q := make([]string, len(e.Names))
	for i, n := range e.Names {
		q[i] = fmt.Sprintf("%q", n)
	}
	noun := "skill"
	if len(q) > 1 {
		noun = "skills"
	}
	return fmt.Sprintf("skillface: cannot mount unknown %s %s: no skill with that name is loaded "+
		"(list the loaded skills with `skillbus skills`, or check the spelling)", noun, strings.Join(q, ", "))
}

// Is reports whether target is ErrUnknownSkill.
func (e *UnknownSkillError) Is(target error) bool { return target == ErrUnknownSkill }

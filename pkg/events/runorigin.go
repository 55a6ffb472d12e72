package events

import (
	"fmt"
	"time"
)

// Origin says in words what run s is — what made it, its sequence, status
// and creation time — for a message about a run id that names it already
// (seq.retry, `skillbus runs retry --run-id`; docs/runs.md, "Retry"):
// `a retry of "r-1" (sequence "rt", failed, created 2026-12-01T14:02:11Z)`
// or `a run of the sequence "rt" (trigger manual, succeeded, created …)`.
func (s *RunState) Origin() string {
	trigger := s.Trigger
	if trigger == "" {
		trigger = TriggerManual
	}
	created := ""
	if !s.CreatedAt.IsZero() {
		created = ", created " + s.CreatedAt.UTC().Format(time.RFC3339)
	}
	if s.RetryOf != "" {
		return fmt.Sprintf("a retry of %q (sequence %q, %s%s)", s.RetryOf, s.Sequence, s.Status, created)
	}
	return fmt.Sprintf("a run of the sequence %q (trigger %s, %s%s)", s.Sequence, trigger, s.Status, created)
}

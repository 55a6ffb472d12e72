package skillface

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skillbus/skillbus/pkg/skill"
)

// Outcomes of a skill in one assembled call ([Verdict.Outcome]).
const (
	// OutcomeActivated: the skill's body was injected for the first time
	// in this round (it is in [Response.Activated]).
	OutcomeActivated = "activated"
	// OutcomeActive: the skill's body is in the prompt, retained from an
	// earlier round of the session.
	OutcomeActive = "active"
	// OutcomeDropped: the skill activated but the session already held
	// its limit of bodies, so its body was not injected.
	OutcomeDropped = "dropped"
	// OutcomeNotActivated: the skill's body is not in the prompt.
	OutcomeNotActivated = "not activated"
)

// Verdict says what happened to one loaded skill in one assembled call,
// and why: the reasons the console's assembly preview and `skillbus test`
// show (docs/skills.md, docs/testing.md).
type Verdict struct {
	Name       string `json:"name"`
	Invocation string `json:"invocation"`
	// Outcome is one of OutcomeActivated, OutcomeActive, OutcomeDropped,
	// OutcomeNotActivated.
	Outcome string `json:"outcome"`
	// Reasons are the sentences of what activated the skill in this call
	// (its mount, each trigger found in the latest user message, each
	// work file matching one of its paths), or of why nothing did.
	Reasons []string `json:"reasons"`
	// Triggered: the skill activated or triggered again in this call, so
	// it shapes the tool surface ([Response.Triggered]).
	Triggered bool `json:"triggered,omitempty"`
	// BodyTruncated: the injected body was cut to the body budget (only
	// for a skill whose body is in the prompt).
	BodyTruncated bool `json:"body_truncated,omitempty"`
	// Listed: the skill has an entry in the listing (false when the
	// listing budget left it out); Entry is that entry as the model sees
	// it, EntryTruncated whether it was cut to the entry budget.
	Listed         bool   `json:"listed"`
	Entry          string `json:"entry,omitempty"`
	EntryTruncated bool   `json:"entry_truncated,omitempty"`
}

// Explain returns one Verdict per loaded skill, sorted by name, for the
// call req that Assemble answered with resp. It asks the skill set and
// budgets of a, so call it right after Assemble, before the skill set
// changes. The matching is Assemble's own (the same trigger and path
// rules, one trigger or glob at a time), never a copy of it.
func (a *Assembler) Explain(req Request, resp Response) []Verdict {
	sn := a.snapshot()
	var message string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == RoleUser {
			message = req.Messages[i].Content
			break
		}
	}
	out := make([]Verdict, 0, len(sn.entries))
	for i, e := range sn.entries {
		v := Verdict{Name: e.sk.Name, Invocation: string(e.sk.Invocation), Outcome: OutcomeNotActivated,
			Listed: i < a.cfg.listingEntries, Triggered: slices.Contains(resp.Triggered, e.sk.Name)}
		if v.Listed {
			v.Entry, v.EntryTruncated = e.line, e.lineCut
		}
		switch {
		case slices.Contains(resp.Dropped, e.sk.Name):
			v.Outcome = OutcomeDropped
		case slices.Contains(resp.Activated, e.sk.Name):
			v.Outcome = OutcomeActivated
		case slices.Contains(resp.Active, e.sk.Name):
			v.Outcome = OutcomeActive
		}
		if v.Outcome == OutcomeActivated || v.Outcome == OutcomeActive {
			v.BodyTruncated = a.bodyTruncated(e)
		}
		if req.Restricted {
			v.Reasons = []string{"the session is restricted (a group chat, a stranger): skills are neither listed nor injected"}
			v.Listed, v.Entry, v.EntryTruncated = false, "", false
			out = append(out, v)
			continue
		}
		if slices.Contains(req.Mounts, e.sk.Name) {
			v.Reasons = append(v.Reasons, "it is mounted")
		}
		if e.modelInvocable() {
			for j, ct := range e.triggers {
				var x triggerIndex
				x.addCompiled(ct, 0)
				hit := false
				x.match(message, func(int) { hit = true })
				if hit {
					v.Reasons = append(v.Reasons, fmt.Sprintf("the trigger %q appears in the message", triggerText(&e.sk, j)))
				}
			}
			for _, f := range req.WorkFiles {
				for _, p := range e.sk.Paths {
					one := snapshot{}
					one.paths.add(newPathRef(p, 0))
					hit := false
					one.matchFiles([]string{f}, func(int) { hit = true })
					if hit {
						v.Reasons = append(v.Reasons, fmt.Sprintf("the work file %q matches its path %q", f, p))
					}
				}
			}
		}
		switch {
		case v.Outcome == OutcomeDropped:
			v.Reasons = append(v.Reasons, fmt.Sprintf("but the session already holds %d skill bodies, the most it may (session_bodies), so its body was not injected", len(resp.Active)))
		case v.Outcome == OutcomeActive && len(v.Reasons) == 0:
			v.Reasons = []string{"it activated in an earlier round of this session and its body stays in the prompt"}
		case len(v.Reasons) == 0:
			v.Reasons = WhyNotActivated(&e.sk, &req)
		}
		out = append(out, v)
	}
	return out
}

// triggerText returns the skill's j-th non-blank trigger as written
// (entry.triggers leaves blank ones out).
func triggerText(s *skill.Skill, j int) string {
	for _, t := range s.Triggers {
		if strings.TrimSpace(t) == "" {
			continue
		}
		if j == 0 {
			return t
		}
		j--
	}
	return ""
}

// bodyTruncated reports whether e's injected body is cut to the body
// budget, from the render cache when it holds e (without counting a hit).
func (a *Assembler) bodyTruncated(e *entry) bool {
	a.cacheMu.RLock()
	rb, ok := a.cache[e.sk.Name]
	a.cacheMu.RUnlock()
	if ok && rb.fingerprint == e.sk.Fingerprint {
		return rb.truncated
	}
	return renderBody(&e.sk, a.cfg.bodyBytes).truncated
}

// WhyNotActivated says, in sentences for a person, why a skill that
// nothing activated in req did not activate: user-only, no triggers or
// paths, no trigger in the message, no (matching) work files — the rules
// of docs/skills.md, "Activation". It is what Explain and the console's
// assembly preview give as the reasons; empty for none of these.
func WhyNotActivated(sk *skill.Skill, req *Request) []string {
	if sk.Invocation == skill.InvocationUserOnly {
		return []string{"it is user-only (invocation: user-only, or disable-model-invocation: true): only a mount activates it"}
	}
	if len(sk.Triggers) == 0 && len(sk.Paths) == 0 {
		return []string{"it has no triggers and no paths: only a mount activates it"}
	}
	var why []string
	if len(sk.Triggers) > 0 {
		why = append(why, fmt.Sprintf("none of its triggers (%s) appears in the message as a whole word or phrase (case and spacing ignored)", quoteList(sk.Triggers)))
	}
	switch {
	case len(sk.Paths) > 0 && len(req.WorkFiles) == 0:
		why = append(why, fmt.Sprintf("no work files were given to match its paths (%s)", quoteList(sk.Paths)))
	case len(sk.Paths) > 0:
		why = append(why, fmt.Sprintf("no work file matches its paths (%s)", quoteList(sk.Paths)))
	}
	return why
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

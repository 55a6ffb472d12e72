package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// budgets are skillface's budgets (docs/skills.md, "How skillface uses
// skills"); 0 means the default.
type budgets struct {
	EntryChars     int `json:"entry_chars"`
	ListingEntries int `json:"listing_entries"`
	SessionBodies  int `json:"session_bodies"`
	BodyBytes      int `json:"body_bytes"`
}

func (b *budgets) fill() {
	if b.EntryChars == 0 {
		b.EntryChars = skillface.DefaultEntryChars
	}
	if b.ListingEntries == 0 {
		b.ListingEntries = skillface.DefaultListingEntries
	}
	if b.SessionBodies == 0 {
		b.SessionBodies = skillface.DefaultSessionBodies
	}
	if b.BodyBytes == 0 {
		b.BodyBytes = skillface.DefaultBodyBytes
	}
}

// skillVerdict says what happened to one skill in a preview, and why.
type skillVerdict struct {
	Name       string `json:"name"`
	Invocation string `json:"invocation"`
	// Outcome is "activated" (its body was injected), "dropped" (it
	// activated but the session's body budget was full) or "not activated".
	Outcome string `json:"outcome"`
	// Reasons are the sentences of what activated it, or of why nothing
	// did.
	Reasons []string `json:"reasons"`
	// Triggers and Paths are the skill's own, for reference.
	Triggers []string `json:"triggers,omitempty"`
	Paths    []string `json:"paths,omitempty"`
	// Narrows: the tool patterns the skill brings to the surface.
	AllowedTools    []string `json:"allowed_tools,omitempty"`
	DisallowedTools []string `json:"disallowed_tools,omitempty"`
}

// previewAnswer is the answer of POST /api/preview.
type previewAnswer struct {
	// Request is what was assembled (the form turned into a request).
	Request skillface.Request `json:"request"`
	// Response is skillface's answer, unchanged.
	Response skillface.Response `json:"response"`
	// Listing is the listing message's text, Injected the bodies (skill →
	// text) as the model sees them.
	Listing  string         `json:"listing,omitempty"`
	Injected []injectedBody `json:"injected,omitempty"`
	// Removed lists the caller's tools that are not on the surface.
	Removed []string       `json:"removed,omitempty"`
	Budgets budgets        `json:"budgets"`
	Skills  []skillVerdict `json:"skills"`
	Loaded  int            `json:"loaded"`
}

type injectedBody struct {
	Skill string `json:"skill"`
	Text  string `json:"text"`
}

// previewSession is the session id of every preview: each preview has a
// store of its own, in memory, thrown away after the request.
const previewSession = "skillbus-console-preview"

// preview assembles req's turn on skills as skillface would for the first
// turn of a new session, and explains each skill's outcome. Errors: a bad
// budget (ErrBadRequest), an unknown mount (code 404, skillface's
// message), ctx's.
func preview(ctx context.Context, skills []skill.Skill, req *previewRequest) (*previewAnswer, error) {
	b := req.Budgets
	b.fill()
	asm, err := skillface.New(skillface.WithEntryChars(b.EntryChars), skillface.WithListingEntries(b.ListingEntries),
		skillface.WithSessionBodies(b.SessionBodies), skillface.WithBodyBytes(b.BodyBytes),
		skillface.WithSessionStore(skillface.NewMemoryStore(0)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", client.ErrBadRequest, err)
	}
	var problems []error
	for _, sk := range skills {
		if err := asm.PutSkill(sk); err != nil {
			problems = append(problems, err) // skillface skips such a record too
		}
	}
	sreq := skillface.Request{SessionID: previewSession, Round: 1, WorkFiles: clean(req.WorkFiles), Tools: clean(req.Tools), Mounts: clean(req.Mounts)}
	if strings.TrimSpace(req.System) != "" {
		sreq.Messages = append(sreq.Messages, skillface.Message{Role: skillface.RoleSystem, Content: req.System})
	}
	sreq.Messages = append(sreq.Messages, skillface.Message{Role: skillface.RoleUser, Content: req.Message})
	resp, err := asm.Assemble(ctx, sreq)
	if err != nil {
		var unknown *skillface.UnknownSkillError
		if errors.As(err, &unknown) {
			return nil, &toolcall.Error{Code: "404", Description: err.Error()}
		}
		return nil, err
	}
	out := &previewAnswer{Request: sreq, Response: resp, Budgets: b, Loaded: len(skills)}
	// The inserted blocks follow the leading system messages: the listing
	// (when any skill is loaded), then one body per active skill.
	lead := 0
	for lead < len(sreq.Messages) && sreq.Messages[lead].Role == skillface.RoleSystem {
		lead++
	}
	blocks := resp.Messages[lead : lead+len(resp.Messages)-len(sreq.Messages)]
	if len(skills) > 0 && len(blocks) > 0 {
		out.Listing, blocks = blocks[0].Content, blocks[1:]
	}
	for i, m := range blocks {
		if i < len(resp.Active) {
			out.Injected = append(out.Injected, injectedBody{Skill: resp.Active[i], Text: m.Content})
		}
	}
	for _, t := range sreq.Tools {
		if !slices.Contains(resp.Tools, t) {
			out.Removed = append(out.Removed, t)
		}
	}
	out.Skills, err = explain(ctx, skills, &sreq, &resp)
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		out.Skills = append(out.Skills, skillVerdict{Name: "(record)", Outcome: "not activated", Reasons: []string{"skillface cannot use this record: " + p.Error()}})
	}
	return out, nil
}

// explain finds, for each skill, which of its triggers appear in the
// message and which of its paths match which work file. It asks
// pkg/skillface itself — one probe skill per trigger and per glob, each
// assembled on its own — so the matching rules are skillface's, not a
// copy of them.
func explain(ctx context.Context, skills []skill.Skill, req *skillface.Request, resp *skillface.Response) ([]skillVerdict, error) {
	type probe struct {
		skill int
		text  string
	}
	var trig, glob []probe
	for i, sk := range skills {
		if sk.Invocation == skill.InvocationUserOnly {
			continue
		}
		for _, t := range sk.Triggers {
			trig = append(trig, probe{i, t})
		}
		for _, p := range sk.Paths {
			glob = append(glob, probe{i, p})
		}
	}
	matchedTrig := map[int][]string{}
	matchedPath := map[int][]string{}
	newAsm := func(prefix string, ps []probe, set func(*skill.Skill, string)) (*skillface.Assembler, error) {
		asm, err := skillface.New(skillface.WithSessionBodies(len(ps)+1), skillface.WithSessionStore(skillface.NewMemoryStore(0)))
		if err != nil {
			return nil, err
		}
		for j, p := range ps {
			sk := skill.Skill{Name: prefix + strconv.Itoa(j), Description: "probe", Invocation: skill.InvocationBoth, Context: skill.ContextInline}
			set(&sk, p.text)
			if err := asm.PutSkill(sk); err != nil {
				continue // an invalid glob: the real skill failed to load too
			}
		}
		return asm, nil
	}
	index := func(prefix, name string) int {
		n, err := strconv.Atoi(strings.TrimPrefix(name, prefix))
		if err != nil {
			return -1
		}
		return n
	}
	if len(trig) > 0 && len(req.Messages) > 0 {
		asm, err := newAsm("t", trig, func(sk *skill.Skill, t string) { sk.Triggers = []string{t} })
		if err != nil {
			return nil, err
		}
		r, err := asm.Assemble(ctx, skillface.Request{SessionID: "t", Round: 1, Messages: req.Messages[len(req.Messages)-1:]})
		if err != nil {
			return nil, err
		}
		for _, name := range r.Triggered {
			if j := index("t", name); j >= 0 && j < len(trig) {
				matchedTrig[trig[j].skill] = append(matchedTrig[trig[j].skill], fmt.Sprintf("the trigger %q appears in the message", trig[j].text))
			}
		}
	}
	if len(glob) > 0 && len(req.WorkFiles) > 0 {
		asm, err := newAsm("p", glob, func(sk *skill.Skill, p string) { sk.Paths = []string{p} })
		if err != nil {
			return nil, err
		}
		files := req.WorkFiles
		if len(files) > 200 {
			files = files[:200]
		}
		for fi, f := range files {
			r, err := asm.Assemble(ctx, skillface.Request{SessionID: "f" + strconv.Itoa(fi), Round: 1, WorkFiles: []string{f}})
			if err != nil {
				return nil, err
			}
			for _, name := range r.Triggered {
				if j := index("p", name); j >= 0 && j < len(glob) {
					matchedPath[glob[j].skill] = append(matchedPath[glob[j].skill], fmt.Sprintf("the work file %q matches its path %q", f, glob[j].text))
				}
			}
		}
	}
	out := make([]skillVerdict, 0, len(skills))
	for i, sk := range skills {
		v := skillVerdict{Name: sk.Name, Invocation: string(sk.Invocation), Triggers: sk.Triggers, Paths: sk.Paths,
			AllowedTools: sk.AllowedTools, DisallowedTools: sk.DisallowedTools, Outcome: "not activated"}
		switch {
		case slices.Contains(resp.Dropped, sk.Name):
			v.Outcome = "dropped"
		case slices.Contains(resp.Activated, sk.Name):
			v.Outcome = "activated"
		}
		if slices.Contains(req.Mounts, sk.Name) {
			v.Reasons = append(v.Reasons, "it is mounted")
		}
		v.Reasons = append(v.Reasons, matchedTrig[i]...)
		v.Reasons = append(v.Reasons, matchedPath[i]...)
		if v.Outcome == "dropped" {
			v.Reasons = append(v.Reasons, fmt.Sprintf("but the session already holds %d skill bodies, the most it may (session_bodies), so its body was not injected", len(resp.Active)))
		}
		if len(v.Reasons) == 0 {
			v.Reasons = skillface.WhyNotActivated(&sk, req)
		}
		out = append(out, v)
	}
	return out, nil
}

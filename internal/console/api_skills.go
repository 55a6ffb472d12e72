package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/sections"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/skill"
)

// apiSkills is GET /api/skills: skill.list, as `skillbus skills` (names,
// descriptions, sources and the registry's warnings).
func (s *Server) apiSkills(w http.ResponseWriter, r *http.Request) {
	list, err := s.skillList(r.Context())
	if err != nil {
		writeFail(w, r, err)
		return
	}
	if list.Skills == nil {
		list.Skills = []events.SkillSummary{}
	}
	writeJSON(w, http.StatusOK, list)
}

// skillRecord is what the skill page shows of a stored record: every field
// but the body, whose sections index is the table of contents.
type skillRecord struct {
	Name            string             `json:"name"`
	Description     string             `json:"description"`
	WhenToUse       string             `json:"when_to_use,omitempty"`
	Version         int                `json:"version"`
	Invocation      skill.Invocation   `json:"invocation"`
	Triggers        []string           `json:"triggers,omitempty"`
	Paths           []string           `json:"paths,omitempty"`
	AllowedTools    []string           `json:"allowed_tools,omitempty"`
	DisallowedTools []string           `json:"disallowed_tools,omitempty"`
	Context         skill.Context      `json:"context"`
	Format          skill.Format       `json:"format"`
	Source          string             `json:"source,omitempty"`
	Sections        []sections.Section `json:"sections,omitempty"`
	Lines           int                `json:"lines"`
	BodyBytes       int                `json:"body_bytes"`
	Warnings        []string           `json:"warnings,omitempty"`
}

// apiSkill is GET /api/skills/{name}[?section=TITLE]: the record (skill.get)
// and what skill_info returns (skill.info: the whole skill, its head and
// table of contents, or one section), as `skillbus skills info`.
func (s *Server) apiSkill(w http.ResponseWriter, r *http.Request) {
	name := seq.NormalizeName(r.PathValue("name")) // as the CLI: a decomposed é is the composed one (docs/sequences.md, Names)
	ctx := r.Context()
	info, err := s.skillInfo(ctx, name, r.URL.Query().Get("section"))
	if err != nil {
		writeFail(w, r, err)
		return
	}
	out := map[string]any{"info": info}
	if raw, err := s.skillGet(ctx, name); err == nil {
		var sk skill.Skill
		if json.Unmarshal(raw, &sk) == nil {
			rec := skillRecord{Name: sk.Name, Description: sk.Description, WhenToUse: sk.WhenToUse, Version: sk.Version,
				Invocation: sk.Invocation, Triggers: sk.Triggers, Paths: sk.Paths, AllowedTools: sk.AllowedTools,
				DisallowedTools: sk.DisallowedTools, Context: sk.Context, Format: sk.Format, Source: sk.Source,
				Sections: sk.Sections, Lines: strings.Count(sk.Body, "\n"), BodyBytes: len(sk.Body)}
			for _, w := range sk.Warnings {
				rec.Warnings = append(rec.Warnings, w.String())
			}
			out["record"] = rec
		}
	} else {
		out["record_error"] = err.Error()
	}
	writeJSON(w, http.StatusOK, out)
}

// skillCache holds the skill records the preview assembles with, read
// through the registry (skill.list, then skill.get for each). A registry
// event about a skill empties it; without the events feed nothing is kept.
type skillCache struct {
	s     *Server
	mu    sync.Mutex
	gen   uint64
	valid bool
	list  []skill.Skill
}

func newSkillCache(s *Server) *skillCache { return &skillCache{s: s} }

// invalidate forgets the records (a skill was stored, changed or deleted).
func (c *skillCache) invalidate() {
	c.mu.Lock()
	c.gen++
	c.valid = false
	c.list = nil
	c.mu.Unlock()
}

// all returns every stored skill's record.
func (c *skillCache) all(ctx context.Context) ([]skill.Skill, error) {
	c.mu.Lock()
	if c.valid {
		list := c.list
		c.mu.Unlock()
		return list, nil
	}
	gen := c.gen
	c.mu.Unlock()

	names, err := c.s.skillList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]skill.Skill, len(names.Skills))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, sum := range names.Skills {
		g.Go(func() error {
			raw, err := c.s.skillGet(gctx, sum.Name)
			if err != nil {
				return fmt.Errorf("skill %q: %w", sum.Name, err)
			}
			if err := json.Unmarshal(raw, &out[i]); err != nil {
				return fmt.Errorf("skill %q: the stored record cannot be read: %w", sum.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen == gen && c.s.hub.live() {
		c.list, c.valid = out, true
	}
	c.mu.Unlock()
	return out, nil
}

// onRegistry is called by the events feed for each registry event.
func (s *Server) onRegistry(ev *events.RegistryEvent) {
	if ev.Kind == events.KindSkill && ev.Op != events.OpWarning {
		s.skills.invalidate()
	}
}

// previewRequest is the body of POST /api/preview (docs/console.md,
// "Assembly preview").
type previewRequest struct {
	// System is an optional leading system message (the runtime's own
	// prompt); Message is the latest user message (the turn).
	System  string `json:"system"`
	Message string `json:"message"`
	// WorkFiles, Tools and Mounts are the request's work_files, tools and
	// mounts (docs/skills.md, skillbus.skillface.assemble).
	WorkFiles []string `json:"work_files"`
	Tools     []string `json:"tools"`
	Mounts    []string `json:"mounts"`
	// Budgets overrides the default budgets (0 = default).
	Budgets budgets `json:"budgets"`
}

// apiPreview is POST /api/preview: what skillface would answer to this
// turn as the first of a new session, and why each skill did or did not
// activate. It assembles in this process with pkg/skillface, on the skills
// the registry holds, in a session kept in memory for this request only:
// no session state is written anywhere.
func (s *Server) apiPreview(w http.ResponseWriter, r *http.Request) {
	var req previewRequest
	if !readJSON(w, r, &req) {
		return
	}
	skills, err := s.skills.all(r.Context())
	if err != nil {
		writeFail(w, r, err)
		return
	}
	out, err := preview(r.Context(), skills, &req)
	if err != nil {
		writeFail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// clean trims and drops empty items of a list typed into a form.
func clean(list []string) []string {
	out := list[:0:0]
	for _, v := range list {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

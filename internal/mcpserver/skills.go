package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skill"
)

// Inputs and outputs of the skill tools.
type (
	skillInfoIn struct {
		Name    string `json:"name" jsonschema:"the skill's name, as skill_list shows it"`
		Section string `json:"section,omitempty" jsonschema:"a section title from the skill's table of contents (matched exactly, then as a part of a title; case and spaces ignored); leave out for the whole skill, or its table of contents when it is long"`
	}

	skillListOut struct {
		Skills []skillItem `json:"skills"`
	}

	skillItem struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		WhenToUse   string `json:"when_to_use,omitempty"`
	}
)

// skillTools returns skill_list and skill_info.
func (s *Server) skillTools() []toolDef {
	return []toolDef{
		defineTool(s, mcp.Tool{Name: "skill_list", Title: "List skills",
			Description: "List the skills: reusable instructions for tasks, by name and description (and when to use each). Use it at the start of a task to find a skill that fits, then read it with skill_info.\n\nExample: {}",
		}, true, []string{events.RegistrySkillListSubject}, s.skillList),
		defineTool(s, mcp.Tool{Name: "skill_info", Title: "Read a skill",
			Description: "Read a skill. Without section: the whole text of a short skill, or the first 30 lines and a table of contents (section titles with their line counts) of a long one. With section: that section and all its subsections. Use it to follow a skill from skill_list, reading a long one section by section as the task needs.\n\nExample: {\"name\": \"jetstream-incident\", \"section\": \"consumer state\"}",
		}, true, []string{events.RegistrySkillInfoSubject}, s.skillInfo),
	}
}

// modelTools returns every model-facing tool.
func (s *Server) modelTools() []toolDef {
	return append(append(s.skillTools(), s.seqTools()...), s.scheduleTools()...)
}

func (s *Server) skillList(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (skillListOut, string, error) {
	list, err := s.c.SkillList(ctx)
	if err != nil {
		return skillListOut{}, "", err
	}
	out := skillListOut{Skills: []skillItem{}}
	for _, sk := range list.Skills {
		it := skillItem{Name: sk.Name, Description: sk.Description}
		if rec := s.cat.get(sk.Name); rec != nil {
			it.WhenToUse = rec.WhenToUse
		}
		out.Skills = append(out.Skills, it)
	}
	if len(out.Skills) == 0 {
		return out, "No skills are stored.", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d skill(s):\n", len(out.Skills))
	for _, it := range out.Skills {
		fmt.Fprintf(&b, "- %s: %s", it.Name, oneLine(it.Description, 500))
		if it.WhenToUse != "" {
			fmt.Fprintf(&b, " When to use: %s", oneLine(it.WhenToUse, 300))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nRead one with skill_info {\"name\": NAME}.")
	return out, b.String(), nil
}

func (s *Server) skillInfo(ctx context.Context, _ *mcp.CallToolRequest, in skillInfoIn) (events.SkillInfo, string, error) {
	info, err := s.c.SkillInfo(ctx, in.Name, in.Section)
	if err != nil {
		return events.SkillInfo{}, "", err
	}
	return *info, info.Text, nil
}

// catalog keeps the skills as MCP prompts (one per user-invocable skill)
// and resources (skill://NAME; skill://NAME/SECTION through a template),
// following the registry: its skill events ask for a re-read, and a full
// re-read runs every Config.Resync.
type catalog struct {
	s    *Server
	kick chan struct{} // a re-read is wanted
	// mu guards skills.
	mu     sync.Mutex
	skills map[string]*catalogEntry
}

// catalogEntry is one skill as served: its record and what was
// registered for it (to register again only what changed).
type catalogEntry struct {
	rec      skill.Skill
	prompt   string // JSON of the registered prompt; "" when none
	resource string // JSON of the registered resource
}

// SkillURIScheme is the URI scheme of the skill resources: skill://NAME is
// a skill's whole text, skill://NAME/SECTION one section of it with its
// subsections (SECTION percent-encoded, as skill_info matches it).
const SkillURIScheme = "skill"

// sectionTemplate is the resource template of one section.
const sectionTemplate = SkillURIScheme + "://{name}/{section}"

func (c *catalog) init(s *Server) {
	c.s = s
	c.kick = make(chan struct{}, 1)
	c.skills = map[string]*catalogEntry{}
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "skill-section", Title: "A section of a skill", URITemplate: sectionTemplate, MIMEType: "text/markdown",
		Description: "One section of a skill and all its subsections, as skill_info gives it: skill://NAME/SECTION with the section title percent-encoded (skill://jetstream-incident/consumer%20lag). skill://NAME is the whole skill.",
	}, c.readSection)
}

// get returns the record of a skill being served, or nil.
func (c *catalog) get(name string) *skill.Skill {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.skills[name]; e != nil {
		r := e.rec
		return &r
	}
	return nil
}

// start subscribes to the registry's skill events, reads the skills once
// (bounded by the request timeout) and keeps following them.
func (c *catalog) start(ctx context.Context, wg *sync.WaitGroup) error {
	sub, err := c.s.nc.Subscribe("events.registry."+events.KindSkill+".>", func(*nats.Msg) { c.wake() })
	if err != nil {
		return fmt.Errorf("mcpserver: follow the registry's events: %w", err)
	}
	if err := c.sync(ctx); err != nil {
		c.s.log.Warn("cannot read the skills yet; prompts and resources follow when the registry answers", "err", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() { _ = sub.Unsubscribe() }()
		tick := time.NewTicker(c.s.cfg.Resync)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.kick:
				// Let a burst of edits settle (an editor's save, a
				// rescan writing many keys) before reading them.
				select {
				case <-ctx.Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			case <-tick.C:
			}
			if err := c.sync(ctx); err != nil && ctx.Err() == nil {
				c.s.log.Warn("cannot read the skills", "err", err)
			}
		}
	}()
	return nil
}

func (c *catalog) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// sync reads every skill from the registry and registers, replaces or
// removes prompts and resources so they match; a skill whose text changed
// is announced to the sessions subscribed to its resource.
func (c *catalog) sync(ctx context.Context) error {
	list, err := c.s.c.SkillList(ctx)
	if err != nil {
		return err
	}
	recs := make(map[string]skill.Skill, len(list.Skills))
	for _, sum := range list.Skills {
		raw, err := c.s.c.SkillGet(ctx, sum.Name)
		if errors.Is(err, client.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return err
		}
		var rec skill.Skill
		if err := json.Unmarshal(raw, &rec); err != nil {
			c.s.log.Warn("stored skill cannot be read", "skill", sum.Name, "err", err)
			continue
		}
		recs[sum.Name] = rec
	}
	c.mu.Lock()
	var goneRes, gonePrompts, updated []string
	for name, e := range c.skills {
		if _, ok := recs[name]; !ok {
			goneRes = append(goneRes, skillURI(name, ""))
			if e.prompt != "" {
				gonePrompts = append(gonePrompts, name)
			}
			delete(c.skills, name)
		}
	}
	if len(goneRes) > 0 {
		c.s.mcp.RemoveResources(goneRes...)
	}
	if len(gonePrompts) > 0 {
		c.s.mcp.RemovePrompts(gonePrompts...)
	}
	for _, name := range sortedKeys(recs) {
		rec := recs[name]
		e := c.skills[name]
		if e == nil {
			e = &catalogEntry{}
			c.skills[name] = e
		} else if e.rec.Fingerprint != rec.Fingerprint {
			updated = append(updated, skillURI(name, ""))
		}
		e.rec = rec
		res := skillResource(&rec)
		if key := compactJSON(res); key != e.resource {
			e.resource = key
			c.s.mcp.AddResource(res, c.readSkill)
		}
		p := skillPrompt(&rec)
		key := ""
		if p != nil {
			key = compactJSON(p)
		}
		switch {
		case key == e.prompt:
		case p == nil:
			c.s.mcp.RemovePrompts(name)
		default:
			c.s.mcp.AddPrompt(p, c.getPrompt)
		}
		e.prompt = key
	}
	c.mu.Unlock()
	for _, uri := range updated {
		_ = c.s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
	return nil
}

// skillURI returns skill://NAME or skill://NAME/SECTION.
func skillURI(name, section string) string {
	u := SkillURIScheme + "://" + name
	if section != "" {
		u += "/" + url.PathEscape(section)
	}
	return u
}

func skillResource(rec *skill.Skill) *mcp.Resource {
	desc := rec.Description
	if rec.WhenToUse != "" {
		desc += " When to use: " + rec.WhenToUse
	}
	return &mcp.Resource{URI: skillURI(rec.Name, ""), Name: rec.Name, Title: rec.Name, Description: desc,
		MIMEType: "text/markdown", Size: int64(len(rec.Body))}
}

// readSkill serves skill://NAME: the skill's whole text.
func (c *catalog) readSkill(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	name := strings.TrimPrefix(req.Params.URI, SkillURIScheme+"://")
	rec := c.get(name)
	if rec == nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: rec.Body}}}, nil
}

// readSection serves skill://NAME/SECTION through the registry's
// skill.info, as skill_info gives it.
func (c *catalog) readSection(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	rest := strings.TrimPrefix(req.Params.URI, SkillURIScheme+"://")
	name, escaped, ok := strings.Cut(rest, "/")
	section, err := url.PathUnescape(escaped)
	if !ok || name == "" || section == "" || err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	info, err := c.s.c.SkillInfo(ctx, name, section)
	if errors.Is(err, client.ErrNotFound) {
		return nil, invalidParams(fmt.Sprintf("%s: %v", req.Params.URI, c.s.describeError("skill_info", err)))
	}
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: info.Text}}}, nil
}

// maxSectionArgs bounds the section titles a prompt argument lists.
const maxSectionArgs = 30

// skillPrompt returns the prompt of a user-invocable skill (invocation
// both or user-only; docs/skills.md), nil for a model-only one. Its
// arguments come from the skill's fields: task (what to do with it), and
// section when the skill has sections (their titles listed).
func skillPrompt(rec *skill.Skill) *mcp.Prompt {
	if rec.Invocation == skill.InvocationModelOnly {
		return nil
	}
	desc := rec.Description
	if rec.WhenToUse != "" {
		desc += " When to use: " + rec.WhenToUse
	}
	p := &mcp.Prompt{Name: rec.Name, Title: rec.Name, Description: desc, Arguments: []*mcp.PromptArgument{{
		Name: "task", Title: "Task", Description: "what you want done with this skill (optional; added after the skill's instructions)",
	}}}
	if titles := sectionTitles(rec); len(titles) > 1 {
		d := "only this section of the skill and its subsections, instead of the whole skill (optional): "
		if len(titles) > maxSectionArgs {
			d += strings.Join(titles[:maxSectionArgs], "; ") + fmt.Sprintf("; and %d more", len(titles)-maxSectionArgs)
		} else {
			d += strings.Join(titles, "; ")
		}
		p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: "section", Title: "Section", Description: d})
	}
	return p
}

func sectionTitles(rec *skill.Skill) []string {
	var out []string
	for _, sec := range rec.Sections {
		if sec.Title != "" && !slices.Contains(out, sec.Title) {
			out = append(out, sec.Title)
		}
	}
	return out
}

// getPrompt renders a skill's prompt: one user message with the skill's
// instructions (the whole body, or the section asked for; a body over
// events.MaxSkillInfoBytes is given as skill_info gives it: head and
// table of contents), the tools it allows or forbids, then the task.
func (c *catalog) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	rec := c.get(req.Params.Name)
	if rec == nil {
		return nil, invalidParams(fmt.Sprintf("no skill %q: the skill was removed; list the prompts again", req.Params.Name))
	}
	var unknown []string
	for k := range req.Params.Arguments {
		if k != "task" && k != "section" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, invalidParams(fmt.Sprintf("prompt %q: unknown argument(s) %s; it takes task and section", rec.Name, strings.Join(unknown, ", ")))
	}
	body := rec.Body
	section := req.Params.Arguments["section"]
	if section != "" || len(body) > events.MaxSkillInfoBytes {
		info, err := c.s.c.SkillInfo(ctx, rec.Name, section)
		if errors.Is(err, client.ErrNotFound) {
			return nil, invalidParams(c.s.describeError("skill_info", err))
		}
		if err != nil {
			return nil, errors.New(c.s.describeError("skill_info", err))
		}
		body = info.Text
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Use the skill %q", rec.Name)
	if section != "" {
		fmt.Fprintf(&b, " (section %q)", section)
	}
	b.WriteString(". Its instructions:\n\n")
	b.WriteString(strings.TrimRight(body, "\n"))
	b.WriteString("\n")
	if len(rec.AllowedTools) > 0 {
		fmt.Fprintf(&b, "\nWhile you follow this skill, use only these tools: %s.\n", strings.Join(rec.AllowedTools, ", "))
	}
	if len(rec.DisallowedTools) > 0 {
		fmt.Fprintf(&b, "\nWhile you follow this skill, do not use these tools: %s.\n", strings.Join(rec.DisallowedTools, ", "))
	}
	if task := strings.TrimSpace(req.Params.Arguments["task"]); task != "" {
		fmt.Fprintf(&b, "\nTask: %s\n", task)
	}
	return &mcp.GetPromptResult{Description: rec.Description, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}}}, nil
}

// invalidParams is a JSON-RPC "invalid params" error (-32602) with msg: the
// code MCP gives an unknown prompt or resource, so that a client tells a
// wrong name or section (fix the request) from a failure of the server.
func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

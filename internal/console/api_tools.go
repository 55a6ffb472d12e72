package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/tool"
)

// toolView is one tool on the tools page: discovered through NATS micro
// ($SRV.INFO), as `skillbus tools --json` lists it, with its providers.
type toolView struct {
	Tool        string          `json:"tool"`
	Subject     string          `json:"subject"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	// Disagree is true when instances serving the tool differ in
	// configuration or schema (calls go to either at random).
	Disagree bool `json:"disagree,omitempty"`
	// CallRefused says why the console may not call the tool (its
	// credentials do not allow publishing on its subject); "" when it
	// may, or when the credentials are not known (then a call is tried,
	// and a refusal of the server answers at once).
	CallRefused string          `json:"call_refused,omitempty"`
	Providers   []providerGroup `json:"providers"`
}

// providerGroup is one provider (micro service name) of a tool at one
// place, with the instances that answered discovery there.
type providerGroup struct {
	Provider string `json:"provider"`
	Version  string `json:"version"`
	// Site is where the instances run: the provider's site
	// (tool.MetadataSite), else its NATS server's name (an edge site's
	// leaf server, docs/edge.md); "" when it publishes neither.
	Site      string   `json:"site,omitempty"`
	Instances []string `json:"instances"`
	Config    string   `json:"config,omitempty"`
}

// apiTools is GET /api/tools: tool discovery, as `skillbus tools`.
func (s *Server) apiTools(w http.ResponseWriter, r *http.Request) {
	eps, err := tool.Discover(r.Context(), s.nc, s.cfg.DiscoverWait)
	if err != nil {
		writeFail(w, r, err)
		return
	}
	conflicts := tool.Conflicts(eps)
	disagree := map[string]bool{}
	var warnings []string
	for _, c := range conflicts {
		disagree[c.Tool] = true
		warnings = append(warnings, c.String())
	}
	byTool := map[string]*toolView{}
	var order []string
	for _, e := range eps { // sorted by tool, provider, instance
		v, ok := byTool[e.Tool]
		if !ok {
			v = &toolView{Tool: e.Tool, Subject: e.Subject, Description: e.Description, Schema: e.Schema, Disagree: disagree[e.Tool], CallRefused: s.toolCallRefused(e.Tool)}
			byTool[e.Tool] = v
			order = append(order, e.Tool)
		}
		site := e.Site
		if site == "" {
			site = e.Server
		}
		i := slices.IndexFunc(v.Providers, func(g providerGroup) bool {
			return g.Provider == e.Provider && g.Version == e.Version && g.Site == site
		})
		if i < 0 {
			i = len(v.Providers)
			v.Providers = append(v.Providers, providerGroup{Provider: e.Provider, Version: e.Version, Site: site, Config: e.Config})
		}
		v.Providers[i].Instances = append(v.Providers[i].Instances, e.ProviderID)
	}
	sort.Strings(order)
	out := make([]*toolView, 0, len(order))
	callNote := ""
	for _, t := range order {
		out = append(out, byTool[t])
		if callNote == "" {
			callNote = byTool[t].CallRefused
		}
	}
	// call_note: the first tool's refusal, for the Tools page (the role
	// allows all tools or none).
	writeJSON(w, http.StatusOK, map[string]any{"tools": out, "warnings": warnings, "call_note": callNote, "role": s.access.role})
}

// toolCall is the body of POST /api/tools/{name}/call.
type toolCall struct {
	// Args is the JSON object sent to the tool.
	Args json.RawMessage `json:"args"`
	// TimeoutMS bounds the call (default 30 s, at most 10 minutes).
	TimeoutMS int `json:"timeout_ms"`
}

// apiToolCall is POST /api/tools/{name}/call: one call of tool.<name>
// through pkg/tool (the client the seqworker calls tools with). The answer
// is {"result": JSON, "ms": duration}; a tool's error answers with its
// code and message. A call the console's credentials do not allow is
// answered 403 at once: without trying when the credentials are known
// (Config.Creds), else as soon as the server refuses the publish.
func (s *Server) apiToolCall(w http.ResponseWriter, r *http.Request) {
	var req toolCall
	if !readJSON(w, r, &req) {
		return
	}
	name := r.PathValue("name")
	if why := s.toolCallRefused(name); why != "" {
		writeErr(w, http.StatusForbidden, "403", why)
		return
	}
	wctx, done := s.access.watch.Context(r.Context(), events.ToolPrefix+name)
	defer done()
	r = r.WithContext(wctx)
	args := bytes.TrimSpace(req.Args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' {
		writeErr(w, http.StatusBadRequest, "400", "the arguments must be a JSON object, such as {\"path\": \".\"}")
		return
	}
	timeout := 30 * time.Second
	if req.TimeoutMS > 0 {
		timeout = min(time.Duration(req.TimeoutMS)*time.Millisecond, 10*time.Minute)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	start := time.Now()
	res, err := s.tc.Call(ctx, name, args)
	if err != nil {
		if errors.Is(err, tool.ErrBadName) || errors.Is(err, tool.ErrBadArgs) {
			writeErr(w, http.StatusBadRequest, "400", err.Error())
			return
		}
		writeFail(w, r, err)
		return
	}
	if len(res) == 0 {
		res = json.RawMessage("null")
	}
	writeJSON(w, http.StatusOK, map[string]any{"result": res, "ms": time.Since(start).Milliseconds()})
}

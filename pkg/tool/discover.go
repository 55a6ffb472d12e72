package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/pkg/events"
)

// Service metadata keys of a tool provider (ServerConfig.Metadata).
const (
	// MetadataFingerprint holds a hash of the provider's configuration
	// (Fingerprint): instances of one tool with different fingerprints
	// answer differently, and calls go to either at random.
	MetadataFingerprint = "fingerprint"
	// MetadataConfig holds the configuration in readable form ("root=/srv
	// allow-cmd=git"), for the warning that names what differs.
	MetadataConfig = "config"
	// MetadataSite holds ServerConfig.Site: the edge site the provider
	// runs at (docs/edge.md).
	MetadataSite = "site"
	// MetadataServer holds the name of the NATS server the provider's
	// connection was on when it started serving: at an edge site, the
	// site's leaf server.
	MetadataServer = "server"
)

// Fingerprint returns the fingerprint of a configuration given as
// readable text: "sha256:" and the first 16 hex digits of its SHA-256.
func Fingerprint(config string) string {
	sum := sha256.Sum256([]byte(config))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// Endpoint is one tool served by one provider instance, as NATS micro
// discovery reports it.
type Endpoint struct {
	// Tool is the tool's name (the subject without "tool.").
	Tool    string `json:"tool"`
	Subject string `json:"subject"`
	// Provider, ProviderID and Version identify the micro service
	// instance serving it.
	Provider   string `json:"provider"`
	ProviderID string `json:"provider_id"`
	Version    string `json:"version"`
	// Description and Schema are the endpoint metadata.
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	// Fingerprint and Config are the provider's MetadataFingerprint and
	// MetadataConfig ("" when it publishes none).
	Fingerprint string `json:"fingerprint,omitempty"`
	Config      string `json:"config,omitempty"`
	// Site and Server are where the instance runs: its MetadataSite and
	// MetadataServer ("" when it publishes none).
	Site   string `json:"site,omitempty"`
	Server string `json:"server,omitempty"`
}

// Discover asks every NATS micro service for its info ($SRV.INFO) and
// returns the endpoints on tool.> of the instances that answer within wait,
// sorted by tool, provider and instance. Errors: the connection's, or
// ctx's when it ends first.
func Discover(ctx context.Context, nc *nats.Conn, wait time.Duration) ([]Endpoint, error) {
	inbox := nc.NewRespInbox()
	ch := make(chan *nats.Msg, 256)
	sub, err := nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$SRV.INFO", inbox, nil); err != nil {
		return nil, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var out []Endpoint
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			sort.Slice(out, func(i, j int) bool {
				a, b := out[i], out[j]
				if a.Tool != b.Tool {
					return a.Tool < b.Tool
				}
				if a.Provider != b.Provider {
					return a.Provider < b.Provider
				}
				return a.ProviderID < b.ProviderID
			})
			return out, nil
		case m := <-ch:
			var info micro.Info
			if json.Unmarshal(m.Data, &info) != nil {
				continue
			}
			for _, ep := range info.Endpoints {
				if !strings.HasPrefix(ep.Subject, events.ToolPrefix) {
					continue
				}
				e := Endpoint{
					Tool: strings.TrimPrefix(ep.Subject, events.ToolPrefix), Subject: ep.Subject,
					Provider: info.Name, ProviderID: info.ID, Version: info.Version,
					Description: ep.Metadata["description"],
					Fingerprint: info.Metadata[MetadataFingerprint], Config: info.Metadata[MetadataConfig],
					Site: info.Metadata[MetadataSite], Server: info.Metadata[MetadataServer],
				}
				if s := ep.Metadata["schema"]; s != "" && json.Valid([]byte(s)) {
					e.Schema = json.RawMessage(s)
				}
				out = append(out, e)
			}
		}
	}
}

// Conflict is a tool served by instances that disagree.
type Conflict struct {
	Tool string
	// Instances are one endpoint per distinct configuration (fingerprint
	// and schema), sorted.
	Instances []Endpoint
}

// String says what differs: `tool fs.list is served by instances that
// disagree: skillbus-builtin 0.1.0 (root=/a) and skillbus-builtin 0.1.0
// (root=/b): calls go to either at random`.
func (c Conflict) String() string {
	parts := make([]string, len(c.Instances))
	for i, e := range c.Instances {
		cfg := e.Config
		if cfg == "" {
			cfg = e.Fingerprint
		}
		if cfg == "" {
			cfg = "no configuration published"
		}
		parts[i] = fmt.Sprintf("%s %s (%s)", e.Provider, e.Version, cfg)
	}
	return fmt.Sprintf("tool %s is served by instances that disagree: %s: calls go to either at random; serve them with the same configuration, or under different names (--prefix)", c.Tool, strings.Join(parts, " and "))
}

// Conflicts returns the tools of eps whose instances disagree: different
// fingerprints (an instance with none counts as one more), or different
// argument schemas. Sorted by tool.
func Conflicts(eps []Endpoint) []Conflict {
	byTool := map[string][]Endpoint{}
	for _, e := range eps {
		byTool[e.Tool] = append(byTool[e.Tool], e)
	}
	var out []Conflict
	for name, list := range byTool {
		seen := map[string]bool{}
		var distinct []Endpoint
		for _, e := range list {
			key := e.Fingerprint + "\x00" + string(e.Schema)
			if !seen[key] {
				seen[key] = true
				distinct = append(distinct, e)
			}
		}
		if len(distinct) > 1 {
			out = append(out, Conflict{Tool: name, Instances: distinct})
		}
	}
	slices.SortFunc(out, func(a, b Conflict) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// Conflicts discovers the tools on the bus (Discover, answers collected
// for wait) and returns the conflicts that involve this server's tools: a
// provider checks at start that the instances it joins agree with it.
func (s *Server) Conflicts(ctx context.Context, wait time.Duration) ([]Conflict, error) {
	eps, err := Discover(ctx, s.nc, wait)
	if err != nil {
		return nil, err
	}
	id := s.svc.Info().ID
	var out []Conflict
	for _, c := range Conflicts(eps) {
		mine := false
		for _, e := range eps {
			if e.Tool == c.Tool && e.ProviderID == id {
				mine = true
			}
		}
		if mine {
			out = append(out, c)
		}
	}
	return out, nil
}

package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// requestTimeout bounds one request to a skillbus service, as the CLI's.
const requestTimeout = 15 * time.Second

// The registry's endpoints, requested as `skillbus skills` and `skillbus
// seqs` request them (the same subjects, bodies and errors).

func (s *Server) skillList(ctx context.Context) (*registry.SkillList, error) {
	var out registry.SkillList
	return &out, s.request(ctx, registry.SubjectSkillList, struct{}{}, &out)
}

// skillGet returns a skill's stored record (pkg/skill.Skill JSON).
func (s *Server) skillGet(ctx context.Context, name string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, s.request(ctx, registry.SubjectSkillGet, registry.NameRequest{Name: name}, &out)
}

func (s *Server) skillInfo(ctx context.Context, name, section string) (*registry.SkillInfo, error) {
	var out registry.SkillInfo
	return &out, s.request(ctx, registry.SubjectSkillInfo, registry.NameRequest{Name: name, Section: section}, &out)
}

func (s *Server) seqList(ctx context.Context) (*registry.SeqList, error) {
	var out registry.SeqList
	return &out, s.request(ctx, registry.SubjectSeqList, struct{}{}, &out)
}

// seqGet returns a stored sequence's canonical AST JSON.
func (s *Server) seqGet(ctx context.Context, name string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, s.request(ctx, registry.SubjectSeqGet, registry.NameRequest{Name: name}, &out)
}

// request sends req as JSON to subject and decodes the reply into resp (a
// *json.RawMessage keeps it as it is). Errors: *toolcall.Error for an
// error reply (the service's code and message); for no responders and
// timeouts, the sentences the CLI prints.
func (s *Server) request(ctx context.Context, subject string, req, resp any) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	msg, err := events.Request(ctx, s.nc, &nats.Msg{Subject: subject, Data: data})
	if err != nil {
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return fmt.Errorf("no service answers on %s: %s: %w", subject, whoServes(subject), err)
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
			return fmt.Errorf("no reply on %s within %v: the service is busy or stuck; check its logs: %w", subject, requestTimeout, context.DeadlineExceeded)
		}
		return err
	}
	if code := msg.Header.Get(micro.ErrorCodeHeader); code != "" {
		text := msg.Header.Get(micro.ErrorHeader)
		var body struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(msg.Data, &body) == nil && body.Error != "" {
			text = body.Error
		}
		return &toolcall.Error{Code: code, Description: text}
	}
	if raw, ok := resp.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], msg.Data...)
		return nil
	}
	return json.Unmarshal(msg.Data, resp)
}

// whoServes says which process serves a subject, for "no responders"
// (the CLI's wording).
func whoServes(subject string) string {
	switch {
	case strings.HasPrefix(subject, events.RegistryPrefix):
		return "the registry is not running; start `skillbus dev` or `registry` against this NATS"
	case strings.HasPrefix(subject, events.SeqPrefix):
		return "no seqworker is running; start `skillbus dev` or `seqworker` against this NATS"
	case strings.HasPrefix(subject, events.SkillfacePrefix):
		return "skillface is not running; start `skillbus dev` or `skillface` against this NATS"
	case strings.HasPrefix(subject, events.ToolPrefix):
		return "no provider serves this tool; list the tools with `skillbus tools`"
	}
	return "nobody listens"
}

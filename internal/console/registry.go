package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// requestTimeout bounds one request to a skillbus service, as the CLI's.
const requestTimeout = 15 * time.Second

// The registry's endpoints, through pkg/client as `skillbus skills` and
// `skillbus seqs` call them; an error reads as the CLI prints it
// (registryErr).

func (s *Server) skillList(ctx context.Context) (*events.SkillList, error) {
	out, err := s.runs.SkillList(ctx)
	return out, registryErr(err)
}

// skillGet returns a skill's stored record (pkg/skill.Skill JSON).
func (s *Server) skillGet(ctx context.Context, name string) (json.RawMessage, error) {
	out, err := s.runs.SkillGet(ctx, name)
	return out, registryErr(err)
}

func (s *Server) skillInfo(ctx context.Context, name, section string) (*events.SkillInfo, error) {
	out, err := s.runs.SkillInfo(ctx, name, section)
	return out, registryErr(err)
}

func (s *Server) seqList(ctx context.Context) (*events.SequenceList, error) {
	out, err := s.runs.SeqList(ctx)
	return out, registryErr(err)
}

// seqGet returns a stored sequence's canonical AST JSON.
func (s *Server) seqGet(ctx context.Context, name string) (json.RawMessage, error) {
	out, err := s.runs.SeqGet(ctx, name)
	return out, registryErr(err)
}

// registryErr is a registry error as the CLI shows it: the registry's own
// message (a *toolcall.Error, keeping its code), or, when no registry
// answers, what to start.
func registryErr(err error) error {
	if err == nil {
		return nil
	}
	var te *toolcall.Error
	if errors.As(err, &te) {
		return te
	}
	if errors.Is(err, client.ErrUnavailable) {
		return fmt.Errorf("%w: %s", err, whoServes(events.RegistryPrefix))
	}
	return err
}

// seqErr is a seqworker error as the CLI shows it: the client's error,
// and what to start when no seqworker answers.
func seqErr(err error) error {
	var te *toolcall.Error
	if errors.Is(err, client.ErrUnavailable) && !errors.As(err, &te) {
		return fmt.Errorf("%w: %s", err, whoServes(events.SeqPrefix))
	}
	return err
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

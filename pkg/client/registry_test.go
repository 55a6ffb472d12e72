package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/seq"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// withRegistry starts an embedded server and a registry loading files
// (path → content) from a temporary directory, and returns a client on a
// connection of its own.
func withRegistry(t *testing.T, files map[string]string) (*client.Client, *nats.Conn) {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := natsserver.StartTB(t, natsserver.Options{})
	rnc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rnc.Close)
	reg, err := registry.New(rnc, registry.Config{Dir: dir, Resync: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = reg.Stop(ctx)
	})
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return c, nc
}

const longSkill = `---
name: handbook
description: A long handbook, read section by section.
---
# Handbook

## Install

Run the installer.

### Offline install

Copy the bundle first.

## Usage

Call it.
`

const fileSeq = `name: from-file
groups:
  - name: file-step
    tools: [{tool: t}]
`

func TestRegistryMethods(t *testing.T) {
	c, _ := withRegistry(t, map[string]string{
		"handbook/SKILL.md":    longSkill,
		"flows/f.seq.yaml":     fileSeq,
		"other/short/SKILL.md": "---\nname: short\ndescription: a short skill\n---\n# Short\n",
	})
	ctx := context.Background()

	skills, err := c.SkillList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range skills.Skills {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "handbook,short" {
		t.Errorf("SkillList names = %q; want %q", got, "handbook,short")
	}

	raw, err := c.SkillGet(ctx, "handbook")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Name, Description, Body string }
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Description != "A long handbook, read section by section." || !strings.Contains(rec.Body, "Offline install") {
		t.Errorf("SkillGet(handbook) = %+v, %v; want the stored record with its body", rec, err)
	}

	info, err := c.SkillInfo(ctx, "handbook", "install")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info.Text, "Run the installer") || !strings.Contains(info.Text, "Copy the bundle") || strings.Contains(info.Text, "Call it") {
		t.Errorf("SkillInfo(handbook, install).Text = %q; want the section and its subsection only", info.Text)
	}
	_, err = c.SkillInfo(ctx, "handbook", "deploy")
	var te *toolcall.Error
	if !errors.Is(err, client.ErrNotFound) || !errors.As(err, &te) || te.Code != "404" || !strings.Contains(te.Description, "Install") {
		t.Errorf("SkillInfo(handbook, deploy) = %v; want ErrNotFound with a 404 *toolcall.Error listing the sections", err)
	}
	if _, err := c.SkillGet(ctx, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("SkillGet(nope) = %v; want ErrNotFound", err)
	}
	if _, err := c.SkillGet(ctx, ""); !errors.Is(err, client.ErrBadRequest) {
		t.Errorf(`SkillGet("") = %v; want ErrBadRequest`, err)
	}

	created, err := c.SeqCreate(ctx, []byte(`{"name":"made","groups":[{"name":"made-step","in":{"who":"string"},"tools":"{\"tool\":\"greet\",\"args\":{\"name\":\"$args.who\"}};"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if created.Name != "made" || created.Replaced || created.Signature["who"] != "string" {
		t.Errorf("SeqCreate = %+v; want made, not replaced, signature who: string", created)
	}
	list, err := c.SeqList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sequences) != 2 || list.Sequences[0].Name != "from-file" || list.Sequences[1].Name != "made" || list.Sequences[1].Groups[0] != "made-step" {
		t.Errorf("SeqList = %+v; want from-file and made", list.Sequences)
	}
	ast, err := c.SeqGet(ctx, "made")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := seq.Decode(ast); err != nil || s.Groups[0].Tools[0].Tool != "greet" {
		t.Errorf("SeqGet(made) decodes to %+v, %v; want the stored AST", s, err)
	}

	// Every problem of an invalid sequence, each with where it is.
	_, err = c.SeqCreate(ctx, []byte(`{"name":"bad","groups":[{"name":"g","timeout":"soon","on_error":"sometimes","tools":"{\"tool\":\"t\"};"}]}`))
	probs := client.Problems(err)
	if !errors.Is(err, client.ErrBadRequest) || len(probs) < 2 {
		t.Fatalf("SeqCreate(invalid) = %v with problems %+v; want ErrBadRequest with at least 2 problems", err, probs)
	}
	joined := ""
	for _, p := range probs {
		joined += p.String() + "\n"
	}
	for _, want := range []string{"timeout", "on_error", `group 1 "g"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems %q do not mention %q", joined, want)
		}
	}
	if _, err := c.SeqCreate(ctx, []byte(`{"name":"other","groups":[{"name":"file-step","tools":"{\"tool\":\"t\"};"}]}`)); !errors.Is(err, client.ErrConflict) || client.Problems(err) != nil {
		t.Errorf("SeqCreate(group clash) = %v; want ErrConflict without problems", err)
	}

	if _, err := c.SeqDelete(ctx, "from-file"); !errors.Is(err, client.ErrConflict) {
		t.Errorf("SeqDelete(from-file) = %v; want ErrConflict (defined by a file)", err)
	}
	del, err := c.SeqDelete(ctx, "made")
	if err != nil || !del.Deleted {
		t.Errorf("SeqDelete(made) = %+v, %v; want deleted", del, err)
	}
	if _, err := c.SeqGet(ctx, "made"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("SeqGet(made) after delete = %v; want ErrNotFound", err)
	}
}

func TestRegistryUnavailable(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, _ := client.New(nc)
	_, err = c.SkillList(context.Background())
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "no registry answers") {
		t.Errorf("SkillList with no registry = %v; want ErrUnavailable saying no registry answers", err)
	}
}

// TestRegistryNoReply: a registry that takes the request but never answers
// is said in words — who, on which subject, how long was waited — not as
// "context deadline exceeded".
func TestRegistryNoReply(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(registry.SubjectSkillList) // takes it, answers nothing
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	c, _ := client.New(nc, client.WithTimeout(300*time.Millisecond))
	_, err = c.SkillList(context.Background())
	want := "the registry did not answer on " + registry.SubjectSkillList + " within 300ms: it is busy or stuck (check its logs), or the request was lost in a reconnect; try again"
	if !errors.Is(err, client.ErrUnavailable) || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "deadline") {
		t.Errorf("SkillList with a silent registry = %v; want ErrUnavailable ending %q", err, want)
	}
}

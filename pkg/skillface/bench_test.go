package skillface_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

// benchSetup returns an Assembler with 1,000 skills (three triggers and one
// paths glob each, bodies of 4 KiB) and a 50-message conversation whose
// latest user message triggers one skill; the session already holds three.
func benchSetup(b *testing.B) (*skillface.Assembler, skillface.Request) {
	b.Helper()
	exts := []string{"go", "py", "ts", "md", "yaml", "rs", "java", "sql"}
	skills := make([]skill.Skill, 1000)
	for i := range skills {
		name := fmt.Sprintf("skill-%04d", i)
		skills[i] = sk(name,
			triggers(fmt.Sprintf("topic%d", i), fmt.Sprintf("area %d", i), fmt.Sprintf("主题%d", i)),
			paths(fmt.Sprintf("svc%d/**/*.%s", i, exts[i%len(exts)])),
			allowed("Read", "Grep", fmt.Sprintf("Bash(tool%d:*)", i)),
			body(strings.Repeat(fmt.Sprintf("Line of skill %d instructions.\n", i), 130), "sha256:"+name),
			func(s *skill.Skill) {
				s.Description = fmt.Sprintf("Handles area %d: builds, tests and reviews the service, with care for its conventions.", i)
			})
	}
	a := newAsm(b, skills)
	msgs := []skillface.Message{{Role: "system", Content: "You are a coding agent working in a monorepo."}}
	for i := range 49 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, skillface.Message{Role: role,
			Content: fmt.Sprintf("Message %d: let us look at the failing test in the payments service and fix it properly.", i)})
	}
	msgs[len(msgs)-1] = skillface.Message{Role: "user",
		Content: "Now please work on topic512 too: the build of that service fails, see the log above and fix it."}
	req := skillface.Request{
		SessionID: "bench", Round: 1, Messages: msgs,
		WorkFiles: []string{"svc8/internal/x/handler.go", "README.md", "svc900/docs/guide.md"},
		Tools:     []string{"Read", "Write", "Grep", "Bash", "WebFetch"},
		Mounts:    []string{"skill-0001"},
	}
	assemble(b, a, req) // the session holds skill-0001, skill-0008, skill-0512 (and renders them once)
	req.Mounts = nil
	return a, req
}

// BenchmarkAssemble measures one Assemble: 1,000 skills, 50 messages, a
// session with three active skills, one re-triggered by the user message.
func BenchmarkAssemble(b *testing.B) {
	a, req := benchSetup(b)
	ctx := context.Background()
	b.ReportAllocs()
	round := int64(1)
	for b.Loop() {
		round++
		req.Round = round
		resp, err := a.Assemble(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.Active) != 3 || len(resp.Messages) != 50+4 {
			b.Fatalf("active %q, %d messages", resp.Active, len(resp.Messages))
		}
	}
}

var sink []skillface.Message

// BenchmarkCopyMessages is the baseline for BenchmarkAssemble: copying the
// same 50-message list with room for the inserted blocks.
func BenchmarkCopyMessages(b *testing.B) {
	_, req := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		out := make([]skillface.Message, 0, len(req.Messages)+5)
		sink = append(out, req.Messages...)
	}
}

// BenchmarkAssembleRestricted measures the restricted fast path.
func BenchmarkAssembleRestricted(b *testing.B) {
	a, req := benchSetup(b)
	req.Restricted = true
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Assemble(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAssembleAfterPutSkill measures a hot reload: one changed skill
// among 1,000, then the Assemble that rebuilds the skill index.
func BenchmarkAssembleAfterPutSkill(b *testing.B) {
	a, req := benchSetup(b)
	ctx := context.Background()
	s := sk("skill-0999", triggers("topic999"))
	b.ReportAllocs()
	round := int64(1)
	for b.Loop() {
		round++
		req.Round = round
		s.Fingerprint = fmt.Sprint("sha256:", round)
		if err := a.PutSkill(s); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Assemble(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

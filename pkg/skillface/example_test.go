package skillface_test

import (
	"context"
	"fmt"

	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/skillface"
)

func ExampleAssembler_Assemble() {
	a, err := skillface.New(skillface.WithSessionBodies(2))
	if err != nil {
		panic(err)
	}
	err = a.PutSkill(skill.Skill{
		Name:         "git-commit",
		Description:  "Write good commit messages.",
		Invocation:   skill.InvocationBoth,
		Context:      skill.ContextInline,
		Triggers:     []string{"commit", "提交"},
		AllowedTools: []string{"Read", "Bash(git commit:*)"},
		Body:         "Use the imperative mood.",
		Fingerprint:  "sha256:1",
	})
	if err != nil {
		panic(err)
	}
	resp, err := a.Assemble(context.Background(), skillface.Request{
		SessionID: "chat-42",
		Round:     1,
		Messages: []skillface.Message{
			{Role: "system", Content: "You are a coding agent."},
			{Role: "user", Content: "请提交我的修改"},
		},
		Tools: []string{"Read", "Write", "Bash"},
	})
	if err != nil {
		panic(err)
	}
	for _, m := range resp.Messages {
		fmt.Printf("%s: %.50q\n", m.Role, m.Content)
	}
	fmt.Println("activated:", resp.Activated)
	fmt.Println("tools:", resp.Tools, resp.ToolLimits)
	// Output:
	// system: "You are a coding agent."
	// system: "Skills available in this session (1), by name. A s"
	// system: "Skill \"git-commit\" is active. Follow its instructi"
	// user: "请提交我的修改"
	// activated: [git-commit]
	// tools: [Read Bash] [{Bash [git commit:*] []}]
}

func ExampleUnknownSkillError() {
	a, _ := skillface.New()
	_, err := a.Assemble(context.Background(), skillface.Request{SessionID: "s", Round: 1, Mounts: []string{"pdf"}})
	fmt.Println(err)
	// Output:
	// skillface: cannot mount unknown skill "pdf": no skill with that name is loaded (list the loaded skills with `skillbus skills`, or check the spelling)
}

package cli

// validateSkillFile loads and validates one SKILL.md or skill.yaml with
// pkg/skill. It returns errors and warnings (Warning: true) with their lines
// and, when valid, a one-line summary. (Owned by the skills work.)
func validateSkillFile(path string) ([]Problem, string) {
	return []Problem{{File: path, Message: "skill validation not implemented yet"}}, ""
}

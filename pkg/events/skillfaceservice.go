package events

// Names of the ServiceSkillface micro service (docs/architecture.md,
// Prompt assembly). The request
// and response bodies are pkg/skillface's Request and Response (JSON).
const (
	// SkillfaceAssembleSubject is the prompt-assembly endpoint (docs/skills.md,
	// prompt assembly): a skillface.Request in, a skillface.Response out.
	SkillfaceAssembleSubject = SkillfacePrefix + ".assemble"
	// SkillfaceInfoSubject is skill_info (docs/skills.md): {"name",
	// "section"?} in, {"name","section","text"} out.
	SkillfaceInfoSubject = SkillfacePrefix + ".info"

	// HeaderSkillsRevision, on a skillface request, holds a SKILLS bucket
	// revision (decimal, as kv.Put returned it): the replica answers only
	// once it has applied the bucket up to that revision, so a request sent
	// right after a skill was written sees it.
	HeaderSkillsRevision = "Skillbus-Skills-Revision"
)

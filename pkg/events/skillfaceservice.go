package events

// Names of the ServiceSkillface micro service beyond those of DESIGN.md §3's
// table (an addition made with the skillface service, issue 7). The request
// and response bodies are pkg/skillface's Request and Response (JSON).
const (
	// SkillfaceAssembleSubject is the prompt-assembly endpoint (DESIGN.md
	// §6): a skillface.Request in, a skillface.Response out.
	SkillfaceAssembleSubject = SkillfacePrefix + ".assemble"
	// SkillfaceInfoSubject is skill_info (DESIGN.md §5): {"name",
	// "section"?} in, {"name","section","text"} out.
	SkillfaceInfoSubject = SkillfacePrefix + ".info"

	// HeaderSkillsRevision, on a skillface request, holds a SKILLS bucket
	// revision (decimal, as kv.Put returned it): the replica answers only
	// once it has applied the bucket up to that revision, so a request sent
	// right after a skill was written sees it.
	HeaderSkillsRevision = "Skillbus-Skills-Revision"
)

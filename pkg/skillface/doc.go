// Package skillface assembles prompts with skills: it lists the loaded skills
// to the model, activates the relevant ones, injects their bodies into the
// message list and narrows the tool surface on the turn in which they activate or trigger again (docs/skills.md).
// It is pure logic with no NATS dependency; cmd/skillface wires it to NATS
// (the SKILLS bucket feeds [Assembler.PutSkill] and [Assembler.DeleteSkill],
// the SKILLFACE_SESSIONS bucket implements [SessionStore]).
//
// # The model
//
// An [Assembler] holds the current skill set and a [SessionStore]. Each model
// call of an agent session sends a [Request]: the conversation as the runtime
// keeps it (without skillface's blocks), the work files, the tool names the
// caller may use and the skills the user mounted. [Assembler.Assemble]
// answers with a [Response]: the same messages with the skill blocks
// inserted, the tool surface for this call, and what was activated,
// truncated or dropped.
//
// Listing. One system message lists every skill, sorted by name: "name:
// description" plus "When to use: …" when the skill has when_to_use.
// Model-only skills are listed by name only; user-only skills are listed with
// a note that only the user can start them. An entry is at most
// [DefaultEntryChars] characters (Unicode code points); a longer one is cut
// and ends with the mark ".truncated". At most [DefaultListingEntries]
// entries are listed; the rest are counted on a final ".truncated:" line.
// Nothing is dropped without the model seeing a mark and a count.
//
// Activation. A model-invocable skill (invocation both or model-only)
// activates when one of its triggers appears in the latest user message, or
// when a work file matches one of its paths; any skill, user-only included,
// activates when it is mounted explicitly. A mount of a skill that is not
// loaded is an [UnknownSkillError]. Mounted skills activate first, in
// request order, then triggered ones by name.
//
// Trigger rule. The message and the trigger are both lower-cased (Unicode
// simple lower case) and every run of white space becomes one space; the
// trigger then matches where it occurs at a word boundary. Word characters
// are letters, digits, combining marks and "_". Scripts written without
// spaces between words — Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer
// and Myanmar — have a word boundary around every character, so a trigger
// such as "部署" matches inside "请帮我部署服务", and "git" matches in
// "用git提交". For other scripts "deploy" matches "Deploy now" and
// "deploy." but not "redeploy" or "deployment". A trigger that starts or
// ends with punctuation ("c++", ".net") has no boundary condition on that
// side.
//
// Paths. Work files are slash-separated paths relative to the workspace root
// (a leading "./" is ignored); a skill's paths are doublestar globs
// (github.com/bmatcuk/doublestar/v4: "**" spans directories).
//
// Injection. After the leading system messages of the conversation come the
// listing and then one system message per active skill, in activation order.
// Active skills are retained across turns in the session state, at most
// [DefaultSessionBodies] per session; a skill that activates when the session
// is full is dropped, counted in the [Response] and named in the listing
// under a ".dropped:" line for as long as the session lasts or until a slot
// frees. A body longer than [DefaultBodyBytes] bytes is cut at a UTF-8
// boundary and followed by a ".truncated:" line. Rendered bodies are cached
// by skill name and fingerprint, so a body renders once per definition. When
// a skill's definition changes (a new fingerprint) the retained skill shows
// the new body in the same slot; when a skill is deleted it drops out of
// every session at the session's next request.
//
// Tool surface. On a call in which at least one skill activates or triggers
// again (mount, trigger or path) and is active, the surface is (the union of
// the allowed-tools of those skills that declare any, or the caller's tools
// when none does) ∩ the caller's tools − the union of their
// disallowed-tools. On every other call the surface is the caller's tools
// unchanged. See [Response.ToolLimits] for patterns such as Bash(git:*).
//
// Tool patterns. A tool pattern is either a tool name or Name(specifier), as
// in Claude Code's permission rules and real SKILL.md allowed-tools lists:
// "Read", "Bash(git add:*)", "Bash(uv run *)", "Read(*)". The name part is
// matched against the caller's plain tool names exactly (case-sensitive), or
// with path.Match syntax when it holds "*", "?" or "[" ("mcp__github__*");
// a name "mcp__server" with no further "__" also matches every tool of that
// MCP server ("mcp__server__…"). The specifier restricts the arguments of a
// call, which a list of tool names cannot express, so:
//   - in allowed-tools, Name(spec) admits the tool Name to the surface; if no
//     active pattern admits Name without a specifier (or with "*"), the
//     specifiers are returned in [ToolLimit.Allow] and the runtime must
//     restrict calls to them;
//   - in disallowed-tools, a bare Name or Name(*) removes the tool from the
//     surface; Name(spec) leaves the tool on the surface and returns spec in
//     [ToolLimit.Deny] for the runtime to refuse.
//
// skillface passes specifiers through exactly as written and never
// interprets them beyond "*".
//
// Restricted sessions (a group chat, a stranger) get their messages back
// unchanged — the same slice, so the same bytes — and the caller's tools, and
// no session state is read or written.
//
// Sessions. The per-session state (active skills with their fingerprints
// and the round each was injected in, the dropped names, the round and time
// of the last write) is a small JSON document in a [SessionStore] read and
// written with compare-and-set on a revision, so any number of replicas
// serve one session without losing an update; a conflict is retried.
// [NewMemoryStore] is the in-memory store; the sessiontest subpackage is the
// conformance suite every store must pass.
//
// Writes. A call that changes nothing but the round is not written: the
// answer to a retry of any call depends only on the active skills and the
// round each was injected in, which did not change, so retries stay
// idempotent. Because a store forgets a session its TTL after the last
// write, a session in use is still written once its last write is a quarter
// of the TTL old; that needs the store to report its TTL
// ([SessionTTLReporter]) — a store that does not is written on every call.
//
// Speed. A call reads its session at once (or earlier, see
// [Assembler.Prefetch]) and meanwhile works the call out on the state this
// Assembler last saw of the session. A call that must write does so with a
// compare-and-set on that state's revision, without waiting for the read; a
// call that writes nothing answers once the read shows the same stored
// bytes. When the guess was wrong the call is worked out again on what was
// read, so the answer is always the one the stored state gives.
package skillface

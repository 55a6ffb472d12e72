package skillface

// Message roles that skillface reads. Other roles ("assistant", "tool", …)
// are passed through untouched.
const (
	RoleSystem = "system" // leading system messages stay first; skill blocks are system messages
	RoleUser   = "user"   // the latest user message is scanned for triggers
)

// Message is one chat message. Content is plain text.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one prompt-assembly request: one model call of one agent
// session (docs/skills.md). It travels as JSON.
type Request struct {
	// SessionID identifies the conversation; the session state is stored
	// under it. Required unless Restricted.
	SessionID string `json:"session_id"`
	// Round is the turn number of this model call in the session, 1 or more,
	// increasing. A request repeated with the same round (a retry) gets the
	// same Activated list as the first time.
	Round int64 `json:"round"`
	// Restricted marks a session that must not see skills (a group chat, a
	// stranger): the messages come back unchanged.
	Restricted bool `json:"restricted,omitempty"`
	// Messages is the conversation as the runtime keeps it, without the
	// blocks skillface inserted on earlier calls.
	Messages []Message `json:"messages"`
	// WorkFiles are the files the agent is working on: slash-separated,
	// relative to the workspace root. Matched against skills' paths.
	WorkFiles []string `json:"work_files,omitempty"`
	// Tools are the tool names the caller may use; the surface is never
	// wider than this.
	Tools []string `json:"tools,omitempty"`
	// Mounts are skill names the user activated explicitly (e.g. a slash
	// command). Every name must be a loaded skill.
	Mounts []string `json:"mounts,omitempty"`
}

// Response is the answer to a Request (docs/skills.md). It travels as JSON.
type Response struct {
	// Messages: the request's messages with the listing and one system
	// message per active skill inserted after the leading system messages.
	Messages []Message `json:"messages"`
	// Tools: the tool surface for this call, in the caller's order.
	Tools []string `json:"tools"`
	// ToolLimits: argument restrictions for tools on the surface that were
	// admitted or limited only through Name(specifier) patterns; sorted by
	// tool. Empty when no pattern with a specifier applies.
	ToolLimits []ToolLimit `json:"tool_limits,omitempty"`
	// Activated: skills whose bodies were injected for the first time in this
	// round, in activation order.
	Activated []string `json:"activated,omitempty"`
	// Triggered: the active skills that activated or triggered again in this
	// call (mount, trigger word or work file); they shape Tools.
	Triggered []string `json:"triggered,omitempty"`
	// Active: every skill whose body is in Messages, in injection order.
	Active []string `json:"active,omitempty"`
	// Dropped: skills that activated in this call but were not injected
	// because the session already holds the maximum number of bodies.
	Dropped []string `json:"dropped,omitempty"`
	// Counts: how much of the listing and of the bodies was cut or left out.
	Counts Counts `json:"counts"`
}

// Counts says what a Response cut or left out; every count is also stated
// in the text the model sees.
type Counts struct {
	// EntriesTruncated: listing entries cut to the entry budget.
	EntriesTruncated int `json:"entries_truncated"`
	// EntriesDropped: skills left out of the listing by the listing budget.
	EntriesDropped int `json:"entries_dropped"`
	// BodiesTruncated: injected bodies cut to the body budget.
	BodiesTruncated int `json:"bodies_truncated"`
	// BodiesDropped: skills that activated in this call but were not
	// injected (the session's body budget is full); len(Response.Dropped).
	BodiesDropped int `json:"bodies_dropped"`
	// SessionOverflow: skills dropped so far in this session and still not
	// injected (named in the listing's ".dropped:" line).
	SessionOverflow int `json:"session_overflow"`
}

// ToolLimit restricts the calls of one tool on the surface. The specifiers
// are copied verbatim from the skills' allowed-tools and disallowed-tools
// ("git add:*" from "Bash(git add:*)"); the runtime enforces them.
type ToolLimit struct {
	// Tool is the caller's tool name.
	Tool string `json:"tool"`
	// Allow: a call must match one of these specifiers (empty = any call).
	Allow []string `json:"allow,omitempty"`
	// Deny: a call matching one of these specifiers must be refused.
	Deny []string `json:"deny,omitempty"`
}

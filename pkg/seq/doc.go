// Package seq is the tool-sequence language of skillbus (docs/sequences.md):
// parse and validate a sequence, derive its signature, encode it
// canonically, and run it against a Caller. It has no NATS dependency; the
// seqworker supplies a Caller that speaks NATS (pkg/tool).
//
// # The model
//
// A sequence is a list of groups. Groups run one after another; the tool
// calls inside a group run in parallel (or in order with parallel: false).
// Data flows through named slots: a call's result is written to an `out`
// slot with `as`, and later groups read run arguments and earlier slots as
// `$args.<key>`, each key declared with a type in the group's `in`:
//
//	name: repo-survey
//	groups:
//	  - name: fetch
//	    in: {repo: string}
//	    out: {meta: object, issues: array<object>}
//	    on_error: retry
//	    retries: 3
//	    tools:
//	      - {tool: github.repo_info, args: {repo: $args.repo}, as: meta}
//	      - {tool: github.issues, args: {repo: $args.repo}, as: issues}
//	  - name: summarize
//	    in: {meta: object, issues: array<object>}
//	    out: {summary: string}
//	    when: $args.issues != null
//	    tools:
//	      - {tool: llm.summarize, args: {docs: [$args.meta, $args.issues]}, as: summary}
//
// A model writes the same thing as JSON, where `tools` is one string of
// JSON objects each followed by `;` (SplitTools splits it):
//
//	{"name": "g", "tools": "{\"tool\":\"a\"};{\"tool\":\"b\",\"as\":\"x\"};"}
//
// # Parsing and validation
//
// ParseJSON, ParseYAML, ParseFile (by extension) and Parse (by first byte)
// return a *Sequence whose defaults are filled in (parallel true, missing
// fail, timeout 60s, on_error abort) and whose Signature lists the run
// arguments: every `in` key that no earlier group's `out` provides. Every
// static rule is checked when the sequence is parsed: field names, names
// (any script, in NFC: CheckName, NormalizeName),
// enums, types, durations, schedules (as the NATS scheduler reads them),
// retries, fallbacks, the dataflow rules and the `when` expressions, which
// are CEL (https://cel.dev) compiled and type-checked against the group's
// `in` types.
//
// A failed parse returns Errors: every problem found, each an *Error that
// names the group (1-based number and name), the tool call, the field and,
// for YAML, the line, and wraps one sentinel (ErrSyntax, ErrUnknownField,
// ErrMissingField, ErrInvalidValue, ErrDataflow, ErrExpression):
//
//	s, err := seq.ParseFile(path, data)
//	var errs seq.Errors
//	if errors.As(err, &errs) {
//		for _, e := range errs {
//			fmt.Printf("%s: %v\n", path, e) // e.g. group 2 "fetch": tool 1 "gh.issues": as: ...
//		}
//	}
//
// # Storage
//
// Encode writes the canonical JSON of a Sequence — what the registry keeps
// in the SEQUENCES bucket. Decode (or Parse) reads it back, validating it
// again; Parse(Encode(s)) equals s.
//
// # Running
//
// Run executes a sequence with run arguments (key → JSON value) against a
// Caller and returns a Result: the run's status, every group and call with
// status, attempts, duration, error and the arguments it was sent after
// substitution (SentArgs, bounded by MaxCallArgs and MaxRunArgs:
// docs/runs.md, "What a run state holds"), and the slots. Policies: `missing`
// (fail|skip|degrade) decides what a missing tool (ErrToolMissing) does and
// is applied at once, never retried; `on_error` (abort|continue|retry)
// decides what a failed call does; the group's `timeout` bounds all of its
// calls, retries and backoff waits included. See Run for the exact rules.
//
// A call with `for_each: $args.LIST` (LIST an `in` value of type array<T>)
// is made once per item, its args reading $item, $item.FIELD and $index;
// its slot gets the results in item order, each item a call of its own
// under the group's policies, at most max_parallel in flight and at most
// WithMaxItems items (MaxItemsDefault). CallResult.ForEach records the
// fan-out (docs/sequences.md, "for_each").
//
// An Observer (WithObserver) hears when each group starts and finishes; the
// seqworker stores the Result given to GroupFinished as the run's
// checkpoint, and WithResume continues a run from such a checkpoint,
// skipping its finished groups. Runs are at-least-once: a tool of the group
// that was running when a worker died may be called twice.
//
// RunGroup runs one group by name with its `in` values and returns its
// `out` slots: the seq_call endpoint.
package seq

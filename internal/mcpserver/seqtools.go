package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nuid"

	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// Inputs and outputs of the sequence tools. Their JSON Schemas are derived
// from these types (tooldef.go).
type (
	noArgs struct{}

	seqNameIn struct {
		Name string `json:"name" jsonschema:"the sequence's name, as seq_list shows it"`
	}

	seqListOut struct {
		Sequences []events.SequenceSummary `json:"sequences"`
	}

	seqCreateOut struct {
		Name      string            `json:"name"`
		Replaced  bool              `json:"replaced"`
		Signature map[string]string `json:"signature" jsonschema:"the run arguments seq_run needs, with their types"`
		Groups    []string          `json:"groups" jsonschema:"the group names: each can be run alone with seq_call"`
	}

	seqShowOut struct {
		Sequence  sequenceForm      `json:"sequence" jsonschema:"the sequence in its JSON form: change it and give it to seq_create to store a new version"`
		Signature map[string]string `json:"signature" jsonschema:"the run arguments, with their types"`
	}

	seqRunIn struct {
		Sequence    string                     `json:"sequence,omitempty" jsonschema:"the name of a stored sequence (seq_list); give this or inline"`
		Inline      json.RawMessage            `json:"inline,omitempty"`
		Args        map[string]json.RawMessage `json:"args,omitempty" jsonschema:"the run arguments: an object with exactly the keys of the sequence's signature, each a JSON value of its type"`
		WaitSeconds *int                       `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the result, 0 to 600 seconds (default 60); if the run takes longer you get its run_id and follow it with seq_status"`
	}

	seqStatusIn struct {
		RunID       string `json:"run_id" jsonschema:"the run's id, as seq_run returned it"`
		WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"wait up to this many seconds (0 to 600, default 0) for the run to finish before answering"`
		Output      string `json:"output,omitempty" jsonschema:"the name of one output to return alone and in full (outputs over 64 KiB are cut in the normal answer)"`
	}

	seqCancelIn struct {
		RunID  string `json:"run_id" jsonschema:"the run's id, as seq_run returned it"`
		Reason string `json:"reason,omitempty" jsonschema:"why, recorded with the run"`
	}

	seqRetryIn struct {
		RunID  string `json:"run_id" jsonschema:"the id of a failed or cancelled run (with from, also a succeeded one)"`
		Latest bool   `json:"latest,omitempty" jsonschema:"use the stored definition instead of the one the run ran (refused when it differs before the group the retry starts at)"`
		From   string `json:"from,omitempty" jsonschema:"run again from this group instead of the first one that did not finish: the group's name, or its 1-based number written as a string; at most the first group that did not finish (any group of a succeeded run); the groups before it are reused"`
	}

	seqCallIn struct {
		Group string                     `json:"group" jsonschema:"the group's name (seq_list shows each sequence's groups)"`
		Args  map[string]json.RawMessage `json:"args,omitempty" jsonschema:"the group's in values: an object with exactly its in keys, each a JSON value of its type"`
	}

	seqCallOut struct {
		Group    string                     `json:"group"`
		Sequence string                     `json:"sequence"`
		RunID    string                     `json:"run_id,omitempty"`
		Status   string                     `json:"status"`
		Error    string                     `json:"error,omitempty"`
		Outputs  map[string]json.RawMessage `json:"outputs"`
		Calls    []callView                 `json:"calls,omitempty"`
	}

	seqDeleteOut struct {
		Name    string `json:"name"`
		Deleted bool   `json:"deleted"`
	}
)

const seqCreateDescription = `Store a tool sequence: a named, reusable multi-step tool flow that seq_run runs and whose groups seq_call runs one at a time.

A sequence is a list of groups run one after another; the tool calls inside a group run at the same time. A group reads values as "$args.KEY" — each KEY declared in its "in" with a type — and its calls write results into slots with "as" — each slot declared in its "out". Later groups read earlier slots by declaring them in their own "in"; "in" keys no earlier group writes become the run arguments (the signature). Types: string, bool, integer, number, object, array, array<T>.

A group's "tools" is ONE STRING of JSON objects, each followed by ";" (the last one too): {"tool":NAME,"args":{...},"as":SLOT};

To call a tool once per item of a list, add "for_each":"$args.LIST" (LIST declared in "in" as array<T>): the args read the item as "$item" ("$item.FIELD" for objects) and its position as "$index", "max_parallel":N bounds the items in flight, and the "as" slot (declared array<U>) gets the results in item order, null for a failed item under "on_error":"continue".

Use it when the user wants a flow kept to run again, or when several tool calls should run together and in order. The answer is the signature (the arguments seq_run needs), or every problem of the sequence, each saying where it is and how to fix it: fix them all and call again. The same name stored again replaces the sequence (one defined by a file cannot be replaced).

Example:
{"name": "readme-brief", "description": "Read the README and count lines by language.",
 "groups": [
  {"name": "readme-gather", "in": {"root": "string"}, "out": {"readme": "object", "languages": "object"},
   "tools": "{\"tool\":\"fs.read\",\"args\":{\"path\":\"README.md\"},\"as\":\"readme\"};{\"tool\":\"fs.lines\",\"args\":{\"path\":\"$args.root\"},\"as\":\"languages\"};"}
 ]}`

const seqRunDescription = `Run a tool sequence and return its result: the status of every group and call, and the outputs (the slots the groups wrote).

Give either "sequence" (the name of a stored sequence: seq_list) or "inline" (a sequence in the same JSON form seq_create takes, run without storing it), and "args" with the run arguments of its signature. The call waits up to wait_seconds (default 60) for the run to finish; a longer run keeps going and the answer gives its run_id — follow it with seq_status (which can wait too), stop it with seq_cancel. Progress notifications are sent as each group finishes.

A failed run is an answer, not an error: read each group's and call's error, fix the arguments or the sequence, and run again.

Example: {"sequence": "project-survey", "args": {"root": "."}, "wait_seconds": 120}`

// seqTools returns the sequence tools.
func (s *Server) seqTools() []toolDef {
	createIn := sequenceSchema()
	runIn := schemaFor[seqRunIn]()
	inline := sequenceSchema()
	inline.Description = "a sequence in its JSON form (as seq_create takes it), run without storing it; give this or sequence"
	runIn.Properties["inline"] = inline
	return []toolDef{
		defineTool(s, mcp.Tool{Name: "seq_list", Title: "List stored sequences",
			Description: "List the stored tool sequences: name, description, group names and signature (the run arguments with their types), and whether one runs at boot or on a schedule. Use it to find a sequence to run with seq_run, or a group to run alone with seq_call.\n\nExample: {}",
		}, true, []string{events.RegistrySeqListSubject}, s.seqList),
		defineTool(s, mcp.Tool{Name: "seq_show", Title: "Show a sequence",
			Description: "Show one stored sequence in its JSON form — the form seq_create takes — with its signature. Use it before running a sequence you do not know, or to change one: edit the JSON form and store it with seq_create.\n\nExample: {\"name\": \"project-survey\"}",
		}, true, []string{events.RegistrySeqGetSubject}, s.seqShow),
		defineTool(s, mcp.Tool{Name: "seq_create", Title: "Store a sequence", Description: seqCreateDescription, InputSchema: createIn,
			Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
			false, []string{events.RegistrySeqCreateSubject}, s.seqCreate),
		defineTool(s, mcp.Tool{Name: "seq_delete", Title: "Delete a sequence",
			Description: "Delete a sequence that was stored with seq_create. A sequence defined by a file cannot be deleted here (the answer says which file). Use it to clean up sequences that are no longer needed.\n\nExample: {\"name\": \"readme-brief\"}",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true}},
			false, []string{events.RegistrySeqDeleteSubject}, s.seqDelete),
		defineTool(s, mcp.Tool{Name: "seq_run", Title: "Run a sequence", Description: seqRunDescription, InputSchema: runIn,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
			false, []string{events.SeqRunSubject, events.SeqStatusSubject}, s.seqRun),
		defineTool(s, mcp.Tool{Name: "seq_status", Title: "Follow a run",
			Description: "Read a run's state: its status (queued, running, interrupted, succeeded, failed, cancelled), the groups finished so far with their calls, and its outputs. Use it to follow a run that seq_run left running (give wait_seconds to wait for the end), or to read one large output in full with output.\n\nExample: {\"run_id\": \"mcp-3Kx9\", \"wait_seconds\": 60}",
		}, true, []string{events.SeqStatusSubject}, s.seqStatus),
		defineTool(s, mcp.Tool{Name: "seq_cancel", Title: "Cancel a run",
			Description: "Cancel a run: a queued run never starts, a running one stops after its in-flight calls are cancelled. The answer is the run's state (follow it to cancelled with seq_status). Use it when the user no longer wants a run, or it runs much longer than expected.\n\nExample: {\"run_id\": \"mcp-3Kx9\", \"reason\": \"the user asked to stop\"}",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true}},
			false, []string{events.SeqCancelSubject}, s.seqCancel),
		defineTool(s, mcp.Tool{Name: "seq_retry", Title: "Retry a run from where it failed",
			Description: "Continue a failed or cancelled run in a new run, from its first group that did not finish: the groups that finished are not run again (their outputs are reused), with the same arguments and the definition the run ran. The answer is the new run's state (follow it with seq_status). Use it after fixing what made a group fail (a tool that was down, a missing provider), instead of seq_run, which would call every tool again. With \"from\" (a group's name, or its number as a string) it runs the run again from that earlier group instead (one whose tool produced bad data), reusing only the groups before it; a succeeded run may be retried this way.\n\nExample: {\"run_id\": \"mcp-3Kx9\"}",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
			false, []string{events.SeqRetrySubject, events.SeqStatusSubject}, s.seqRetry),
		seqSignalTool(s), // seqsignal.go
		defineTool(s, mcp.Tool{Name: "seq_call", Title: "Run one group",
			Description: "Run one group of a stored sequence by its name — its tool calls at once — with its in values, and return the slots it wrote. Every group of every stored sequence is callable this way (seq_list shows the group names). Use it for one step of a flow without running the whole sequence.\n\nExample: {\"group\": \"survey-inventory\", \"args\": {\"root\": \".\"}}",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
			false, []string{events.SeqCallSubject}, s.seqCall),
	}
}

func ptr[T any](v T) *T { return &v }

func (s *Server) seqList(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (seqListOut, string, error) {
	list, err := s.c.SeqList(ctx)
	if err != nil {
		return seqListOut{}, "", err
	}
	out := seqListOut{Sequences: list.Sequences}
	if len(out.Sequences) == 0 {
		return out, "No sequences are stored. Store one with seq_create.", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d stored sequence(s):\n", len(out.Sequences))
	for _, q := range out.Sequences {
		fmt.Fprintf(&b, "\n- %s %s", q.Name, signatureText(q.Signature))
		if q.Description != "" {
			fmt.Fprintf(&b, ": %s", oneLine(q.Description, 300))
		}
		fmt.Fprintf(&b, "\n  groups: %s", strings.Join(q.Groups, ", "))
		if q.Boot {
			b.WriteString("; runs at every agent boot")
		}
		if q.Schedule != "" {
			fmt.Fprintf(&b, "; schedule %s", q.Schedule)
		}
	}
	b.WriteString("\n\nRun one with seq_run {\"sequence\": NAME, \"args\": {...}}; see one with seq_show.")
	return out, b.String(), nil
}

func (s *Server) seqShow(ctx context.Context, _ *mcp.CallToolRequest, in seqNameIn) (seqShowOut, string, error) {
	raw, err := s.c.SeqGet(ctx, in.Name)
	if err != nil {
		return seqShowOut{}, "", err
	}
	q, err := seq.Decode(raw)
	if err != nil {
		return seqShowOut{}, "", fmt.Errorf("the stored sequence %q cannot be read: %v", in.Name, err)
	}
	out := seqShowOut{Sequence: formOf(q), Signature: typeMap(q.Signature)}
	if out.Signature == nil {
		out.Signature = map[string]string{}
	}
	b, _ := json.MarshalIndent(out.Sequence, "", "  ")
	text := fmt.Sprintf("Sequence %s %s — %d group(s); run it with seq_run {\"sequence\": %q, \"args\": {...}}.\nIts JSON form (edit it and store it with seq_create):\n%s",
		q.Name, signatureText(out.Signature), len(q.Groups), q.Name, b)
	return out, text, nil
}

func (s *Server) seqCreate(ctx context.Context, _ *mcp.CallToolRequest, raw json.RawMessage) (seqCreateOut, string, error) {
	created, err := s.c.SeqCreate(ctx, raw)
	if err != nil {
		return seqCreateOut{}, "", err
	}
	out := seqCreateOut{Name: created.Name, Replaced: created.Replaced, Signature: created.Signature, Groups: []string{}}
	if q, err := seq.ParseJSON(raw); err == nil {
		for _, g := range q.Groups {
			out.Groups = append(out.Groups, g.Name)
		}
	}
	verb := "Stored"
	if created.Replaced {
		verb = "Replaced"
	}
	args := make([]string, 0, len(out.Signature))
	for _, k := range sortedKeys(out.Signature) {
		args = append(args, fmt.Sprintf("%q: <%s>", k, out.Signature[k]))
	}
	text := fmt.Sprintf("%s sequence %s %s with groups %s.\nRun it with seq_run {\"sequence\": %q, \"args\": {%s}}.",
		verb, out.Name, signatureText(out.Signature), strings.Join(out.Groups, ", "), out.Name, strings.Join(args, ", "))
	return out, text, nil
}

func (s *Server) seqDelete(ctx context.Context, _ *mcp.CallToolRequest, in seqNameIn) (seqDeleteOut, string, error) {
	del, err := s.c.SeqDelete(ctx, in.Name)
	if err != nil {
		return seqDeleteOut{}, "", err
	}
	return seqDeleteOut{Name: del.Name, Deleted: del.Deleted}, fmt.Sprintf("Deleted sequence %s.", del.Name), nil
}

// waitBound reads a wait_seconds argument: def when nil, else 0..MaxRunWait.
func waitBound(v *int, def time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	if *v < 0 || time.Duration(*v)*time.Second > MaxRunWait {
		return 0, fmt.Errorf("wait_seconds %d: want 0 to %d", *v, int(MaxRunWait/time.Second))
	}
	return time.Duration(*v) * time.Second, nil
}

func (s *Server) seqRun(ctx context.Context, req *mcp.CallToolRequest, in seqRunIn) (runView, string, error) {
	wait, err := waitBound(in.WaitSeconds, s.cfg.RunWait)
	if err != nil {
		return runView{}, "", err
	}
	r := events.SeqRunRequest{RunID: "mcp-" + nuid.Next(), Sequence: in.Sequence}
	switch {
	case in.Sequence != "" && len(in.Inline) > 0:
		return runView{}, "", errors.New(`give either "sequence" (a stored sequence's name) or "inline" (a sequence in its JSON form), not both`)
	case in.Sequence == "" && len(in.Inline) == 0:
		return runView{}, "", errors.New(`give "sequence" (a stored sequence's name: seq_list) or "inline" (a sequence in its JSON form, as seq_create takes it)`)
	case len(in.Inline) > 0:
		q, err := seq.ParseJSON(in.Inline)
		if err != nil {
			return runView{}, "", problemsError("inline", err)
		}
		if r.Inline, err = seq.Encode(q); err != nil {
			return runView{}, "", err
		}
		if err := checkRunArgs(q.Signature, in.Args); err != nil {
			return runView{}, "", err
		}
	default:
		if err := s.checkStoredRunArgs(ctx, in.Sequence, in.Args); err != nil {
			return runView{}, "", err
		}
	}
	if len(in.Args) > 0 {
		r.Args, _ = json.Marshal(in.Args)
	}
	id, err := s.c.Start(ctx, r)
	if err != nil {
		return runView{}, "", err
	}
	prog := progress{ctx: ctx, req: req, status: func(ctx context.Context) (*events.RunState, error) { return s.c.Status(ctx, id) }}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	st, err := s.c.Wait(wctx, id, client.WaitOptions{Poll: time.Second, OnEvent: prog.event})
	if err != nil {
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return runView{}, "", err
		}
		// The bound passed: answer with the run as it is now.
		if st, err = s.c.Status(ctx, id); err != nil {
			return runView{}, "", err
		}
	}
	prog.catchUp(st, st.FinishedGroups)
	return s.view(ctx, st, "")
}

// checkStoredRunArgs checks seq_run's args against the stored sequence's
// signature, read from the registry (checkRunArgs). When it cannot be read
// (other than "no such sequence") the worker's own check decides.
func (s *Server) checkStoredRunArgs(ctx context.Context, name string, args map[string]json.RawMessage) error {
	raw, err := s.c.SeqGet(ctx, name)
	if errors.Is(err, client.ErrNotFound) {
		return err
	}
	if err != nil {
		s.log.Debug("seq_run: signature not read; the worker checks the arguments", "sequence", name, "err", err)
		return nil
	}
	q, err := seq.Decode(raw)
	if err != nil {
		return nil
	}
	return checkRunArgs(q.Signature, args)
}

// checkRunArgs checks seq_run's args against sig before anything starts,
// with the rules `skillbus run --args-file` and the console apply
// (runargs.Problems; docs/sequences.md, "Types"): every unknown key, value
// of the wrong type and missing key is named with what to give, and no
// failed run is left behind for a typo.
func checkRunArgs(sig seq.Signature, args map[string]json.RawMessage) error {
	byKey := runargs.Problems(sig, args)
	if len(byKey) == 0 {
		return nil
	}
	probs := make([]string, 0, len(byKey))
	for _, k := range sortedKeys(byKey) {
		probs = append(probs, "args."+k+": "+byKey[k])
	}
	return fmt.Errorf("the run was not started: %s", strings.Join(probs, "; "))
}

func (s *Server) seqStatus(ctx context.Context, _ *mcp.CallToolRequest, in seqStatusIn) (runView, string, error) {
	wait, err := waitBound(&in.WaitSeconds, 0)
	if err != nil {
		return runView{}, "", err
	}
	if err := events.CheckRunID(in.RunID); err != nil {
		return runView{}, "", fmt.Errorf("run_id %q: %v; use the run_id seq_run returned", clip(in.RunID, 80), err)
	}
	var st *events.RunState
	if wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, wait)
		st, err = s.c.Wait(wctx, in.RunID, client.WaitOptions{Poll: time.Second})
		cancel()
		if err != nil && (ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded)) {
			return runView{}, "", err
		}
	}
	if st == nil {
		if st, err = s.c.Status(ctx, in.RunID); err != nil {
			return runView{}, "", err
		}
	}
	return s.view(ctx, st, in.Output)
}

func (s *Server) seqCancel(ctx context.Context, req *mcp.CallToolRequest, in seqCancelIn) (runView, string, error) {
	by := "mcp"
	if ci := req.ClientInfo(); ci != nil && ci.Name != "" {
		by = "mcp: " + clip(ci.Name, 100)
	}
	st, err := s.c.Cancel(ctx, in.RunID, by, in.Reason)
	if err != nil {
		return runView{}, "", err
	}
	return s.view(ctx, st, "")
}

func (s *Server) seqRetry(ctx context.Context, _ *mcp.CallToolRequest, in seqRetryIn) (runView, string, error) {
	var opts []client.RetryOption
	if in.From != "" {
		opts = append(opts, client.WithRetryFrom(in.From))
	}
	nid, err := s.c.Retry(ctx, in.RunID, "", in.Latest, opts...)
	if err != nil {
		return runView{}, "", err
	}
	st, err := s.c.Status(ctx, nid)
	if err != nil {
		return runView{}, "", err
	}
	return s.view(ctx, st, "")
}

func (s *Server) seqCall(ctx context.Context, _ *mcp.CallToolRequest, in seqCallIn) (seqCallOut, string, error) {
	var args json.RawMessage
	if len(in.Args) > 0 {
		args, _ = json.Marshal(in.Args)
	}
	reply, err := s.c.Call(ctx, in.Group, args)
	if err != nil {
		return seqCallOut{}, "", err
	}
	out := seqCallOut{Group: reply.Group, Sequence: reply.Sequence, RunID: reply.RunID, Error: reply.Error, Outputs: capOutputs(reply.Slots, reply.RunID), Status: "succeeded"}
	var gr seq.GroupResult
	if len(reply.Result) > 0 && json.Unmarshal(reply.Result, &gr) == nil {
		out.Status = string(gr.Status)
		out.Calls = callViews(gr.Calls)
	}
	if reply.Error != "" && out.Status == "succeeded" {
		out.Status = "failed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Group %s (of sequence %s): %s", out.Group, out.Sequence, out.Status)
	if out.Error != "" {
		fmt.Fprintf(&b, " — %s", out.Error)
	}
	b.WriteString("\n")
	writeCalls(&b, "", out.Calls)
	writeOutputs(&b, out.Outputs)
	return out, b.String(), nil
}

// progress sends one MCP progress notification per finished group of a
// run, in order, when the call asked for progress (a progress token).
type progress struct {
	ctx    context.Context
	req    *mcp.CallToolRequest
	status func(ctx context.Context) (*events.RunState, error)
	sent   int // groups notified so far
}

// event handles a group event: the groups before it whose events were
// missed (they finished before the events were followed) are notified
// first, from the run's state.
func (p *progress) event(ev *events.RunEvent) {
	if ev.Kind != events.RunGroup || ev.Group <= p.sent {
		return
	}
	if ev.Group > p.sent+1 {
		if st, err := p.status(p.ctx); err == nil {
			p.catchUp(st, ev.Group-1)
		}
	}
	p.notify(ev.Group, ev.Groups, ev.GroupName, ev.Status)
}

// catchUp notifies the finished groups of st up to group last that were
// not notified yet.
func (p *progress) catchUp(st *events.RunState, last int) {
	var res seq.Result
	if len(st.Result) == 0 || json.Unmarshal(st.Result, &res) != nil {
		return
	}
	for i := p.sent; i < last && i < st.FinishedGroups && i < len(res.Groups); i++ {
		p.notify(i+1, len(res.Groups), res.Groups[i].Name, string(res.Groups[i].Status))
	}
}

func (p *progress) notify(n, total int, name, status string) {
	token := p.req.Params.GetProgressToken()
	if token == nil || p.req.Session == nil || n <= p.sent {
		return
	}
	p.sent = n
	_ = p.req.Session.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: token, Progress: float64(n), Total: float64(total),
		Message: fmt.Sprintf("group %d of %d %q %s", n, total, name, status),
	})
}

// problemsError turns a parse error of pkg/seq into the problems validate
// prints for it, each located ("inline: group 1 "g": timeout: ...").
func problemsError(where string, err error) error {
	var es seq.Errors
	var probs []events.Problem
	if errors.As(err, &es) {
		for _, e := range es {
			probs = append(probs, events.Problem{Where: joinWhere(where, e.Where()), Line: e.Line, Message: e.Message})
		}
	} else {
		var e *seq.Error
		if errors.As(err, &e) {
			probs = append(probs, events.Problem{Where: joinWhere(where, e.Where()), Line: e.Line, Message: e.Message})
		} else {
			probs = append(probs, events.Problem{Where: where, Message: err.Error()})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The sequence is not valid: %d problem(s). Fix every one and call again:", len(probs))
	for i, p := range probs {
		fmt.Fprintf(&b, "\n%d. %s", i+1, p.String())
	}
	return errors.New(b.String())
}

func joinWhere(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + ": " + b
}

func oneLine(s string, n int) string {
	return clip(strings.Join(strings.Fields(s), " "), n)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

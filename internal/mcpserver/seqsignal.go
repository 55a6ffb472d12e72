package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// seqSignalIn is seq_signal's input.
type seqSignalIn struct {
	RunID  string                     `json:"run_id" jsonschema:"the id of a waiting run (seq_status shows what it waits for)"`
	Name   string                     `json:"name" jsonschema:"the signal's name, as the run's wait names it"`
	Values map[string]json.RawMessage `json:"values,omitempty" jsonschema:"the values the signal brings: an object with exactly the wait's out keys, each a JSON value of its type"`
	Reject string                     `json:"reject,omitempty" jsonschema:"reject the wait instead, with this reason: the waiting group fails (an approval denied); give no values then"`
}

// seqSignalTool is seq_signal: skillbus.seq.signal (docs/runs.md,
// "Waiting runs").
func seqSignalTool(s *Server) toolDef {
	return defineTool(s, mcp.Tool{Name: "seq_signal", Title: "Signal a waiting run",
		Description: "Deliver a signal to a run that waits at a wait_for group (seq_status shows status waiting, the signal's name and the values it brings): its values become the group's outputs and the run goes on; with reject, the group fails with the reason. The first signal wins; a second one, or one to a run not waiting for that name, is refused. Only signal on the user's behalf, with their answer (an approval is theirs to give). The answer is the run's state (follow it with seq_status).\n\nExample: {\"run_id\": \"mcp-3Kx9\", \"name\": \"approve\", \"values\": {\"approved\": true, \"restart\": [\"db\"], \"note\": \"db is stuck\"}}",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		false, []string{events.SeqSignalSubject, events.SeqStatusSubject}, s.seqSignal)
}

func (s *Server) seqSignal(ctx context.Context, _ *mcp.CallToolRequest, in seqSignalIn) (runView, string, error) {
	opts := []client.SignalOption{client.WithSignalBy("mcp")}
	if in.Reject != "" {
		opts = append(opts, client.WithReject(in.Reject))
	}
	if _, err := s.c.Signal(ctx, in.RunID, in.Name, in.Values, opts...); err != nil {
		return runView{}, "", err
	}
	st, err := s.c.Status(ctx, in.RunID)
	if err != nil {
		return runView{}, "", err
	}
	return s.view(ctx, st, "")
}

// waitNext is the next step of a waiting run's view.
func waitNext(st *events.RunState) string {
	w := st.Wait
	if w.Kind != "signal" {
		return fmt.Sprintf("The run waits at group %d %q until %s (a timer); it goes on by itself. Call seq_status {\"run_id\": %q, \"wait_seconds\": 60} to follow it.", w.Group, w.GroupName, w.Deadline.Format(time.RFC3339), st.RunID)
	}
	if w.Signalled != nil {
		return fmt.Sprintf("The run was signalled and resumes now: call seq_status {\"run_id\": %q, \"wait_seconds\": 60}.", st.RunID)
	}
	return fmt.Sprintf("The run waits at group %d %q for the signal %q (values %v) until %s. Ask the user; then call seq_signal {\"run_id\": %q, \"name\": %q, \"values\": {...}} with their answer, or with \"reject\": REASON.", w.Group, w.GroupName, w.Signal, w.Out, w.Deadline.Format(time.RFC3339), st.RunID, w.Signal)
}

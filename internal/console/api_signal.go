package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/skillbus/skillbus/internal/runargs"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// Waiting runs on the console (docs/console.md, "A waiting run"; the rules
// are docs/runs.md, "Waiting runs"): a waiting run's page answers its
// signal through seq.signal, as `skillbus runs signal` does (the runs list
// says what a run waits for from its summary's waiting).

// signalForm is the body of POST /api/runs/{id}/signal: the signal's name
// (the wait's), its values as the form's text (read by the wait's `out`
// types as `runs signal --arg KEY=TEXT` reads them, or JSON values), or a
// rejection with its reason.
type signalForm struct {
	Name   string     `json:"name"`
	Args   formValues `json:"args"`
	Reject bool       `json:"reject"`
	Reason string     `json:"reason"`
}

// apiSignal is POST /api/runs/{id}/signal: the run's state (seq.status)
// gives its wait's `out` types, the values are read by them with the code
// of `run --arg` (internal/runargs), each problem answered 400 under its
// field ("fields"), then seq.signal delivers the signal (by =
// Config.User). The answer is the run's state with the signal recorded;
// seq.signal's 404 and 409 (not waiting, another signal, a timer, or
// signalled already) pass through with its words.
func (s *Server) apiSignal(w http.ResponseWriter, r *http.Request) {
	var form signalForm
	if !readJSON(w, r, &form) {
		return
	}
	id, ctx := r.PathValue("id"), r.Context()
	opts := []client.SignalOption{client.WithSignalBy(s.cfg.User)}
	var values map[string]json.RawMessage
	if form.Reject {
		if len(form.Args) > 0 {
			writeErr(w, http.StatusBadRequest, "", "a rejection carries no values, only its reason: drop the values or the rejection")
			return
		}
		opts = append(opts, client.WithReject(form.Reason))
	} else {
		if form.Reason != "" {
			writeErr(w, http.StatusBadRequest, "", "a reason goes with a rejection: set reject, or drop the reason")
			return
		}
		st, err := s.runs.Status(ctx, id)
		if err != nil {
			writeFail(w, r, seqErr(err))
			return
		}
		if st.Wait != nil && st.Status == events.StatusWaiting {
			sig := seq.Signature{}
			for k, t := range st.Wait.Out {
				sig[k] = seq.Type(t)
			}
			args, fields := formArgs(sig, form.Args)
			if len(fields) > 0 {
				keys := make([]string, 0, len(fields))
				for k := range fields {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				writeJSON(w, http.StatusBadRequest, apiError{
					Error:  fmt.Sprintf("the signal was not sent: %s %s not right (the signal %s brings %s)", strings.Join(keys, ", "), plural(len(keys), "is", "are"), st.Wait.Signal, runargs.SignatureText(sig)),
					Fields: fields,
				})
				return
			}
			values = args
		} else {
			values = form.Args // seq.signal says why the run takes no signal (409)
		}
	}
	st, err := s.runs.Signal(ctx, id, form.Name, values, opts...)
	if err != nil {
		writeFail(w, r, seqErr(err))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

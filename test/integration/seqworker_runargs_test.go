package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestSeqRunChecksArguments: skillbus.seq.run checks the arguments against
// the sequence's signature before it accepts a run (docs/architecture.md),
// stored and inline alike, and answers 400 with every problem in the words
// of `run --arg`; nothing is queued for a refused request.
func TestSeqRunChecksArguments(t *testing.T) {
	t.Parallel()
	env := swStart(t, natsserver.Options{}, swOptions())
	var calls swCounter
	swServe(t, env, swEcho("sw.args", &calls))
	src := `
name: sw-args
groups:
  - name: first
    in: {root: string, limit: integer}
    tools: [{tool: sw.args, args: {root: $args.root, limit: $args.limit}}]
`
	swStore(t, env, src)
	swWorker(t, env, seqworker.Config{})

	inline := `{"name":"sw-args-inline","groups":[{"name":"first","in":{"root":"string","limit":"integer"},"tools":[{"tool":"sw.args","args":{"root":"$args.root"}}]}]}`
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"wrong type", `{"v":1,"sequence":"sw-args","args":{"root":".","limit":"5"}}`, []string{"limit is declared integer"}},
		{"missing", `{"v":1,"sequence":"sw-args","args":{"root":"."}}`, []string{"missing: limit is a run argument of type integer"}},
		{"unknown and missing", `{"v":1,"sequence":"sw-args","args":{"rooot":".","limit":1}}`, []string{`unknown argument "rooot"`, "missing: root"}},
		{"inline wrong type", `{"v":1,"inline":` + inline + `,"args":{"root":3,"limit":1}}`, []string{"root is declared string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := swQueued(t, env)
			m, err := env.nc.Request(events.SeqRunSubject, []byte(tc.body), 10*time.Second)
			if err != nil {
				t.Fatalf("seq.run: %v", err)
			}
			code, desc := m.Header.Get(micro.ErrorCodeHeader), m.Header.Get(micro.ErrorHeader)
			if code != "400" {
				t.Fatalf("seq.run %s = %q %q (%s); want 400", tc.body, code, desc, m.Data)
			}
			for _, w := range tc.want {
				if !strings.Contains(desc, w) {
					t.Errorf("seq.run error = %q; want it to contain %q", desc, w)
				}
			}
			if after := swQueued(t, env); after != before {
				t.Errorf("SEQ_RUNS grew from %d to %d messages for a refused request", before, after)
			}
		})
	}

	// Well-typed arguments (null fits every type) are accepted and run.
	m, err := env.nc.Request(events.SeqRunSubject, []byte(`{"v":1,"run_id":"args-ok","sequence":"sw-args","args":{"root":".","limit":null}}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Fatalf("seq.run with good arguments: %s %s", code, m.Header.Get(micro.ErrorHeader))
	}
	if st := swWait(t, env, "args-ok", 10*time.Second); st.Status != events.StatusSucceeded {
		t.Fatalf("run args-ok: %s (%s); want succeeded", st.Status, st.Error)
	}
}

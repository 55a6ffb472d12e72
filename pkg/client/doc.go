// Package client is the Go client of skillbus runs and of its registry:
// start a sequence run, follow it to its end, read its state, list runs,
// cancel or rerun one, and call a single group — everything `skillbus
// run`, `skillbus runs` and `skillbus call` do — and list, read, create and
// delete skills and sequences as `skillbus skills` and `skillbus seqs` do
// (registry.go), for a Go program that embeds skillbus. It needs only a
// NATS connection to a cluster where a seqworker (and a registry) runs; no
// internal package.
//
// # The model
//
// A run is one execution of a sequence (docs/sequences.md). Its state
// lives in the RUNS bucket under its run id (events.RunState) and moves
// through
//
//	queued → running → succeeded | failed | cancelled
//
// with interrupted when the worker holding it stopped before the end: any
// worker then resumes it after its last finished group (docs/runs.md).
// Runs are at-least-once: a tool of the group that was running when a
// worker died may be called twice.
//
// Every method is a request to one endpoint of the skillbus-seq micro
// service (skillbus.seq.run, .status, .list, .cancel, .rerun, .call); the
// request and reply types are those of pkg/events. An error reply of the
// service matches ErrBadRequest, ErrNotFound, ErrConflict or
// ErrUnavailable with errors.Is, and holds the service's code and message
// as a *toolcall.Error (errors.As). Two errors come from the client
// itself: ErrInvalid, a caller's mistake found before anything is sent (an
// argument a method checks, such as a run id, or a request field
// events.Encode refuses), and ErrClosed, the NATS connection closed (it
// wraps nats.ErrConnectionClosed; connect again). Neither is a service's
// answer, so neither matches ErrBadRequest or ErrUnavailable.
//
// Every request goes through Requester (request.go), the one request/reply
// helper, also used by the skillbus command line with its own words for
// no responders and timeouts.
//
// The registry methods (SkillList, SkillGet, SkillInfo, SeqList, SeqGet,
// SeqCreate, SeqDelete) call the skillbus-registry service
// (skillbus.registry.*), with the request and reply types of
// pkg/events/registryservice.go and the same errors; an invalid sequence
// given to SeqCreate is an ErrBadRequest whose every problem Problems
// returns.
//
// # Example
//
//	nc, _ := nats.Connect(os.Getenv("NATS_URL"))
//	defer nc.Drain()
//	c, _ := client.New(nc)
//	id, err := c.Start(ctx, events.SeqRunRequest{Sequence: "project-survey", Args: json.RawMessage(`{"root":"."}`)})
//	if err != nil { ... }
//	st, err := c.Wait(ctx, id, client.WaitOptions{
//		OnEvent: func(ev *events.RunEvent) { fmt.Println(ev.Kind, ev.GroupName, ev.Status) },
//	})
//	if err != nil { ... }
//	slots, _ := c.Slots(ctx, st) // outputs, the large ones read from the object store
//
// Or with options and a run handle (ExampleClient_Run): Run always sends a
// run id, so it is idempotent; Get waits for the outcome, Events yields
// every event from the first, Cancel asks to stop it. An inline run
// (WithInline) takes the sequence's JSON AST as bytes, so it needs no
// import of pkg/seq:
//
//	run, err := c.Run(ctx, "project-survey", client.WithArgs(map[string]string{"root": "."}))
//	for ev, err := range run.Events(ctx) { ... }
//	st, err := run.Get(ctx)
//
// Cancel a run with c.Cancel(ctx, id, "me", "no longer needed"); list the
// failed runs of the last day with
//
//	c.List(ctx, events.SeqListRequest{Status: events.StatusFailed, Since: time.Now().Add(-24 * time.Hour)})
package client

// Package events is skillbus's NATS vocabulary: the names of every subject,
// stream, consumer and KV bucket (docs/runs.md, docs/sequences.md), the messages that travel
// on them, the idempotent provisioning of the streams and buckets, and
// OpenTelemetry trace-context propagation over NATS headers.
//
// # The model
//
// skillbus keeps all of its state in NATS JetStream, so any number of
// service replicas on any number of nodes share the work:
//
//   - Four KV buckets: SKILLS and SEQUENCES (written by the registry, read by
//     everyone), RUNS (one key per run: the checkpoint and the result, with
//     the run's summary in headers, expiring after RunsTTL) and
//     SKILLFACE_SESSIONS (per-session activation state, expiring after
//     SessionsTTL); and the RUN_SLOTS object store (slot values too large
//     for a RUNS entry, with the RUNS retention).
//   - The run lifecycle (RunState, the Status constants, RunEvent kinds)
//     and the request and reply types of every skillbus.seq.* endpoint
//     (seqservice.go); docs/runs.md describes them. pkg/client calls them,
//     and the registry's skillbus.registry.* endpoints
//     (registryservice.go).
//   - The SEQ_RUNS stream: a work queue of run requests on seq.run.<name>,
//     deduplicated by run id (Nats-Msg-Id), consumed by the durable pull
//     consumer "seqworker"; and server-side message schedules on
//     seq.schedule.<name> whose ticks land on seq.run.<name>.
//   - The EVENTS stream: what happened — agent_ready, run progress and
//     registry changes — for watchers, dashboards and the boot trigger.
//   - Core request/reply: tool.<name> for tool calls (pkg/tool) and the
//     micro services skillbus.registry.*, skillbus.skillface.*,
//     skillbus.seq.*.
//
// Nothing else in skillbus spells these names: use the constants and the
// subject functions (RunSubject, RunEventSubject, ...) of this package.
// Sequence and agent names may be written in any script; the subject
// functions put them in a subject through TokenFor (ASCII names unchanged,
// others "=" + base64url: seq.run.=5byA5py66Ieq5qOA for 开机自检), and
// NameForToken / NameOfSubject give the name back for display.
//
// # Provisioning
//
// Every service calls Provision at start with the same Options (for example
// Replicas 3 for a 3-node cluster): it creates what is missing and updates
// what exists, so start order does not matter and a second call is a no-op.
//
// # Messages
//
// Every message is a plain JSON-tagged struct with a "v" field holding
// Version. Field names never change meaning; new fields are added with
// omitempty. Decode checks the version, so a reader refuses a message from
// a newer, incompatible writer instead of misreading it.
//
// # Tracing
//
// Every publish and request that skillbus makes goes through Publish,
// PublishCore or Request, which start a span and inject the W3C trace
// context into the message header (HeaderCarrier); a receiver calls
// StartReceiveSpan to continue the trace. Only the OpenTelemetry API is used
// here: with no SDK installed the spans cost next to nothing.
//
// pkg/events imports nats.go but never nats-server: binaries that connect to
// a real cluster do not link the server (see internal/natsserver).
package events

// Command seqworker is the skillbus sequence runner (docs/sequences.md):
// it takes run requests from the SEQ_RUNS work queue (shared with every
// other replica), runs them group by group against the tools on
// tool.<name>, checkpoints every finished group in RUNS, starts boot
// sequences on agent_ready, keeps the server-side schedules of scheduled
// sequences, and serves skillbus.seq.* (seq_call, run, status). The logic
// lives in internal/seqworker; the process wiring (flags and SKILLBUS_*
// variables, NATS connection, health, metrics, shutdown budget) in
// internal/servicecmd.
//
// Usage:
//
//	seqworker [flags]
//
// Run `seqworker --help` for the flags; docs/operations.md for deployment,
// docs/runs.md for failover, retention and sizes. SIGINT or SIGTERM stops
// it gracefully within --shutdown-budget: not ready, no new runs are taken,
// running groups may finish until 70% of the budget, then each unfinished
// run is recorded as interrupted and handed back at once (another replica,
// or this one restarted, resumes it after its last finished group), then
// the connection is drained.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/skillbus/skillbus/internal/seqworker"
	"github.com/skillbus/skillbus/internal/servicecmd"
)

func main() {
	ctx, stop := servicecmd.SignalContext("seqworker", os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// configFlags maps the fields of seqworker.Config (and of its Provision)
// onto the flags that set them, for configuration errors.
var configFlags = map[string]string{
	"Provision": "", "Concurrency": "concurrency", "RedeliveryDelay": "redelivery-delay",
	"RedeliveryMaxDelay": "redelivery-max-delay", "Heartbeat": "heartbeat", "WorkerID": "worker-id",
	"SlotMaxBytes": "slot-max-bytes", "MaxItems": "max-items", "RunSlotsMaxBytes": "run-slots-limit-bytes",
	"Provision: RunSlotsMaxBytes": "run-slots-max-bytes", "AckWait": "ack-wait", "MaxDeliver": "max-deliver",
	"RunsTTL": "runs-ttl", "RunsMaxBytes": "runs-max-bytes", "EventsMaxAge": "events-max-age",
	"EventsMaxBytes": "events-max-bytes", "SeqRunsMaxBytes": "seq-runs-max-bytes", "Replicas": "replicas",
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var common servicecmd.Flags
	fs := common.FlagSet(servicecmd.Command{
		Name:     "seqworker",
		Synopsis: "seqworker [flags]",
		About: "Runs skillbus tool sequences from the SEQ_RUNS work queue and serves\n" +
			"skillbus.seq.* (see `nats micro info skillbus-seq`). Run as many replicas\n" +
			"as you like: they share the queue.",
		Examples: []string{
			"seqworker --concurrency 32",
			"NATS_URL=nats://nats:4222 NATS_CREDS=/etc/skillbus/seqworker.creds seqworker --health-addr :8080 --replicas 3",
			"SKILLBUS_CONCURRENCY=8 SKILLBUS_SHUTDOWN_BUDGET=50s seqworker",
		},
	}, stdout, stderr)
	var (
		concurrency = fs.Int("concurrency", seqworker.DefaultConcurrency, "runs (and seq_call requests) this replica executes at once")
		ackWait     = fs.Duration("ack-wait", 0, "how long a silent (dead) worker keeps a run before another takes it over (0 = keep the consumer's; 10s when created)")
		lowerAck    = fs.Bool("lower-ack-wait", false, "allow --ack-wait to lower the shared consumer's ack wait for every replica (refused without it)")
		heartbeat   = fs.Duration("heartbeat", 0, "how often a worker says a run it holds is alive, long tool calls included (0 = a third of the ack wait)")
		workerID    = fs.String("worker-id", "", "this replica's name in run states and events (default host-pid-random)")
		runsTTL     = fs.Duration("runs-ttl", 0, "how long RUNS keeps a run (and RUN_SLOTS its large slots) (0 = keep; 168h when created)")
		runsBytes   = fs.Int64("runs-max-bytes", 0, "size limit of the RUNS bucket in bytes; new runs are refused at 90% (0 = keep; 256 MiB when created; -1 = unlimited)")
		slotsBytes  = fs.Int64("run-slots-max-bytes", 0, "size limit of the RUN_SLOTS object store in bytes; new runs are refused at 90% (0 = keep; 256 MiB when created; -1 = unlimited)")
		eventsAge   = fs.Duration("events-max-age", 0, "how long EVENTS keeps an event (0 = keep; 24h when created)")
		eventsBytes = fs.Int64("events-max-bytes", 0, "size limit of the EVENTS stream in bytes, oldest dropped first (0 = keep; 128 MiB when created; -1 = unlimited)")
		queueBytes  = fs.Int64("seq-runs-max-bytes", 0, "size limit of the SEQ_RUNS stream in bytes; new runs are refused at 90% (0 = keep; 64 MiB when created; -1 = unlimited)")
		slotMax     = fs.Int64("slot-max-bytes", 0, "largest slot value a run may write (0 = 64 MiB)")
		runSlotsMax = fs.Int64("run-slots-limit-bytes", 0, "largest total of slot values of one run (0 = 256 MiB)")
		maxItems    = fs.Int("max-items", 0, "most items of one for_each call; a longer list fails its group (0 = 10000)")
		maxDeliver  = fs.Int("max-deliver", 0, "deliveries of one run request before it is recorded as failed (0 = 10, -1 = unlimited)")
		redelivery  = fs.Duration("redelivery-delay", seqworker.DefaultRedeliveryDelay, "first delay before redelivering a run after a passing failure (doubles per delivery)")
		redelivMax  = fs.Duration("redelivery-max-delay", seqworker.DefaultRedeliveryMaxDelay, "largest redelivery delay")
	)
	if code := common.Parse(fs, args, 0); code >= 0 {
		return code
	}
	log, err := common.Logger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "seqworker: %v\n", err)
		return 2
	}
	cfg := seqworker.Config{
		Concurrency:        *concurrency,
		RedeliveryDelay:    *redelivery,
		RedeliveryMaxDelay: *redelivMax,
		Heartbeat:          *heartbeat,
		WorkerID:           *workerID,
		SlotMaxBytes:       *slotMax,
		RunSlotsMaxBytes:   *runSlotsMax,
		MaxItems:           *maxItems,
		Logger:             log,
		Provision:          common.Provision(),
		Provisioned:        true, // by common.Run (servicecmd), with retries
	}
	cfg.Provision.AckWait, cfg.Provision.LowerAckWait = *ackWait, *lowerAck
	cfg.Provision.MaxDeliver = *maxDeliver
	cfg.Provision.RunsTTL, cfg.Provision.RunsMaxBytes, cfg.Provision.RunSlotsMaxBytes = *runsTTL, *runsBytes, *slotsBytes
	cfg.Provision.EventsMaxAge, cfg.Provision.EventsMaxBytes, cfg.Provision.SeqRunsMaxBytes = *eventsAge, *eventsBytes, *queueBytes
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "seqworker: %s\n", common.ConfigError(err, configFlags))
		return 2
	}
	return common.Run(ctx, log, servicecmd.Spec{
		Provision: &cfg.Provision,
		New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
			cfg.Meters = rt.Meters
			w, err := seqworker.New(rt.Conn, cfg)
			if err != nil {
				return nil, err
			}
			// Stop: no new runs; running groups get the stop share of
			// --shutdown-budget, then their runs are handed back.
			return w, nil
		},
	})
}

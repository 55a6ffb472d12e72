package events

import (
	"context"
	"fmt"
)

// checkAckWait refuses an explicit Options.AckWait below the ack wait of
// the existing seqworker consumer unless Options.LowerAckWait says so
// (docs/runs.md, Failover): every seqworker replica shares that consumer
// and keeps the runs it holds with in-progress acks at a fraction of its
// ack wait, so lowering it is a change for the whole deployment, not a
// setting of one replica. A larger value is accepted (every replica then
// follows it). A consumer still at LegacyAckWait is not a deliberate
// setting and may be lowered. Errors: ErrOptions naming both values.
func checkAckWait(ctx context.Context, rr ResourceReader, o Options) error {
	if o.AckWait == 0 || o.LowerAckWait {
		return nil
	}
	c, err := seqworkerConsumer(ctx, rr, o.Owner)
	if err != nil {
		return nil // none yet (or not ours): created with o.AckWait
	}
	cur := c.CachedInfo().Config.AckWait
	if cur == LegacyAckWait || o.AckWait >= cur {
		return nil
	}
	return fmt.Errorf("%w: AckWait = %s is below the ack wait of the shared %s consumer (%s), which every seqworker replica relies on; "+
		"leave it unset (seqworker --ack-wait 0) to keep %s, or lower it for every replica on purpose with LowerAckWait (seqworker --lower-ack-wait): "+
		"the others follow it within seconds", ErrOptions, o.AckWait, ConsumerSeqworker, cur, cur)
}

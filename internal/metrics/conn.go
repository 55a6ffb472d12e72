package metrics

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/metric"
)

// ObserveConn registers observers of nc on mp: messages and bytes sent and
// received (messaging.client.sent.messages,
// messaging.client.consumed.messages, skillbus.nats.sent.bytes,
// skillbus.nats.received.bytes), reconnects (skillbus.nats.reconnects) and
// whether it is connected (skillbus.nats.connection.up), all read from
// nc.Stats() and nc.Status() at collection time, so recording costs
// nothing. Unregister the result when the connection is gone.
func ObserveConn(mp metric.MeterProvider, nc *nats.Conn) (metric.Registration, error) {
	m := mp.Meter(Scope)
	var err error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, e := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err == nil {
			err = e
		}
		return c
	}
	sent := counter(MessagingSent, "{message}", "Messages this process published to NATS")
	consumed := counter(MessagingConsumed, "{message}", "Messages this process received from NATS")
	sentBytes := counter(NATSSentBytes, "By", "Payload bytes this process published to NATS")
	recvBytes := counter(NATSReceivedBytes, "By", "Payload bytes this process received from NATS")
	reconnects := counter(NATSReconnects, "{reconnect}", "Reconnections to NATS since the process started")
	up, e := m.Int64ObservableGauge(NATSConnectionState, metric.WithUnit("{connection}"), metric.WithDescription("1 while connected to NATS, 0 while disconnected or reconnecting"))
	if err == nil {
		err = e
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: NATS connection instruments: %w", err)
	}
	system := metric.WithAttributes(NATSSystem())
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := nc.Stats()
		o.ObserveInt64(sent, int64(st.OutMsgs), system)
		o.ObserveInt64(consumed, int64(st.InMsgs), system)
		o.ObserveInt64(sentBytes, int64(st.OutBytes))
		o.ObserveInt64(recvBytes, int64(st.InBytes))
		o.ObserveInt64(reconnects, int64(st.Reconnects))
		var v int64
		if nc.IsConnected() {
			v = 1
		}
		o.ObserveInt64(up, v)
		return nil
	}, sent, consumed, sentBytes, recvBytes, reconnects, up)
}

package seqworker

import (
	"encoding/json"
	"testing"
)

// pubAckByJSON decodes a publish acknowledgement as jetstream does.
func pubAckByJSON(b []byte) (seq uint64, ok bool) {
	var ack struct {
		Error  *json.RawMessage `json:"error"`
		Stream string           `json:"stream"`
		Seq    uint64           `json:"seq"`
	}
	if err := json.Unmarshal(b, &ack); err != nil || ack.Error != nil || ack.Stream == "" {
		return 0, false
	}
	return ack.Seq, true
}

var pubAcks = []string{
	`{"stream":"KV_RUNS","seq":1}`,
	`{"stream":"KV_RUNS","seq":18446744073709551615}`,
	`{"stream":"KV_RUNS","seq":18446744073709551616}`,
	`{"stream":"KV_RUNS","seq":42,"duplicate":true}`,
	`{"stream":"KV_RUNS","domain":"hub","seq":7}`,
	`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"KV_RUNS","seq":0}`,
	`{"stream":"KV_RUNS","seq":5,"error":{"code":503}}`,
	`{"stream":"KV_RUNS","seq":}`,
	`{"stream":"KV_RUNS","seq":12`,
	`{"stream":"","seq":3}`,
	`{"stream":"KV_RUNS","seq":-3}`,
	`{"stream":"KV_RUNS","seq":3.5}`,
	``, `null`, `{}`,
}

func TestParsePubAck(t *testing.T) {
	for _, s := range pubAcks {
		got, ok := parsePubAck([]byte(s))
		want, wok := pubAckByJSON([]byte(s))
		if ok && (!wok || got != want) {
			t.Errorf("parsePubAck(%s) = %d, true; encoding/json reads %d, %v", s, got, want, wok)
		}
	}
	if seq, ok := parsePubAck([]byte(`{"stream":"KV_RUNS","seq":123}`)); !ok || seq != 123 {
		t.Errorf("plain acknowledgement: got %d, %v; want 123, true", seq, ok)
	}
}

// FuzzParsePubAck: whatever parsePubAck accepts, encoding/json reads as
// the same success.
func FuzzParsePubAck(f *testing.F) {
	for _, s := range pubAcks {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parsePubAck(b)
		if !ok {
			return
		}
		want, wok := pubAckByJSON(b)
		if !wok || got != want {
			t.Fatalf("parsePubAck(%q) = %d, true; encoding/json reads %d, %v", b, got, want, wok)
		}
	})
}

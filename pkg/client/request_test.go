package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/toolcall"
)

// TestRequester: the shared request/reply helper with its defaults: a
// []byte request sent as it is and a raw reply kept as it is; an error
// reply's whole text from its body; no responders and a silent service
// as ErrUnavailable; Cap cuts a longer deadline to Timeout.
func TestRequester(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	if _, err := nc.Subscribe("t.echo", func(m *nats.Msg) { _ = m.Respond(m.Data) }); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("t.fail", func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		r.Header.Set(micro.ErrorCodeHeader, "404")
		r.Header.Set(micro.ErrorHeader, "cut")
		r.Data = []byte(`{"code":"404","error":"the whole text"}`)
		_ = m.RespondMsg(r)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Subscribe("t.silent", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var r client.Requester
	var raw json.RawMessage
	if err := r.Do(ctx, nc, "t.echo", []byte(`{"a": 1}`), &raw); err != nil || string(raw) != `{"a": 1}` {
		t.Errorf("echo = %s, %v; want the bytes as sent", raw, err)
	}
	err := r.Do(ctx, nc, "t.fail", struct{}{}, nil)
	var te *toolcall.Error
	if !errors.Is(err, client.ErrNotFound) || !errors.As(err, &te) || te.Description != "the whole text" {
		t.Errorf("error reply = %v; want ErrNotFound with the body's text", err)
	}
	if err := r.Do(ctx, nc, "t.nobody", struct{}{}, nil); !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "no service answers on t.nobody") {
		t.Errorf("no responders = %v; want ErrUnavailable naming the subject", err)
	}
	start := time.Now()
	err = client.Requester{Timeout: 200 * time.Millisecond, Cap: true}.Do(ctx, nc, "t.silent", struct{}{}, nil)
	if took := time.Since(start); !errors.Is(err, client.ErrUnavailable) || took > 5*time.Second {
		t.Errorf("silent service = %v after %s; want ErrUnavailable after about 200ms", err, took.Round(time.Millisecond))
	}
	if err := r.Do(ctx, nc, "t.echo", func() {}, nil); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("a request that is not JSON = %v; want ErrInvalid", err)
	}
}

package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/client"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestErrClosed: every method on a closed connection returns ErrClosed
// (also nats.ErrConnectionClosed), never ErrUnavailable, and at once.
func TestErrClosed(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calls := map[string]func() error{
		"Start": func() error {
			_, err := c.Start(ctx, events.SeqRunRequest{Sequence: "x", RunID: "closed-1"})
			return err
		},
		"Status": func() error { _, err := c.Status(ctx, "closed-1"); return err },
		"List":   func() error { _, err := c.List(ctx, events.SeqListRequest{}); return err },
		"Cancel": func() error { _, err := c.Cancel(ctx, "closed-1", "me", "test"); return err },
		"Wait": func() error {
			_, err := c.Wait(ctx, "closed-1", client.WaitOptions{})
			return err
		},
		"SkillList": func() error { _, err := c.SkillList(ctx); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		if !errors.Is(err, client.ErrClosed) || !errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, client.ErrUnavailable) {
			t.Errorf("%s on a closed connection = %v; want ErrClosed wrapping nats.ErrConnectionClosed, not ErrUnavailable", name, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s on a closed connection took %s; want at once", name, took.Round(time.Millisecond))
		}
	}
}

// TestErrInvalid: a caller's mistake found before sending is ErrInvalid,
// not the service's ErrBadRequest.
func TestErrInvalid(t *testing.T) {
	srv := natsserver.StartTB(t, natsserver.Options{})
	nc := natsserver.ConnectTB(t, srv)
	if _, err := client.New(nil); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("New(nil) = %v; want ErrInvalid", err)
	}
	if _, err := client.New(nc, client.WithTimeout(time.Millisecond)); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("WithTimeout(1ms) = %v; want ErrInvalid", err)
	}
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for name, err := range map[string]error{
		"Wait(bad id)":     func() error { _, err := c.Wait(ctx, "no spaces", client.WaitOptions{}); return err }(),
		"Status(bad id)":   func() error { _, err := c.Status(ctx, "no spaces"); return err }(),
		"Rerun(onto self)": func() error { _, err := c.Rerun(ctx, "r-1", "r-1"); return err }(),
		"List(bad cursor)": func() error { _, err := c.List(ctx, events.SeqListRequest{Before: "GARBAGE"}); return err }(),
	} {
		if !errors.Is(err, client.ErrInvalid) || errors.Is(err, client.ErrBadRequest) || errors.Is(err, client.ErrUnavailable) {
			t.Errorf("%s = %v; want ErrInvalid only", name, err)
		}
	}
}

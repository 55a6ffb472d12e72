package events_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestProvisionIncompatible: each refusal no retry can get past is an
// *IncompatibleError naming the resource, the setting and, in words, what
// is wrong — on a real server, set up as an operator might have left it.
func TestProvisionIncompatible(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  func(ctx context.Context, js jetstream.JetStream) error
		o       events.Options
		setting events.Incompatibility
		text    string
		holder  string
	}{
		{"replicas on a lone server", nil, events.Options{Replicas: 3}, events.IncompatibleReplicas,
			"events: provisioning failed: bucket SKILLS: 3 replicas need a JetStream cluster, and this NATS server is not in one (nats: API error: code=500 err_code=10074 description=replicas > 1 not supported in non-clustered mode)", ""},
		{"storage", func(ctx context.Context, js jetstream.JetStream) error {
			return events.Provision(ctx, js, events.Options{})
		}, events.Options{Storage: jetstream.MemoryStorage}, events.IncompatibleStorage,
			"events: provisioning failed: bucket SKILLS: it was created with file storage, and the server cannot change a stream's storage to memory (nats: API error: code=500 err_code=10052 description=stream configuration update can not change storage type)", ""},
		{"subjects held by another stream", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MINE", Subjects: []string{"events.agent.>"}})
			return err
		}, events.Options{}, events.IncompatibleSubjects,
			"events: provisioning failed: stream EVENTS: the stream MINE already takes (some of) its subjects events.>, and the server gives a subject to one stream only (nats: API error: code=400 err_code=10065 description=subjects overlap with an existing stream)", "MINE"},
		{"work queue over a limits stream", func(ctx context.Context, js jetstream.JetStream) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamSeqRuns, Subjects: []string{events.SubjectRunAll}})
			return err
		}, events.Options{}, events.IncompatibleConfig,
			"events: provisioning failed: stream SEQ_RUNS: it exists with settings the server cannot change to skillbus's: can not change retention policy to/from workqueue (nats: API error: code=500 err_code=10052 description=stream configuration update can not change retention policy to/from workqueue)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := natsserver.StartTB(t, natsserver.Options{})
			js, err := jetstream.New(natsserver.ConnectTB(t, s))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.before != nil {
				if err := tc.before(ctx, js); err != nil {
					t.Fatal(err)
				}
			}
			err = events.Provision(ctx, js, tc.o)
			var ie *events.IncompatibleError
			if !errors.As(err, &ie) || !errors.Is(err, events.ErrIncompatible) || !errors.Is(err, events.ErrProvision) {
				t.Fatalf("Provision = %v; want an IncompatibleError", err)
			}
			if ie.Setting != tc.setting || ie.Holder != tc.holder || err.Error() != tc.text {
				t.Errorf("Provision = %q (setting %s, holder %q);\nwant %q (setting %s, holder %q)", err, ie.Setting, ie.Holder, tc.text, tc.setting, tc.holder)
			}
			var ae *jetstream.APIError
			if !errors.As(err, &ae) {
				t.Errorf("the server's error is not in the chain: %v", err)
			}
		})
	}
}

// TestProvisionTransientNotIncompatible: a failure a retry can get past
// (here the deadline of an attempt) is ErrProvision, not ErrIncompatible.
func TestProvisionTransientNotIncompatible(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{})
	js, err := jetstream.New(natsserver.ConnectTB(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = events.Provision(ctx, js, events.Options{})
	if err == nil || errors.Is(err, events.ErrIncompatible) {
		t.Errorf("Provision(cancelled) = %v; want an error that is not ErrIncompatible", err)
	}
}

// TestProvisionStoreTooSmall: on a server whose JetStream store (here
// max_file_store 100 MB) cannot hold the default byte limits, which the
// server reserves when it makes a stream, Provision fails at once with an
// IncompatibleError about the size (retrying cannot make room), naming the
// defaults.
func TestProvisionStoreTooSmall(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("jetstream { max_file_store: 100M }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := natsserver.StartTB(t, natsserver.Options{ConfigFile: conf})
	js, err := jetstream.New(natsserver.ConnectTB(t, s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = events.Provision(ctx, js, events.Options{})
	var ie *events.IncompatibleError
	if !errors.As(err, &ie) || ie.Setting != events.IncompatibleSize || !strings.Contains(err.Error(), "704 MiB") {
		t.Fatalf("Provision on a 100 MB store = %v; want an IncompatibleError about the size naming the defaults", err)
	}
	// Smaller limits fit.
	small := events.Options{RunsMaxBytes: 16 << 20, RunSlotsMaxBytes: 16 << 20, EventsMaxBytes: 16 << 20, SeqRunsMaxBytes: 16 << 20}
	if err := events.Provision(ctx, js, small); err != nil {
		t.Fatalf("Provision with 64 MiB of limits on a 100 MB store: %v", err)
	}
}

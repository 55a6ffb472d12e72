package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillbus/skillbus/internal/builtin"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/registry"
	"github.com/skillbus/skillbus/pkg/events"
)

// TestStack starts the whole stack, checks that each service answers over
// the embedded server, and that Stop removes a temporary store.
func TestStack(t *testing.T) {
	defs, root := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(defs, "s.seq.yaml"), []byte("name: ds-seq\ngroups:\n  - name: ds-g\n    tools:\n      - tool: fs.list\n"), 0o644)
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, Config{Dir: defs, Tools: builtin.Config{Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	store := s.StoreDir()
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, tc := range []struct{ subject, body, want string }{
		{registry.SubjectSeqList, `{}`, `"ds-seq"`},
		{"tool.fs.read", `{"path":"hello.txt"}`, `"content":"hi\n"`},
		{events.SeqCallSubject, `{"v":1,"group":"ds-g"}`, `"status":"succeeded"`},
		{"skillbus.skillface.info", `{}`, ``},
	} {
		msg, err := nc.Request(tc.subject, []byte(tc.body), 10*time.Second)
		if err != nil {
			t.Errorf("request %s: %v", tc.subject, err)
			continue
		}
		if !json.Valid(msg.Data) || !strings.Contains(string(msg.Data), tc.want) || msg.Header.Get("Nats-Service-Error-Code") != "" && tc.want != "" {
			t.Errorf("request %s = %s; want it to hold %s", tc.subject, msg.Data, tc.want)
		}
	}
	if got, _ := filepath.EvalSymlinks(root); s.ToolsRoot() != got {
		t.Errorf("ToolsRoot() = %q; want %q", s.ToolsRoot(), got)
	}
	nc.Close()
	if err := s.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary store %s still there after Stop (%v)", store, err)
	}
}

func TestStartFailsCleanly(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, Config{Tools: builtin.Config{Root: filepath.Join(t.TempDir(), "missing")}}); err == nil {
		t.Error("Start with a missing tools root succeeded")
	}
}

// BenchmarkStartStop measures what `skillbus run` without NATS_URL pays
// before and after a run: starting and stopping the whole stack, against a
// baseline of the embedded server alone.
func BenchmarkStartStop(b *testing.B) {
	ctx := context.Background()
	b.Run("server-only", func(b *testing.B) {
		for b.Loop() {
			srv, err := natsserver.Start(natsserver.Options{})
			if err != nil {
				b.Fatal(err)
			}
			nc, err := srv.Connect()
			if err != nil {
				b.Fatal(err)
			}
			nc.Close()
			srv.Shutdown()
		}
	})
	root := b.TempDir()
	b.Run("stack", func(b *testing.B) {
		for b.Loop() {
			s, err := Start(ctx, Config{Tools: builtin.Config{Root: root}})
			if err != nil {
				b.Fatal(err)
			}
			s.Stop(ctx)
		}
	})
}

// TestSharedDataDirRefused starts a stack on a data directory and a second
// one on the same directory: the second fails at once with
// natsserver.ErrStoreInUse and the first keeps serving.
func TestSharedDataDirRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data := t.TempDir()
	first, err := Start(ctx, Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Stop(ctx)
	start := time.Now()
	second, err := Start(ctx, Config{DataDir: data})
	if err == nil {
		second.Stop(ctx)
		t.Fatalf("Start(DataDir %s) while another stack uses it succeeded; want ErrStoreInUse", data)
	}
	if !errors.Is(err, natsserver.ErrStoreInUse) || time.Since(start) > 2*time.Second {
		t.Errorf("second Start = %v after %v; want ErrStoreInUse at once", err, time.Since(start))
	}
	nc, err := nats.Connect(first.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Request(registry.SubjectSeqList, []byte(`{}`), 5*time.Second); err != nil {
		t.Errorf("the first stack's registry after the refused start: %v", err)
	}
}

package servicecmd_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/auth"
	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/internal/servicecmd"
)

// violations is a nats-server logger keeping the permission violations.
type violations struct {
	mu   sync.Mutex
	list []string
}

func (v *violations) Errorf(f string, a ...any) {
	if s := fmt.Sprintf(f, a...); strings.Contains(s, "Violation") {
		v.mu.Lock()
		v.list = append(v.list, s)
		v.mu.Unlock()
	}
}
func (v *violations) Noticef(string, ...any) {}
func (v *violations) Warnf(string, ...any)   {}
func (v *violations) Fatalf(string, ...any)  {}
func (v *violations) Debugf(string, ...any)  {}
func (v *violations) Tracef(string, ...any)  {}

// TestProvisionAsRoleOwner starts the three services, in the worst order,
// on a server that trusts the users of `skillbus auth`, each with its
// role's creds: each provisions as the owner its creds name (updating only
// what it owns, which is all its user may update), so all of them start
// and the server logs no permission violation (docs/security.md).
func TestProvisionAsRoleOwner(t *testing.T) {
	cleanEnv(t)
	setup, err := auth.Generate(auth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	logs := &violations{}
	srv := natsserver.StartTB(t, natsserver.Options{ConfigFile: setup.AuthConfig(), Logger: logs})
	for _, role := range []string{auth.RoleSkillface, auth.RoleRegistry, auth.RoleSeqworker} {
		f, _, _ := flags(t, "--nats", srv.ClientURL(), "--creds", setup.CredsFile(role), "--memory")
		o := provision(f)
		ready := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- f.Run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), servicecmd.Spec{Provision: o, New: func(rt servicecmd.Runtime) (servicecmd.Service, error) {
				close(ready)
				return newFake(), nil
			}})
		}()
		select {
		case <-ready:
		case code := <-done:
			t.Fatalf("%s exited %d before its service was made", role, code)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not provision within 30 s (violations: %q)", role, logs.list)
		}
		if o.Owner != role {
			t.Errorf("%s provisioned as owner %q; want %q (from its creds)", role, o.Owner, role)
		}
		cancel()
		<-done
	}
	if len(logs.list) > 0 {
		t.Errorf("the server logged permission violations while the services provisioned:\n%s", strings.Join(logs.list, "\n"))
	}
}

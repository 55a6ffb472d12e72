package skillface

import (
	"context"
	"encoding/json"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/skill"
)

// plainStore hides MemoryStore's SessionTTL: a store that does not report
// its TTL.
type plainStore struct{ m *MemoryStore }

func (p plainStore) Get(ctx context.Context, id string) ([]byte, uint64, error) {
	return p.m.Get(ctx, id)
}

func (p plainStore) CompareAndSet(ctx context.Context, id string, v []byte, rev uint64) (uint64, error) {
	return p.m.CompareAndSet(ctx, id, v, rev)
}

// writeEnv is an Assembler over a memory store with a TTL, on a clock the
// test moves.
type writeEnv struct {
	t     *testing.T
	a     *Assembler
	m     *MemoryStore
	clock time.Time
	// now is clock as the Assembler and the store read it: a read left
	// running by a call (see update) may read it after the call returned.
	now atomic.Int64
}

func newWriteEnv(t *testing.T, ttl time.Duration, reportTTL bool) *writeEnv {
	t.Helper()
	e := &writeEnv{t: t, m: NewMemoryStore(ttl), clock: time.Unix(1_700_000_000, 0)}
	var store SessionStore = e.m
	if !reportTTL {
		store = plainStore{e.m}
	}
	a, err := New(WithSessionStore(store))
	if err != nil {
		t.Fatal(err)
	}
	e.now.Store(e.clock.UnixNano())
	a.cfg.now = func() time.Time { return time.Unix(0, e.now.Load()) }
	e.m.now = a.cfg.now
	s := skill.Skill{Name: "deploy", Description: "Deploys.", Version: 1, Invocation: skill.InvocationBoth,
		Context: skill.ContextInline, Format: skill.FormatMarkdown, Body: "# Deploy\n", Fingerprint: "sha256:d1",
		Triggers: []string{"deploy"}}
	if err := a.SetSkills([]skill.Skill{s}); err != nil {
		t.Fatal(err)
	}
	e.a = a
	return e
}

// turn assembles one user turn and returns the response and the session's
// stored revision and state afterwards.
func (e *writeEnv) turn(round int64, text string) (Response, uint64, sessionState) {
	e.t.Helper()
	e.now.Store(e.clock.UnixNano())
	req := Request{SessionID: "s", Round: round, Messages: []Message{{Role: RoleUser, Content: text}}}
	resp, err := e.a.Assemble(context.Background(), req)
	if err != nil {
		e.t.Fatalf("round %d: %v", round, err)
	}
	raw, rev, err := e.m.Get(context.Background(), "s")
	if err != nil {
		e.t.Fatalf("round %d: read the session: %v", round, err)
	}
	var st sessionState
	if err := json.Unmarshal(raw, &st); err != nil {
		e.t.Fatal(err)
	}
	return resp, rev, st
}

// TestWriteSkippedWhenOnlyTheRoundChanges: a call that activates nothing new
// leaves the stored session untouched, a retry of an activating call gets
// the same answer from the stored state, and a session in use is rewritten
// once its last write is a quarter of the TTL old.
func TestWriteSkippedWhenOnlyTheRoundChanges(t *testing.T) {
	e := newWriteEnv(t, 4*time.Hour, true)
	first, rev1, st1 := e.turn(1, "please deploy")
	if !reflect.DeepEqual(first.Activated, []string{"deploy"}) || st1.Written != e.clock.Unix() || st1.Round != 1 {
		t.Fatalf("round 1: activated %v, stored %+v; want deploy activated and the state written now", first.Activated, st1)
	}

	e.clock = e.clock.Add(time.Minute)
	resp2, rev2, st2 := e.turn(2, "carry on")
	if rev2 != rev1 || !reflect.DeepEqual(st2, st1) {
		t.Errorf("round 2 changed nothing but the round, yet the session was written: revision %d -> %d, %+v -> %+v", rev1, rev2, st1, st2)
	}
	if !reflect.DeepEqual(resp2.Active, []string{"deploy"}) || len(resp2.Activated) != 0 || len(resp2.Messages) != 3 {
		t.Errorf("round 2 = active %v, activated %v, %d messages; want deploy still injected, nothing newly activated",
			resp2.Active, resp2.Activated, len(resp2.Messages))
	}

	// A retry of round 1 (its reply was lost) is answered from the stored
	// state exactly as the first time, and writes nothing.
	retry, rev3, _ := e.turn(1, "please deploy")
	if !reflect.DeepEqual(retry, first) || rev3 != rev1 {
		t.Errorf("retry of round 1 = %+v (revision %d); want %+v (revision %d)", retry, rev3, first, rev1)
	}
	if got := e.a.Stats().SkippedWrites; got != 2 {
		t.Errorf("SkippedWrites = %d; want 2", got)
	}

	// Just under a quarter of the TTL since the last write: still skipped.
	e.clock = time.Unix(st1.Written, 0).Add(time.Hour - time.Second)
	if _, rev, _ := e.turn(3, "carry on"); rev != rev1 {
		t.Errorf("round 3, %s after the last write: revision %d; want %d (no write)", time.Hour-time.Second, rev, rev1)
	}
	// A quarter of the TTL: rewritten, so that the TTL counts from now.
	e.clock = time.Unix(st1.Written, 0).Add(time.Hour)
	_, rev4, st4 := e.turn(4, "carry on")
	if rev4 == rev1 || st4.Written != e.clock.Unix() || st4.Round != 4 || !st4.sameSkills(&st1) {
		t.Errorf("round 4, a quarter of the TTL after the last write: revision %d (was %d), stored %+v; want a rewrite at round 4 with the same skills",
			rev4, rev1, st4)
	}
	// The session lives on past the TTL of its first write.
	e.clock = time.Unix(st1.Written, 0).Add(4*time.Hour + time.Minute)
	if resp, _, _ := e.turn(5, "carry on"); !reflect.DeepEqual(resp.Active, []string{"deploy"}) {
		t.Errorf("round 5, past the TTL of the first write but within that of the refresh: active %v; want deploy", resp.Active)
	}
}

// TestWriteEveryCallWithoutTTL: a store that does not report its TTL gets
// a write on every call (the skip would risk expiring a session in use).
func TestWriteEveryCallWithoutTTL(t *testing.T) {
	e := newWriteEnv(t, 4*time.Hour, false)
	_, rev1, _ := e.turn(1, "please deploy")
	_, rev2, st2 := e.turn(2, "carry on")
	if rev2 == rev1 || st2.Round != 2 {
		t.Errorf("round 2 on a store without a known TTL: revision %d -> %d, round %d; want a write", rev1, rev2, st2.Round)
	}
	if got := e.a.Stats().SkippedWrites; got != 0 {
		t.Errorf("SkippedWrites = %d; want 0", got)
	}
}

// TestWriteAfterClockSkew: a state whose Written lies in the future (a
// writer whose clock ran ahead), or that has no Written (an older
// version), is rewritten rather than trusted.
func TestWriteAfterClockSkew(t *testing.T) {
	for name, written := range map[string]func(now time.Time) int64{
		"written in the future": func(now time.Time) int64 { return now.Add(time.Hour).Unix() },
		"no written time":       func(time.Time) int64 { return 0 },
	} {
		t.Run(name, func(t *testing.T) {
			e := newWriteEnv(t, 4*time.Hour, true)
			st := sessionState{Round: 1, Active: []activeSkill{{Name: "deploy", Fingerprint: "sha256:d1", Round: 1}},
				Written: written(e.clock)}
			b, _ := json.Marshal(st)
			e.now.Store(e.clock.UnixNano())
			rev0, err := e.m.CompareAndSet(context.Background(), "s", b, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, rev, got := e.turn(2, "carry on")
			if rev == rev0 || got.Written != e.clock.Unix() {
				t.Errorf("revision %d -> %d, written %d; want a rewrite at %d", rev0, rev, got.Written, e.clock.Unix())
			}
		})
	}
}

// TestWriteSkipNeverExpiring: with a TTL of 0 (sessions never expire) a
// call that changes nothing is never written, however old the last write.
func TestWriteSkipNeverExpiring(t *testing.T) {
	e := newWriteEnv(t, 0, true)
	_, rev1, _ := e.turn(1, "please deploy")
	e.clock = e.clock.Add(365 * 24 * time.Hour)
	if _, rev, _ := e.turn(2, "carry on"); rev != rev1 {
		t.Errorf("revision %d -> %d; want no write on a store that never expires sessions", rev1, rev)
	}
}

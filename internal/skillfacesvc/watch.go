package skillfacesvc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/skill"
	"github.com/skillbus/skillbus/pkg/streamread"
)

// load starts a watch of the whole SKILLS bucket under watchCtx and applies
// its initial values (the latest revision of every key), waiting for the
// end-of-initial-values marker until ctx is done. Keys this replica knew but
// the bucket no longer holds are deleted (a re-watch after a lost watch).
func (s *Service) load(ctx, watchCtx context.Context) (jetstream.KeyWatcher, error) {
	// No consumer on SKILLS: the registry owns it (docs/security.md,
	// "Consumers"); direct gets woken by the bucket's core messages.
	w, err := streamread.WatchKV(watchCtx, s.nc, events.BucketSkills, func(err error) {
		s.log.Warn("reading SKILLS; trying again", "err", err)
	})
	if err != nil {
		return nil, fmt.Errorf("skillfacesvc: watch %s: %w", events.BucketSkills, err)
	}
	seen := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			_ = w.Stop()
			return nil, fmt.Errorf("skillfacesvc: initial load of %s (%d keys read): %w", events.BucketSkills, len(seen), ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("skillfacesvc: initial load of %s: the watch ended (%d keys read)", events.BucketSkills, len(seen))
			}
			if e == nil {
				s.forgetExcept(seen)
				return w, nil
			}
			seen[e.Key()] = true
			s.apply(e)
		}
	}
}

// follow applies every later change of the bucket until ctx is done. When
// the watch ends on its own (the connection was closed and reopened, the
// bucket was recreated), it watches again with backoff and reconciles.
func (s *Service) follow(ctx context.Context, w jetstream.KeyWatcher) {
	defer close(s.done)
	for {
		for w != nil {
			select {
			case <-ctx.Done():
				_ = w.Stop()
				return
			case e, ok := <-w.Updates():
				switch {
				case !ok:
					s.log.Warn("the SKILLS watch ended; watching again", "bucket", events.BucketSkills)
					w = nil
				case e != nil:
					s.apply(e)
				}
			}
		}
		for delay := 100 * time.Millisecond; w == nil; delay = min(2*delay, 5*time.Second) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			lctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
			var err error
			w, err = s.load(lctx, ctx)
			cancel()
			if err != nil {
				s.log.Warn("cannot watch the SKILLS bucket; retrying", "err", err, "retry_in", delay)
			}
		}
	}
}

// apply applies one bucket entry: a put replaces the skill of that key (an
// unusable record is logged and the previous version kept), a delete or
// purge removes it.
func (s *Service) apply(e jetstream.KeyValueEntry) {
	key := e.Key()
	defer s.advance(e.Revision())
	switch e.Operation() {
	case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
		s.mu.Lock()
		name, ok := s.keys[key]
		delete(s.keys, key)
		if ok {
			delete(s.skills, name)
		}
		s.mu.Unlock()
		if ok {
			s.asm.DeleteSkill(name)
			s.log.Info("skill removed", "skill", name, "revision", e.Revision())
		}
		return
	}
	var sk skill.Skill
	if err := json.Unmarshal(e.Value(), &sk); err != nil {
		s.log.Error("skill record is not valid JSON; keeping the previous version", "key", key, "revision", e.Revision(), "err", err)
		return
	}
	if want, err := events.NameForKey(key); err != nil || want != sk.Name {
		s.log.Warn("skill record is stored under a key that does not match its name; using the record's name",
			"key", key, "name", sk.Name, "key_name", want)
	}
	if err := s.asm.PutSkill(sk); err != nil {
		s.log.Error("skill record cannot be used; keeping the previous version", "key", key, "revision", e.Revision(), "err", err)
		return
	}
	s.mu.Lock()
	old, had := s.keys[key]
	s.keys[key] = sk.Name
	s.skills[sk.Name] = &sk
	s.mu.Unlock()
	if had && old != sk.Name {
		s.forgetName(old)
	}
	s.log.Debug("skill loaded", "skill", sk.Name, "fingerprint", sk.Fingerprint, "revision", e.Revision())
}

// forgetName removes a skill that no key holds any more.
func (s *Service) forgetName(name string) {
	s.mu.Lock()
	for _, n := range s.keys {
		if n == name {
			s.mu.Unlock()
			return
		}
	}
	delete(s.skills, name)
	s.mu.Unlock()
	s.asm.DeleteSkill(name)
}

// forgetExcept removes every skill whose key is not in keep.
func (s *Service) forgetExcept(keep map[string]bool) {
	s.mu.Lock()
	var gone []string
	for key, name := range s.keys {
		if !keep[key] {
			delete(s.keys, key)
			gone = append(gone, name)
		}
	}
	s.mu.Unlock()
	for _, name := range gone {
		s.forgetName(name)
		s.log.Info("skill removed", "skill", name)
	}
}

// advance records that every bucket revision up to rev is applied and wakes
// the requests waiting for it.
func (s *Service) advance(rev uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev <= s.applied {
		return
	}
	s.applied = rev
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitRevision waits until the bucket view has reached rev, for at most
// Config.RevisionWait or until ctx is done; it reports the revision reached.
func (s *Service) waitRevision(ctx context.Context, rev uint64) (uint64, bool) {
	t := time.NewTimer(s.cfg.RevisionWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		applied, ch := s.applied, s.changed
		s.mu.Unlock()
		if applied >= rev {
			return applied, true
		}
		select {
		case <-ch:
		case <-t.C:
			return applied, false
		case <-ctx.Done():
			return applied, false
		}
	}
}

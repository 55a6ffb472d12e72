package registry

import (
	"context"
	"errors"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDirs brings the set of watched directories in line with dirs (the
// directories of the last scan). Only the watch loop (and Start, before
// it) calls it.
func (r *Registry) watchDirs(dirs []string) (added int) {
	want := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		want[d] = true
		if r.watched[d] {
			continue
		}
		if err := r.watcher.Add(d); err != nil {
			r.log.Warn("cannot watch directory; changes in it are seen at the next resync", "dir", d, "err", err)
			continue
		}
		r.watched[d] = true
		added++
	}
	for d := range r.watched {
		if !want[d] {
			_ = r.watcher.Remove(d) // gone already, usually
			delete(r.watched, d)
		}
	}
	return added
}

// watchLoop turns file-system events into debounced rescans: a rescan runs
// once the tree has been quiet for the quiet window — Debounce, or the
// time the last rescan took when that is longer, so a large tree is not
// rescanned back to back — or MaxDelay after the first event of a steady
// stream, and every Resync regardless. New directories get watched after
// the rescan that finds them, and one more rescan follows so files written
// before the watch was in place are not missed. A file found invalid just
// after it changed is rescanned settleTime after that change before it is
// reported (rescan).
func (r *Registry) watchLoop(ctx context.Context) {
	defer close(r.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var resync <-chan time.Time
	if r.cfg.Resync > 0 {
		t := time.NewTicker(r.cfg.Resync)
		defer t.Stop()
		resync = t.C
	}
	pending := false
	var first time.Time
	var lastScan time.Duration // how long the last rescan took
	schedule := func(now time.Time) {
		if !pending {
			pending, first = true, now
		}
		delay := max(r.cfg.Debounce, lastScan)
		if limit := first.Add(r.cfg.MaxDelay); now.Add(delay).After(limit) {
			delay = max(limit.Sub(now), 0)
		}
		timer.Reset(delay)
	}
	// Failed bucket writes are retried with exponential backoff (from
	// Debounce up to 30 s), not in a tight loop while NATS is away.
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	// settle fires when a file found invalid just after a change has been
	// left alone long enough to be reported.
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	failures := 0
	rescan := func() {
		pending = false
		start := time.Now()
		dirs, recheck, err := r.rescan(ctx, true)
		lastScan = time.Since(start)
		if err != nil && ctx.Err() == nil {
			failures++
			delay := min(max(r.cfg.Debounce, 10*time.Millisecond)<<min(failures, 12), 30*time.Second)
			r.log.Error("rescan incomplete; retrying", "err", err, "in", delay)
			retry.Reset(delay)
		} else {
			failures = 0
		}
		if recheck > 0 {
			settle.Reset(recheck)
		}
		if ctx.Err() == nil && r.watchDirs(dirs) > 0 {
			schedule(time.Now())
		}
	}
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ev, ok := <-r.watcher.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename) {
				// A watched directory removed or moved away: its watch is
				// gone with it, so forget it, and the rescan watches a
				// directory made again at the same path.
				if r.watched[ev.Name] {
					_ = r.watcher.Remove(ev.Name)
					delete(r.watched, ev.Name)
				}
			}
			schedule(time.Now())
		case err, ok := <-r.watcher.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				r.log.Warn("file-system events were dropped; rescanning the whole tree")
			} else {
				r.log.Warn("file watcher", "err", err)
			}
			schedule(time.Now())
		case <-timer.C:
			rescan()
		case <-retry.C:
			rescan()
		case <-settle.C:
			rescan()
		case <-resync:
			rescan()
		}
	}
}

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// isTerminal reports whether w is a character device (a terminal), so that
// progress can redraw a live line; pipes, files and buffers get plain lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// progress shows a run's progress: one block per finished group (its calls
// with status, attempts, duration and error) and, on a terminal, a live line
// for the group that is running.
type progress struct {
	w     io.Writer
	tty   bool
	s     *seq.Sequence
	runID string
	t0    time.Time

	mu      sync.Mutex // mu guards the fields below and writes to w
	next    int        // 0-based index of the group running now
	groupT0 time.Time
	done    chan struct{}
	stopped bool
	wg      sync.WaitGroup
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func newProgress(w io.Writer, s *seq.Sequence, runID string) *progress {
	return &progress{w: w, tty: isTerminal(w), s: s, runID: runID, t0: time.Now(), groupT0: time.Now(), done: make(chan struct{})}
}

func (p *progress) start() {
	fmt.Fprintf(p.w, "run %s: %s, %d group(s)\n", p.runID, p.s.Name, len(p.s.Groups))
	if !p.tty {
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.done:
				return
			case <-t.C:
			}
			p.mu.Lock()
			if p.next < len(p.s.Groups) {
				g := p.s.Groups[p.next]
				fmt.Fprintf(p.w, "\r\033[K%s group %d/%d %s: running %d call(s) %s", spinner[i%len(spinner)], p.next+1, len(p.s.Groups), g.Name, len(g.Tools), time.Since(p.groupT0).Round(100*time.Millisecond))
			}
			p.mu.Unlock()
		}
	}()
}

// group prints a finished group's block.
func (p *progress) group(ev *events.RunEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	var gr seq.GroupResult
	_ = json.Unmarshal(ev.Result, &gr)
	mark := map[string]string{"succeeded": "✓", "partial": "!", "skipped": "-", "failed": "✗"}[ev.Status]
	if mark == "" {
		mark = "·"
	}
	fmt.Fprintf(p.w, "%s group %d/%d %s: %s", mark, ev.Group, len(p.s.Groups), ev.GroupName, ev.Status)
	if gr.Status != seq.GroupSkipped {
		fmt.Fprintf(p.w, " in %s", roundDur(time.Duration(gr.Duration)))
	}
	if gr.Reason != "" {
		fmt.Fprintf(p.w, " (%s)", gr.Reason)
	}
	fmt.Fprintln(p.w)
	if gr.Status != seq.GroupSkipped {
		for _, c := range gr.Calls {
			fmt.Fprintf(p.w, "    %s: %s", callLabel(c), c.Status)
			if c.Attempts > 1 {
				fmt.Fprintf(p.w, " after %d attempts", c.Attempts)
			}
			if c.Attempts > 0 {
				fmt.Fprintf(p.w, " in %s", roundDur(time.Duration(c.Duration)))
			}
			if c.Error != "" {
				fmt.Fprintf(p.w, ": %s", c.Error)
			}
			fmt.Fprintln(p.w)
		}
	}
	if ev.Group >= p.next+1 {
		p.next = ev.Group
		p.groupT0 = time.Now()
	}
}

// finish prints the run's last line.
func (p *progress) finish(st *events.RunState) {
	p.stop()
	fmt.Fprintf(p.w, "run %s %s in %s\n", st.RunID, st.Status, roundDur(time.Since(p.t0)))
}

// stop ends the live line; safe to call more than once.
func (p *progress) stop() {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	close(p.done)
	p.mu.Unlock()
	p.wg.Wait()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func callLabel(c seq.CallResult) string {
	if c.As != "" {
		return c.Tool + " → " + c.As
	}
	return c.Tool
}

// roundDur rounds a duration for display: ms under 10 s, else 0.1 s.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < 10*time.Second:
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

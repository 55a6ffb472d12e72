package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/skillbus/skillbus/pkg/events"
	"github.com/skillbus/skillbus/pkg/seq"
)

// isTerminal reports whether w is a character device (a terminal), so that
// progress can redraw a live line; pipes, files and buffers get plain lines.
func isTerminal(w io.Writer) bool {
	w = rawWriter(w) // the terminal-safety step (termsafe.go)
	if rf, ok := w.(*refusalFilter); ok {
		w = rf.w // the command line's stderr, filtered (natsclient.go)
	}
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
	printed map[int]bool // 1-based numbers of the groups whose lines are out
	// held are group results that arrived before an earlier group's (a
	// resumed run whose earlier events were missed): printed once the
	// gap is filled, so the lines come out in group order.
	held map[int]*seq.GroupResult
	// upTo is how many groups, from the first, are out (printed, or
	// passed over by a flush of everything); notes are lines that belong
	// after group `after` (a wait, an interruption, a resume), held until
	// the groups before them are out. gated: a wait or an interruption
	// was said after group gateAt, so the later groups are held until the
	// resume is said — the events of a run may arrive in another order
	// than the one they tell (noteAfter).
	upTo    int
	notes   []heldNote
	gated   bool
	gateAt  int
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
				fmt.Fprint(rawWriter(p.w), "\r\033[K")
				fmt.Fprintf(p.w, "%s group %d/%d %s: running %d call(s) %s", spinner[i%len(spinner)], p.next+1, len(p.s.Groups), g.Name, len(g.Tools), time.Since(p.groupT0).Round(100*time.Millisecond))
			}
			p.mu.Unlock()
		}
	}()
}

// group prints a finished group's block from its run event, once every
// earlier group's block is out (else it is held until then).
func (p *progress) group(ev *events.RunEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	var gr seq.GroupResult
	_ = json.Unmarshal(ev.Result, &gr)
	if gr.Status == "" {
		gr.Status = seq.GroupStatus(ev.Status)
	}
	if gr.Name == "" {
		gr.Name = ev.GroupName
	}
	p.holdLocked(ev.Group, &gr)
	p.flushLocked(false)
}

// heldNote is a line of progress that belongs after group after
// (progress.notes).
type heldNote struct {
	after int
	text  string
	// opens holds the later groups until a closing note (a wait, an
	// interruption); closes ends that (a resume), and is said at once
	// after the groups up to after that are known, without waiting for
	// those whose events were missed.
	opens, closes bool
}

// event prints the line of a run event that is not a group's — an
// interruption, a resume, a wait, a signal, a cancel — where it belongs
// among the groups' blocks, by what it says rather than by when it came:
// a resume "after group N" comes after group N's block and before group
// N+1's, though the worker's later events may arrive first or the
// checkpoint read at the resume (st, nil when it could not be read)
// already holds later groups. st's finished groups up to N — groups whose
// events this process missed, finished on a worker that stopped — are
// printed first.
func (p *progress) event(ev *events.RunEvent, st *events.RunState) {
	text := eventLine(ev) // watch.go
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	switch ev.Kind {
	case events.RunResumed:
		var res seq.Result
		if st != nil && len(st.Result) > 0 && json.Unmarshal(st.Result, &res) == nil {
			for i := range res.Groups {
				if gr := &res.Groups[i]; gr.Status.Finished() && i+1 <= ev.Group {
					p.holdLocked(i+1, gr)
				}
			}
		}
		p.notes = append(p.notes, heldNote{after: ev.Group, text: text, closes: true})
	case events.RunInterrupted:
		p.notes = append(p.notes, heldNote{after: ev.Group, text: text, opens: true})
	case events.RunWaiting:
		// At group N: after group N-1.
		p.notes = append(p.notes, heldNote{after: max(ev.Group-1, 0), text: text, opens: true})
	case events.RunSignalled:
		p.notes = append(p.notes, heldNote{after: max(ev.Group-1, 0), text: text})
	default:
		p.noteLocked(text)
		return
	}
	p.flushLocked(false)
}

// note prints one line of its own (an interruption, a resume, what run
// waits for), clearing the live line first.
func (p *progress) note(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.noteLocked(text)
}

func (p *progress) noteLocked(text string) {
	if p.tty {
		fmt.Fprint(rawWriter(p.w), "\r\033[K")
	}
	fmt.Fprintln(p.w, strings.TrimRight(text, "\n"))
}

func (p *progress) holdLocked(n int, gr *seq.GroupResult) {
	if p.printed[n] {
		return
	}
	if p.held == nil {
		p.held = map[int]*seq.GroupResult{}
	}
	p.held[n] = gr
}

// flushLocked prints, in order, the held groups that follow the printed
// ones without a gap and the held notes whose groups are out; with all,
// every held group and note, passing over the groups that have none.
func (p *progress) flushLocked(all bool) {
	for {
		if len(p.notes) > 0 {
			hn := p.notes[0]
			if hn.after <= p.upTo || all || hn.closes {
				// A resume is said once the groups before it that are
				// known are out: one whose event was missed and that the
				// checkpoint lacks is passed over, not waited for.
				for n := p.upTo + 1; n <= hn.after && n <= len(p.s.Groups); n++ {
					p.passLocked(n)
				}
				p.noteLocked(hn.text)
				switch {
				case hn.opens:
					p.gated, p.gateAt = true, hn.after
				case hn.closes:
					p.gated = false
				}
				p.notes = p.notes[1:]
				continue
			}
		}
		n := p.upTo + 1
		if n > len(p.s.Groups) || p.gated && n > p.gateAt && !all {
			return
		}
		if _, ok := p.held[n]; !ok && !all {
			return
		}
		p.passLocked(n)
	}
}

// passLocked prints group n's held block, if any, and counts it out.
func (p *progress) passLocked(n int) {
	if gr, ok := p.held[n]; ok {
		delete(p.held, n)
		p.printGroup(n, gr)
	}
	if n > p.upTo {
		p.upTo = n
	}
}

// printGroup prints group n's (1-based) block once: a group whose line was
// printed already (from its event, or again after a resume) is not
// repeated. Callers hold p.mu.
func (p *progress) printGroup(n int, gr *seq.GroupResult) {
	if p.printed == nil {
		p.printed = map[int]bool{}
	}
	if p.printed[n] {
		return
	}
	p.printed[n] = true
	if p.tty {
		fmt.Fprint(rawWriter(p.w), "\r\033[K")
	}
	mark := map[seq.GroupStatus]string{seq.GroupSucceeded: "✓", seq.GroupPartial: "!", seq.GroupSkipped: "-", seq.GroupFailed: "✗", seq.GroupInterrupted: "✗"}[gr.Status]
	if mark == "" {
		mark = "·"
	}
	fmt.Fprintf(p.w, "%s group %d/%d %s: %s", mark, n, len(p.s.Groups), gr.Name, gr.Status)
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
			// A for_each call's attempts add up over its items: its
			// for_each line below says how many items did what.
			if c.Attempts > 1 && c.ForEach == nil {
				fmt.Fprintf(p.w, " after %d attempts", c.Attempts)
			}
			if c.Attempts > 0 {
				fmt.Fprintf(p.w, " in %s", roundDur(time.Duration(c.Duration)))
			}
			if c.Error != "" {
				fmt.Fprintf(p.w, ": %s", c.Error)
			}
			fmt.Fprintln(p.w)
			if f := c.ForEach; f != nil {
				fmt.Fprintf(p.w, "      for_each: %s\n", fanOutText(f))
				lines, more := itemLines(f)
				for _, it := range lines {
					fmt.Fprintf(p.w, "      %s: %s", seq.ItemLabel(it.Index), it.Status)
					if it.Error != "" && !strings.Contains(it.Error, "attempt") {
						fmt.Fprintf(p.w, " after %d attempt(s)", it.Attempts)
					}
					if it.Error != "" {
						fmt.Fprintf(p.w, ": %s", oneLine(it.Error, 200))
					}
					fmt.Fprintln(p.w)
				}
				if more > 0 {
					fmt.Fprintf(p.w, "      (%d more items not shown; --json lists them)\n", more)
				}
			}
		}
		if len(gr.Calls) == 0 && gr.Error != "" {
			fmt.Fprintf(p.w, "    %s\n", gr.Error)
		}
	}
	if n >= p.next+1 {
		p.next = n
		p.groupT0 = time.Now()
	}
}

// finish prints the lines of every finished group that has none yet — a
// group event may arrive after the final state, and an interrupted group
// has no event — from the run's stored result, then the run's last line.
func (p *progress) finish(st *events.RunState) {
	p.stop()
	var res seq.Result
	p.mu.Lock()
	if len(st.Result) > 0 && json.Unmarshal(st.Result, &res) == nil {
		for i := range res.Groups {
			if gr := &res.Groups[i]; gr.Status != seq.GroupPending && gr.Status != seq.GroupRunning && gr.Status != "" && i < len(p.s.Groups) {
				p.holdLocked(i+1, gr)
			}
		}
	}
	p.flushLocked(true)
	p.mu.Unlock()
	d := runDuration(st) // runshow.go: the same duration as the result's header
	if d <= 0 {
		d = time.Since(p.t0)
	}
	fmt.Fprintf(p.w, "run %s %s in %s\n", st.RunID, st.Status, roundDur(d))
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
		fmt.Fprint(rawWriter(p.w), "\r\033[K")
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

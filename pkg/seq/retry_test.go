package seq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/toolcall"
)

// No retry wait is longer than the documented maximum, whatever the
// jitter, and the waits are spread out, not stuck at a few values.
func TestRetryBackoffDistribution(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const runs = 5000
	const retries = 10
	waits := make([][]time.Duration, retries) // waits[n] = every wait before retry n+1
	for range runs {
		b := newRetryBackoff(DefaultRetryInitial, DefaultRetryMax, rng.Float64)
		for n := range retries {
			waits[n] = append(waits[n], b.NextBackOff())
		}
	}
	interval := DefaultRetryInitial
	for n, ws := range waits {
		lo := interval / 2
		hi := min(interval+interval/2, DefaultRetryMax)
		var sum, sq float64
		minW, maxW := ws[0], ws[0]
		atCap := 0
		for _, w := range ws {
			if w > DefaultRetryMax {
				t.Fatalf("wait %d is %v, longer than the maximum %v", n+1, w, DefaultRetryMax)
			}
			if w < lo || w > hi {
				t.Fatalf("wait %d is %v, outside [%v, %v]", n+1, w, lo, hi)
			}
			if w == DefaultRetryMax {
				atCap++
			}
			minW, maxW = min(minW, w), max(maxW, w)
			sum += float64(w)
			sq += float64(w) * float64(w)
		}
		mean := sum / runs
		sd := math.Sqrt(sq/runs - mean*mean)
		// Uniform on [lo, hi]: mean (lo+hi)/2, standard deviation (hi-lo)/√12.
		wantMean, wantSD := float64(lo+hi)/2, float64(hi-lo)/math.Sqrt(12)
		if math.Abs(mean-wantMean) > 0.03*wantMean || math.Abs(sd-wantSD) > 0.1*wantSD {
			t.Errorf("wait %d: mean %v sd %v; want about %v and %v (uniform on [%v, %v])", n+1, time.Duration(mean), time.Duration(sd), time.Duration(wantMean), time.Duration(wantSD), lo, hi)
		}
		// Not degenerate: the samples cover most of the range, and few sit exactly at the cap.
		if span := maxW - minW; span < (hi-lo)*9/10 {
			t.Errorf("wait %d: samples span only %v of [%v, %v]", n+1, span, lo, hi)
		}
		if atCap > runs/100 {
			t.Errorf("wait %d: %d of %d samples are exactly the cap", n+1, atCap, runs)
		}
		t.Logf("wait %2d: [%v, %v] mean %v sd %v", n+1, minW.Round(time.Millisecond), maxW.Round(time.Millisecond), time.Duration(mean).Round(time.Millisecond), time.Duration(sd).Round(time.Millisecond))
		interval = min(interval*2, DefaultRetryMax)
	}
	// The first wait is the documented 250 ms ±50%; the cap is reached at the 7th.
	if w := waits[0]; slicesMax(w) > 375*time.Millisecond || slicesMin(w) < 125*time.Millisecond {
		t.Errorf("first wait outside 125–375 ms")
	}
	if slicesMin(waits[6]) < DefaultRetryMax/2 || slicesMax(waits[6]) > DefaultRetryMax {
		t.Errorf("7th wait outside [5s, 10s]")
	}
}

func slicesMax(ws []time.Duration) time.Duration {
	m := ws[0]
	for _, w := range ws {
		m = max(m, w)
	}
	return m
}

func slicesMin(ws []time.Duration) time.Duration {
	m := ws[0]
	for _, w := range ws {
		m = min(m, w)
	}
	return m
}

// Through the engine: the waits between attempts never exceed the cap
// (measured with a small cap so that jitter above it would show).
func TestRetryWaitsCappedInRun(t *testing.T) {
	var stamps []time.Time
	tool := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		stamps = append(stamps, time.Now())
		return nil, errors.New("flaky")
	}
	s := mustParse(t, "name: s\ngroups:\n  - name: g\n    timeout: 30s\n    on_error: retry\n    retries: 8\n    parallel: false\n    tools: [{tool: t}]\n")
	const capWait = 40 * time.Millisecond
	_, err := Run(context.Background(), s, &fakeTools{tools: map[string]toolFunc{"t": tool}}, nil, WithRetryBackoff(20*time.Millisecond, capWait))
	if !errors.Is(err, ErrToolFailed) || len(stamps) != 9 {
		t.Fatalf("Run: %v after %d attempts; want ErrToolFailed after 9", err, len(stamps))
	}
	for i := 1; i < len(stamps); i++ {
		gap := stamps[i].Sub(stamps[i-1])
		// A wait is at most the cap; the timer may fire late on a busy
		// machine, never early, so only a gap below the minimum would be
		// wrong by itself. Every wait after the first is at least cap/2.
		if i > 1 && gap < capWait/2 {
			t.Errorf("gap %d is %v, below the minimum wait %v", i, gap, capWait/2)
		}
	}
}

// A tool error is retried only if it can pass: a 4xx code other than 408
// and 429 is permanent, and the call's error says so.
func TestPermanentErrorsNotRetried(t *testing.T) {
	s := mustParse(t, "name: s\ngroups:\n  - name: g\n    on_error: retry\n    retries: 3\n    tools: [{tool: t}]\n")
	for _, tt := range []struct {
		code     string
		attempts int
	}{
		{"403", 1}, {"400", 1}, {"404", 1}, {"409", 1}, {"413", 1}, {"422", 1}, {"499", 1},
		{"408", 4}, {"429", 4}, {"500", 4}, {"503", 4}, {"", 4}, {"4xx", 4}, {"40", 4}, {"4000", 4},
	} {
		n := 0
		tool := func(context.Context, json.RawMessage) (json.RawMessage, error) {
			n++
			return nil, fmt.Errorf("calling: %w", &toolcall.Error{Tool: "t", Code: tt.code, Description: "no"})
		}
		r, err := Run(context.Background(), s, &fakeTools{tools: map[string]toolFunc{"t": tool}}, nil, fast)
		if !errors.Is(err, ErrToolFailed) || n != tt.attempts || r.Groups[0].Calls[0].Attempts != tt.attempts {
			t.Errorf("code %q: %v after %d attempts; want ErrToolFailed after %d", tt.code, err, n, tt.attempts)
			continue
		}
		msg := r.Groups[0].Calls[0].Error
		if perm := tt.attempts == 1; perm != strings.Contains(msg, "not retried: permanent error "+tt.code) {
			t.Errorf("code %q: call error %q; permanent=%v", tt.code, msg, perm)
		}
	}
	// Under continue a permanent error is recorded like any other failure.
	c := mustParse(t, "name: s\ngroups:\n  - name: g\n    on_error: continue\n    tools: [{tool: t}]\n")
	r, err := Run(context.Background(), c, &fakeTools{tools: map[string]toolFunc{"t": func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, &toolcall.Error{Tool: "t", Code: "403", Description: "outside the root"}
	}}}, nil)
	if err != nil || r.Groups[0].Status != GroupPartial || !strings.Contains(r.Groups[0].Calls[0].Error, "403") {
		t.Errorf("continue: %v %+v", err, r.Groups[0])
	}
}

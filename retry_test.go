// SPDX-License-Identifier: MIT

package retry_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bfc42b4f/retry"
)

var errBoom = errors.New("boom")

// hint is an error that carries a server's Retry-After hint.
type hint time.Duration

func (h hint) Error() string             { return fmt.Sprintf("retry after %v", time.Duration(h)) }
func (h hint) RetryAfter() time.Duration { return time.Duration(h) }

// retryable is an error that classifies itself.
type retryable bool

func (r retryable) Error() string   { return fmt.Sprintf("retryable=%t", bool(r)) }
func (r retryable) Retryable() bool { return bool(r) }

// recorder is an fn for Do that returns the errors of errs in turn, then
// nil, and records how many calls it got and when, since its start.
type recorder struct {
	errs  []error
	start time.Time
	at    []time.Duration
}

func newRecorder(errs ...error) *recorder {
	return &recorder{errs: errs, start: time.Now()}
}

func (r *recorder) fn(context.Context) error {
	r.at = append(r.at, time.Since(r.start))
	if n := len(r.at); n <= len(r.errs) {
		return r.errs[n-1]
	}
	return nil
}

func (r *recorder) calls() int { return len(r.at) }

// failures returns n distinct errors, so a test can tell which one came back.
func failures(n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = fmt.Errorf("failure %d", i+1)
	}
	return errs
}

// ms is a policy with millisecond waits for tests on the real clock.
var ms = retry.Policy{Attempts: 5, Base: time.Millisecond, Max: 5 * time.Millisecond}

func TestRealClockSucceedsOnThirdAttempt(t *testing.T) {
	r := newRecorder(failures(2)...)
	if err := retry.Do(context.Background(), ms, r.fn); err != nil {
		t.Fatalf("Do() = %v, want nil", err)
	}
	if r.calls() != 3 {
		t.Errorf("fn called %d times, want 3", r.calls())
	}
}

func TestRealClockGivesUpWithLastError(t *testing.T) {
	errs := failures(5)
	r := newRecorder(errs...)
	err := retry.Do(context.Background(), ms, r.fn)
	if err != errs[4] {
		t.Errorf("Do() = %v, want %v", err, errs[4])
	}
	if r.calls() != 5 {
		t.Errorf("fn called %d times, want 5", r.calls())
	}
}

func TestRealClockPermanentStopsAtFirstCall(t *testing.T) {
	r := newRecorder(retry.Permanent(errBoom))
	if err := retry.Do(context.Background(), ms, r.fn); err != errBoom {
		t.Errorf("Do() = %v, want %v", err, errBoom)
	}
	if r.calls() != 1 {
		t.Errorf("fn called %d times, want 1", r.calls())
	}
}

func TestRealClockDeadlineCutsLongWaitShort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	p := retry.Policy{Attempts: math.MaxInt, Base: time.Millisecond, Max: time.Minute}
	start := time.Now()
	err := retry.Do(ctx, p, func(context.Context) error { return errBoom })
	if elapsed := time.Since(start); elapsed > 100*time.Millisecond {
		t.Errorf("Do returned after %v, want under 100ms", elapsed)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errBoom) {
		t.Errorf("Do() = %v, want an error matching %v and %v", err, context.DeadlineExceeded, errBoom)
	}
}

// TestRealClockReusesTimer retries often enough with real waits to reuse
// its timer many times; CI also runs it with GODEBUG=asynctimerchan=1.
func TestRealClockReusesTimer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background()) // cancelable, so Do uses a timer
	defer cancel()
	p := retry.Policy{Attempts: 20, Base: time.Millisecond, Max: time.Millisecond}
	r := newRecorder(failures(19)...)
	if err := retry.Do(ctx, p, r.fn); err != nil {
		t.Fatalf("Do() = %v, want nil", err)
	}
	if r.calls() != 20 {
		t.Errorf("fn called %d times, want 20", r.calls())
	}
}

// TestRealClockCancelStopsTimer cancels during a long wait on a real timer;
// CI also runs it with GODEBUG=asynctimerchan=1.
func TestRealClockCancelStopsTimer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(5*time.Millisecond, cancel)
	start := time.Now()
	err := retry.Do(ctx, retry.Policy{Max: time.Minute}, func(context.Context) error { return hint(30 * time.Second) })
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("Do returned after %v, want soon after the cancel at 5ms", elapsed)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, hint(30*time.Second)) {
		t.Errorf("Do() = %v, want an error matching %v and %v", err, context.Canceled, hint(30*time.Second))
	}
}

func TestRealClockSharedPolicy(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = retry.Do(context.Background(), ms, newRecorder(errBoom, errBoom).fn)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: Do() = %v, want nil", i, err)
		}
	}
}

// gaps returns the waits between the calls recorded at times at.
func gaps(at []time.Duration) []time.Duration {
	var g []time.Duration
	for i := 1; i < len(at); i++ {
		g = append(g, at[i]-at[i-1])
	}
	return g
}

func TestSchedule(t *testing.T) {
	tests := []struct {
		name     string
		p        retry.Policy
		attempts int
		ceilings []time.Duration
	}{
		{"the zero policy makes 4 attempts below 100ms, 200ms, 400ms", retry.Policy{},
			4, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{"negative fields take the defaults", retry.Policy{Attempts: -1, Base: -1, Max: -1},
			4, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{"the ceiling doubles up to Max", retry.Policy{Attempts: 6, Base: time.Second, Max: 5 * time.Second},
			6, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"a Base above Max waits at most Max", retry.Policy{Attempts: 3, Base: time.Hour, Max: time.Second},
			3, []time.Duration{time.Second, time.Second}},
		{"one attempt never waits", retry.Policy{Attempts: 1}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				r := newRecorder(failures(tt.attempts)...)
				err := retry.Do(context.Background(), tt.p, r.fn)
				if err != r.errs[tt.attempts-1] {
					t.Errorf("Do() = %v, want %v", err, r.errs[tt.attempts-1])
				}
				if r.calls() != tt.attempts {
					t.Fatalf("fn called %d times, want %d", r.calls(), tt.attempts)
				}
				for i, g := range gaps(r.at) {
					if g < 0 || g > tt.ceilings[i] {
						t.Errorf("wait %d = %v, want within [0, %v]", i+1, g, tt.ceilings[i])
					}
				}
				if last := r.at[len(r.at)-1]; time.Since(r.start) != last {
					t.Errorf("Do returned %v after the last attempt, want at once", time.Since(r.start)-last)
				}
			})
		})
	}
}

// firstWaits calls Do runs times in virtual time with an fn that fails once
// with err, then succeeds, and returns the wait Do took after each failure.
func firstWaits(t *testing.T, p retry.Policy, err error, runs int) []time.Duration {
	t.Helper()
	waits := make([]time.Duration, runs)
	bubble(t, func(t *testing.T) {
		for i := range waits {
			r := newRecorder(err)
			if err := retry.Do(context.Background(), p, r.fn); err != nil {
				t.Fatalf("Do() = %v, want nil", err)
			}
			waits[i] = gaps(r.at)[0]
		}
	})
	return waits
}

// checkUniform checks that 400 waits look drawn uniformly from [lo, hi]: all
// inside it, their mean within a tenth of its width of the middle, and some
// within a tenth of its width of either end. For uniform draws the mean
// misses with a chance near 1e-11 (6.9 standard deviations), and each end
// with a chance of 0.9⁴⁰⁰, 5e-19.
func checkUniform(t *testing.T, waits []time.Duration, lo, hi time.Duration) {
	t.Helper()
	if len(waits) != 400 {
		t.Fatalf("checkUniform got %d waits, want 400", len(waits))
	}
	tenth := (hi - lo) / 10
	var sum time.Duration
	low, top := waits[0], waits[0]
	for _, w := range waits {
		if w < lo || w > hi {
			t.Fatalf("wait = %v, want within [%v, %v]", w, lo, hi)
		}
		sum += w - lo
		low, top = min(low, w), max(top, w)
	}
	if mean := lo + sum/400; mean < (lo+hi)/2-tenth || mean > (lo+hi)/2+tenth {
		t.Errorf("mean wait = %v, want near %v", mean, (lo+hi)/2)
	}
	if low > lo+tenth || top < hi-tenth {
		t.Errorf("waits span [%v, %v], want near [%v, %v]", low, top, lo, hi)
	}
}

// TestScheduleIsJittered checks that the waits of Do spread over the whole
// range of full jitter: neither pinned to the ceiling nor far below it.
func TestScheduleIsJittered(t *testing.T) {
	p := retry.Policy{Attempts: 2, Base: time.Second, Max: time.Second}
	checkUniform(t, firstWaits(t, p, errBoom, 400), 0, time.Second)
}

// TestScheduleReachesEachCeiling checks that wait n+1 is drawn up to its
// own ceiling, Base·2ⁿ, and no higher: with Base 1ns, 300 runs of three
// failures. The largest of 300 draws from [0, 4ns] misses 4ns with a chance
// of 0.8³⁰⁰, 1e-29.
func TestScheduleReachesEachCeiling(t *testing.T) {
	bubble(t, func(t *testing.T) {
		p := retry.Policy{Attempts: 4, Base: 1, Max: time.Hour}
		largest := make([]time.Duration, 3)
		for range 300 {
			r := newRecorder(failures(3)...)
			retry.Do(context.Background(), p, r.fn)
			for i, g := range gaps(r.at) {
				largest[i] = max(largest[i], g)
			}
		}
		if want := []time.Duration{1, 2, 4}; !slices.Equal(largest, want) {
			t.Errorf("largest waits = %v, want %v", largest, want)
		}
	})
}

// TestDoWaitsToTheNanosecond checks that Do takes even the shortest waits:
// with a ceiling of 1ns, 200 waits all miss 0 or all miss 1ns with a chance
// of 2⁻¹⁹⁹, and a hint of 1ns with Max 1ns leaves no room: every wait is 1ns.
func TestDoWaitsToTheNanosecond(t *testing.T) {
	p := retry.Policy{Attempts: 2, Base: 1, Max: 1}
	seen := map[time.Duration]int{}
	for _, w := range firstWaits(t, p, errBoom, 200) {
		seen[w]++
	}
	if len(seen) != 2 || seen[0] == 0 || seen[1] == 0 {
		t.Errorf("waits with a 1ns ceiling = %v (wait: count), want both 0 and 1ns", seen)
	}
	for _, w := range firstWaits(t, p, hint(1), 20) {
		if w != 1 {
			t.Fatalf("wait after a 1ns hint = %v, want 1ns", w)
		}
	}
}

// TestHintIsJittered checks that a wait after a hint is drawn from the
// range Policy's doc gives, so that clients given one hint come back apart,
// even when the hint is close to Max.
func TestHintIsJittered(t *testing.T) {
	tests := []struct {
		name   string
		p      retry.Policy
		h      time.Duration
		lo, hi time.Duration
	}{
		{"a hint above the ceiling draws as wide as the hint", retry.Policy{Attempts: 2, Base: time.Second, Max: time.Minute},
			3 * time.Second, 3 * time.Second, 6 * time.Second},
		{"a small hint early on draws as wide as the hint", retry.Policy{Attempts: 2, Base: 10 * time.Millisecond},
			300 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond},
		{"a hint below the ceiling draws as wide as the ceiling", retry.Policy{Attempts: 2, Base: time.Second, Max: time.Minute},
			100 * time.Millisecond, 100 * time.Millisecond, 1100 * time.Millisecond},
		{"a hint near Max draws in the room left", retry.Policy{Attempts: 2, Base: time.Second, Max: 30 * time.Second},
			29500 * time.Millisecond, 29500 * time.Millisecond, 30 * time.Second},
		{"the room left is below the default Max of 10s", retry.Policy{Attempts: 2, Base: time.Second},
			9500 * time.Millisecond, 9500 * time.Millisecond, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waits := firstWaits(t, tt.p, hint(tt.h), 400)
			checkUniform(t, waits, tt.lo, tt.hi)
			// Clamping h + draw to Max would put about half of the second
			// row's waits at exactly 30s; a uniform draw puts each there
			// with a chance of 2e-9, so three of 400 with a chance of 1e-17.
			atMax := 0
			for _, w := range waits {
				if w == tt.hi {
					atMax++
				}
			}
			if atMax > 2 {
				t.Errorf("%d of 400 waits are exactly %v, want the jitter kept near Max", atMax, tt.hi)
			}
		})
	}
	t.Run("a hint of exactly Max leaves no room: every wait is Max", func(t *testing.T) {
		p := retry.Policy{Attempts: 2, Base: time.Second, Max: 30 * time.Second}
		for _, w := range firstWaits(t, p, hint(30*time.Second), 20) {
			if w != 30*time.Second {
				t.Fatalf("wait = %v, want 30s", w)
			}
		}
	})
}

func TestDelay(t *testing.T) {
	tests := []struct {
		name    string
		p       retry.Policy
		n       int
		ceiling time.Duration
	}{
		{"zero policy, first wait", retry.Policy{}, 0, 100 * time.Millisecond},
		{"zero policy, third wait", retry.Policy{}, 2, 400 * time.Millisecond},
		{"zero policy, capped at 10s", retry.Policy{}, 40, 10 * time.Second},
		{"negative n counts as 0", retry.Policy{Base: time.Second, Max: time.Hour}, -5, time.Second},
		{"Base above Max", retry.Policy{Base: time.Hour, Max: time.Second}, 0, time.Second},
		{"a shift that would wrap stays at Max", retry.Policy{Base: 1<<40 + 1, Max: time.Hour}, 24, time.Hour},
		{"n of 63 stays at Max", retry.Policy{Base: 1, Max: time.Hour}, 63, time.Hour},
		{"n of MaxInt stays at Max", retry.Policy{Base: 1, Max: time.Hour}, math.MaxInt, time.Hour},
		{"MaxInt64 everywhere", retry.Policy{Base: math.MaxInt64, Max: math.MaxInt64}, math.MaxInt, math.MaxInt64},
		{"MaxInt64 Max, first wait", retry.Policy{Base: 1, Max: math.MaxInt64}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := largestDelay(t, tt.p, tt.n, tt.ceiling, 64)
			// 64 draws all in the lower half has a chance of 2⁻⁶⁴, so this
			// fails only for a ceiling below the one wanted.
			if top < tt.ceiling/2 {
				t.Errorf("largest of 64 Delay(%d) = %v, want above %v", tt.n, top, tt.ceiling/2)
			}
		})
	}
}

// largestDelay draws p.Delay(n) the given number of times, fails t if a draw
// is outside [0, c], and returns the largest.
func largestDelay(t *testing.T, p retry.Policy, n int, c time.Duration, draws int) time.Duration {
	t.Helper()
	var top time.Duration
	for range draws {
		d := p.Delay(n)
		if d < 0 || d > c {
			t.Fatalf("%+v.Delay(%d) = %v, want within [0, %v]", p, n, d, c)
		}
		top = max(top, d)
	}
	return top
}

// TestDelayCeilingIsExact draws nanosecond waits, whose whole range can be
// seen, to check that the ceiling is min(Max, Base·2ⁿ) to the nanosecond and
// that the draw reaches it. 2,000 draws from [0, c] with c <= 8 all miss c
// with a chance below (8/9)²⁰⁰⁰, 1e-102.
func TestDelayCeilingIsExact(t *testing.T) {
	tests := []struct {
		name string
		p    retry.Policy
		n    int
		c    time.Duration
	}{
		{"Base 1, Max 3, n 1: below Max", retry.Policy{Base: 1, Max: 3}, 1, 2},
		{"Base 1, Max 3, n 2: at Max", retry.Policy{Base: 1, Max: 3}, 2, 3},
		{"Base 1, Max 8, n 3: Base·2ⁿ equal to Max", retry.Policy{Base: 1, Max: 8}, 3, 8},
		{"Base 3, Max 7, n 1", retry.Policy{Base: 3, Max: 7}, 1, 6},
		{"Base 3, Max 7, n 2", retry.Policy{Base: 3, Max: 7}, 2, 7},
		{"Base 2, Max 1: Base above Max", retry.Policy{Base: 2, Max: 1}, 0, 1},
		{"Base 5, n -1 counts as 0", retry.Policy{Base: 5, Max: 8}, -1, 5},
		{"Base 1, Max 1, n 0", retry.Policy{Base: 1, Max: 1}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if top := largestDelay(t, tt.p, tt.n, tt.c, 2000); top != tt.c {
				t.Errorf("largest of 2000 Delay(%d) = %v, want %v", tt.n, top, tt.c)
			}
		})
	}
}

// TestDefaultBase pins the default Base of 100ms to the millisecond: of
// 20,000 draws from [0, 100ms], none is above 100ms, and all miss (99ms,
// 100ms] with a chance of 0.99²⁰⁰⁰⁰, 2e-88. A Base of 101ms would put a draw
// above 100ms with the same certainty.
func TestDefaultBase(t *testing.T) {
	if top := largestDelay(t, retry.Policy{Max: 101 * time.Millisecond}, 0, 100*time.Millisecond, 20000); top <= 99*time.Millisecond {
		t.Errorf("largest of 20000 Delay(0) = %v, want above 99ms", top)
	}
}

func TestDoOverflowingShiftWaitsUpToMax(t *testing.T) {
	bubble(t, func(t *testing.T) {
		// The 25th wait has the ceiling 1h; a wrapped shift would make it 16.7ms.
		p := retry.Policy{Attempts: 26, Base: 1<<40 + 1, Max: time.Hour}
		var top time.Duration
		for range 8 {
			r := newRecorder(failures(25)...)
			if err := retry.Do(context.Background(), p, r.fn); err != nil {
				t.Fatalf("Do() = %v, want nil", err)
			}
			top = max(top, gaps(r.at)[24])
		}
		if top < time.Minute || top > time.Hour {
			t.Errorf("largest 25th wait of 8 = %v, want within [1m, 1h]", top)
		}
	})
}

func TestDoMaxInt64Durations(t *testing.T) {
	// A hint of half of MaxInt64 plus a draw from [0, MaxInt64] overflows
	// about every other run unless clamped; a wrapped, negative wait would
	// retry at once and succeed.
	p := retry.Policy{Attempts: 2, Base: math.MaxInt64, Max: math.MaxInt64}
	for range 16 {
		bubble(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(1000*time.Hour, cancel)
			r := newRecorder(hint(math.MaxInt64 / 2))
			err := retry.Do(ctx, p, r.fn)
			if time.Since(r.start) != 1000*time.Hour || r.calls() != 1 {
				t.Fatalf("Do returned after %v and %d calls, want after 1000h and 1", time.Since(r.start), r.calls())
			}
			if !errors.Is(err, context.Canceled) || !errors.Is(err, r.errs[0]) {
				t.Errorf("Do() = %v, want it to match %v and %v", err, context.Canceled, r.errs[0])
			}
		})
	}
}

func TestDoAttemptsMaxInt(t *testing.T) {
	bubble(t, func(t *testing.T) {
		p := retry.Policy{Attempts: math.MaxInt, Base: time.Millisecond, Max: time.Millisecond}
		r := newRecorder(failures(1000)...)
		if err := retry.Do(context.Background(), p, r.fn); err != nil {
			t.Errorf("Do() = %v, want nil", err)
		}
		if r.calls() != 1001 {
			t.Errorf("fn called %d times, want 1001", r.calls())
		}
	})
}

func TestHintGivesTheWait(t *testing.T) {
	p := retry.Policy{Attempts: 2, Base: time.Nanosecond, Max: time.Minute}
	e := errors.New("e")
	tests := []struct {
		name     string
		err      error
		calls    int
		min, max time.Duration
	}{
		{"a hint makes the wait at least that long", hint(3 * time.Second), 2, 3 * time.Second, 6 * time.Second},
		{"a wrapped hint counts", fmt.Errorf("get: %w", hint(time.Second)), 2, time.Second, 2 * time.Second},
		{"the first of joined hints counts", errors.Join(hint(time.Second), hint(2*time.Second)), 2, time.Second, 2 * time.Second},
		{"the first of joined hints counts when it is larger", errors.Join(hint(2*time.Second), hint(time.Second)), 2, 2 * time.Second, 4 * time.Second},
		{"the first of nested hints counts", fmt.Errorf("%w", errors.Join(fmt.Errorf("%w", hint(2*time.Second)), hint(time.Second))), 2, 2 * time.Second, 4 * time.Second},
		{"an outer After lowers an inner hint", retry.After(hint(time.Hour), time.Second), 2, time.Second, 2 * time.Second},
		{"an outer After lowers an inner After", retry.After(retry.After(e, time.Hour), time.Second), 2, time.Second, 2 * time.Second},
		{"an outer zero hint overrules an inner one", errors.Join(hint(0), hint(time.Hour)), 2, 0, 1},
		{"After counts like a RetryAfter method", retry.After(e, 3*time.Second), 2, 3 * time.Second, 6 * time.Second},
		{"a hint of Max is honoured", hint(time.Minute), 2, time.Minute, time.Minute},
		{"a hint above Max stops at once", hint(time.Minute + 1), 1, 0, 0},
		{"an After above Max stops at once", retry.After(e, time.Minute+1), 1, 0, 0},
		{"a zero hint is ignored", hint(0), 2, 0, 1},
		{"a negative hint is ignored", hint(-time.Hour), 2, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				r := newRecorder(tt.err)
				err := retry.Do(context.Background(), p, r.fn)
				if r.calls() != tt.calls {
					t.Fatalf("fn called %d times, want %d", r.calls(), tt.calls)
				}
				if tt.calls == 1 {
					if err != tt.err || time.Since(r.start) != 0 {
						t.Errorf("Do() = %v after %v, want %v at once", err, time.Since(r.start), tt.err)
					}
					return
				}
				if g := gaps(r.at)[0]; g < tt.min || g > tt.max {
					t.Errorf("wait = %v, want within [%v, %v]", g, tt.min, tt.max)
				}
			})
		})
	}
}

// appError is an application's error that says whether it is worth
// retrying at its level, whatever the error it wraps says.
type appError struct {
	err   error
	retry bool
}

func (e *appError) Error() string   { return "app: " + e.err.Error() }
func (e *appError) Unwrap() error   { return e.err }
func (e *appError) Retryable() bool { return e.retry }

// A chain is a list of errors that delegates Is and As to them in turn and
// has no Unwrap method, as hashicorp/go-multierror's chain does: only
// errors.Is and errors.As see inside it.
type chain struct{ errs []error }

func newChain(errs ...error) *chain { return &chain{errs} }

func (c *chain) Error() string { return fmt.Sprint(c.errs) }

func (c *chain) Is(target error) bool {
	return slices.ContainsFunc(c.errs, func(err error) bool { return errors.Is(err, target) })
}

func (c *chain) As(target any) bool {
	return slices.ContainsFunc(c.errs, func(err error) bool { return errors.As(err, target) })
}

// nilSafe is an error type whose methods work on a nil receiver.
type nilSafe struct{}

func (*nilSafe) Error() string   { return "nil-safe" }
func (*nilSafe) Retryable() bool { return false }

// classify calls Do with a Policy of 3 attempts and an fn that returns err
// on every call, in virtual time, and checks that Do returns want after
// calls calls.
func classify(t *testing.T, err, want error, calls int) {
	t.Helper()
	bubble(t, func(t *testing.T) {
		n := 0
		got := retry.Do(context.Background(), retry.Policy{Attempts: 3, Base: time.Millisecond}, func(context.Context) error {
			n++
			return err
		})
		if got != want || n != calls {
			t.Errorf("Do() = %v after %d calls, want %v after %d", got, n, want, calls)
		}
	})
}

// TestMarkerAnywhereStopsDo pins Do's rules for markers: a marker
// anywhere in fn's error, as errors.Is finds it, stops Do whatever a
// Retryable method says; Do returns the error inside a marker that fn
// returned itself, and fn's error unchanged otherwise.
func TestMarkerAnywhereStopsDo(t *testing.T) {
	cause := errors.New("cause")
	perm := retry.Permanent(cause)
	wrapped := fmt.Errorf("op: %w", perm)
	tests := []struct {
		name  string
		err   error // what fn returns on every call
		want  error // what Do returns; nil: err itself
		calls int
	}{
		{"a marker fn returns gives back the error inside it", perm, cause, 1},
		{"a wrapped marker gives back fn's error unchanged", wrapped, nil, 1},
		{"a marker in a join stops", errors.Join(errBoom, perm), nil, 1},
		{"a marker in a marker gives back the error inside the outer one", retry.Permanent(wrapped), wrapped, 1},
		{"a marker of a marker is one marker", retry.Permanent(perm), cause, 1},
		{"a marker wins over Retryable true", retry.Permanent(retryable(true)), retryable(true), 1},
		{"a marker wins over Retryable false", retry.Permanent(retryable(false)), retryable(false), 1},
		{"a marker below Retryable true still stops", &appError{perm, true}, nil, 1},
		{"a marker found through an Is method stops", newChain(errBoom, perm), nil, 1},
		{"an Is method that finds no marker stops nothing", newChain(errBoom), nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			classify(t, tt.err, cmp.Or(tt.want, tt.err), tt.calls)
		})
	}
}

// TestFirstRetryableDecides pins Do's rule for Retryable: with no
// marker, the first error with a Retryable method, as errors.As finds it,
// decides, and false stops Do, which returns fn's error unchanged.
func TestFirstRetryableDecides(t *testing.T) {
	final := fmt.Errorf("op: %w", retryable(false))
	var nilPtr *nilSafe
	tests := []struct {
		name  string
		err   error // what fn returns on every call, and Do returns
		calls int
	}{
		{"a plain error is retried until Attempts", errBoom, 3},
		{"Retryable false stops", final, 1},
		{"Retryable false in a join stops", errors.Join(errBoom, final), 1},
		{"Retryable true is retried", retryable(true), 3},
		{"a per-attempt DeadlineExceeded is retried", fmt.Errorf("attempt: %w", context.DeadlineExceeded), 3},
		{"true before false in a join retries", errors.Join(retryable(true), final), 3},
		{"false before true in a join stops", errors.Join(final, retryable(true)), 1},
		{"an outer Retryable true overrules an inner false", &appError{final, true}, 3},
		{"an outer Retryable false overrules an inner true", &appError{retryable(true), false}, 1},
		{"an As method that hands over Retryable false stops", newChain(errBoom, final), 1},
		{"an As method that hands over Retryable true retries", newChain(retryable(true), final), 3},
		{"a nil pointer whose Retryable says false stops", nilPtr, 1},
		{"a wrapped nil pointer whose Retryable says false stops", fmt.Errorf("op: %w", nilPtr), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			classify(t, tt.err, tt.err, tt.calls)
		})
	}
}

// panicky is an error type whose methods read their receiver, so that a nil
// *panicky panics where one of them is called.
type panicky struct{ retry bool }

func (e *panicky) Error() string   { return "panicky" }
func (e *panicky) Retryable() bool { return e.retry }

// TestNilPointerIsReadAsAnyError checks that Do has no case of its own for
// a nil pointer: one whose Retryable reads its receiver panics when Do
// calls it, as it would for any caller of that method.
func TestNilPointerIsReadAsAnyError(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Error("Do returned, want the panic of (*panicky)(nil).Retryable")
		}
	}()
	var nilPtr *panicky
	retry.Do(context.Background(), retry.Policy{Attempts: 2, Base: 1, Max: 1}, func(context.Context) error {
		return fmt.Errorf("op: %w", nilPtr)
	})
}

// TestCheckOrder has one row per pair of rules whose order decides what Do
// returns, in the order that Do's doc gives. Its rows "... before ctx" pin
// the rule that an error no attempt can follow, the last attempt's or one
// with a hint above Max, comes back as fn returned it, even if ctx ended
// during that call.
func TestCheckOrder(t *testing.T) {
	cause := errors.New("cause")
	final := retry.Permanent(retryable(false))
	tests := []struct {
		name   string
		p      retry.Policy
		cancel bool  // fn cancels ctx before it returns err
		err    error // what fn returns
		want   error // nil: an error matching context.Canceled and err
	}{
		{"Permanent before Retryable false", retry.Policy{}, false, final, retryable(false)},
		{"Permanent before the last attempt", retry.Policy{Attempts: 1}, false, retry.Permanent(cause), cause},
		{"Retryable false before the last attempt", retry.Policy{Attempts: 1}, true, retryable(false), retryable(false)},
		{"the last attempt before ctx", retry.Policy{Attempts: 1}, true, errBoom, errBoom},
		{"a hint above Max before ctx", retry.Policy{Max: time.Second}, true, hint(time.Hour), hint(time.Hour)},
		{"ctx before a hint up to Max", retry.Policy{Max: time.Hour}, true, hint(time.Hour), nil},
		{"a hint above Max with ctx alive", retry.Policy{Max: time.Second}, false, hint(time.Hour), hint(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				calls := 0
				err := retry.Do(ctx, tt.p, func(context.Context) error {
					calls++
					if tt.cancel {
						cancel()
					}
					return tt.err
				})
				if calls != 1 {
					t.Errorf("fn called %d times, want 1", calls)
				}
				if tt.want == nil {
					if !errors.Is(err, context.Canceled) || !errors.Is(err, tt.err) {
						t.Errorf("Do() = %v, want an error matching %v and %v", err, context.Canceled, tt.err)
					}
				} else if err != tt.want {
					t.Errorf("Do() = %v, want %v", err, tt.want)
				}
			})
		})
	}
}

func TestPermanent(t *testing.T) {
	if err := retry.Permanent(nil); err != nil {
		t.Errorf("Permanent(nil) = %v, want nil", err)
	}
	err := retry.Permanent(errBoom)
	if err.Error() != errBoom.Error() {
		t.Errorf("Permanent(errBoom).Error() = %q, want %q", err.Error(), errBoom.Error())
	}
	if u := errors.Unwrap(err); u != errBoom {
		t.Errorf("errors.Unwrap(Permanent(errBoom)) = %v, want %v", u, errBoom)
	}
	if again := retry.Permanent(err); again != err {
		t.Errorf("Permanent(Permanent(errBoom)) = %#v, want %#v", again, err)
	}
	if errors.Is(err, io.EOF) || !errors.Is(err, errBoom) {
		t.Errorf("Permanent(errBoom) matches io.EOF or not errBoom under errors.Is, want only errBoom")
	}
	marked := fmt.Errorf("load: %w", retry.Permanent(io.EOF))
	if u := errors.Unwrap(retry.Permanent(marked)); u != marked {
		t.Errorf("errors.Unwrap(Permanent(load: EOF)) = %#v, want the marked error unchanged", u)
	}
}

// nilMessage is an error type whose Error works on a nil receiver.
type nilMessage struct{}

func (*nilMessage) Error() string { return "nil message" }

// TestMessagesPrintAsFmtDoes checks that Permanent, After and the errors Do
// makes print the error they hold as fmt.Sprint does, nil pointers
// included: what a nil-safe Error returns, and <nil> where Error panics.
func TestMessagesPrintAsFmtDoes(t *testing.T) {
	var safe *nilMessage
	var unsafe *msgErr
	for _, inner := range []error{safe, unsafe} {
		want := fmt.Sprint(inner)
		if got := retry.Permanent(inner).Error(); got != want {
			t.Errorf("Permanent(%T(nil)).Error() = %q, want %q", inner, got, want)
		}
		if got := retry.After(inner, time.Hour).Error(); got != want {
			t.Errorf("After(%T(nil), 1h).Error() = %q, want %q", inner, got, want)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		err := retry.Do(ctx, retry.Policy{Max: time.Hour}, func(context.Context) error {
			cancel(inner)
			return retry.After(inner, time.Hour)
		})
		if msg := "retry: context canceled (cause: " + want + "); last error: " + want; err == nil || err.Error() != msg {
			t.Errorf("Do() = %v, want %q", err, msg)
		}
	}
	if want := "nil message"; fmt.Sprint(safe) != want || fmt.Sprint(unsafe) != "<nil>" {
		t.Errorf("fmt.Sprint prints %q and %q, want %q and <nil>", fmt.Sprint(safe), fmt.Sprint(unsafe), want)
	}
}

// statusErr is an error type of a caller's own, for errors.As.
type statusErr struct{ code int }

func (e *statusErr) Error() string { return "HTTP " + strconv.Itoa(e.code) }

func TestAfter(t *testing.T) {
	if err := retry.After(nil, time.Second); err != nil {
		t.Errorf("After(nil, 1s) = %v, want nil", err)
	}
	for _, d := range []time.Duration{0, -1, math.MinInt64} {
		if err := retry.After(errBoom, d); err != errBoom {
			t.Errorf("After(errBoom, %v) = %#v, want errBoom unchanged", d, err)
		}
	}
	if err := retry.After(errBoom, 1); err == errBoom || err.(interface{ RetryAfter() time.Duration }).RetryAfter() != 1 {
		t.Errorf("After(errBoom, 1ns) = %#v, want a hint of 1ns", err)
	}
	inner := &statusErr{503}
	err := retry.After(fmt.Errorf("get: %w", inner), time.Second)
	var se *statusErr
	if err.Error() != "get: HTTP 503" || !errors.As(err, &se) || se != inner || !errors.Is(err, inner) {
		t.Errorf("After(get: HTTP 503, 1s) = %q, want the message and tree of the error it wraps", err)
	}
	if h, ok := err.(interface{ RetryAfter() time.Duration }); !ok || h.RetryAfter() != time.Second {
		t.Errorf("After(err, 1s) has no RetryAfter method that returns 1s")
	}
}

// TestMarkerFnReturnedComesOff pins the last rule of Do's doc: the marker
// that fn returned itself comes off, so an enclosing Do retries, unless its
// own fn marks the error again.
func TestMarkerFnReturnedComesOff(t *testing.T) {
	bubble(t, func(t *testing.T) {
		p := retry.Policy{Attempts: 3, Base: time.Millisecond}
		for _, mark := range []bool{false, true} {
			outer, inner := 0, 0
			err := retry.Do(context.Background(), p, func(ctx context.Context) error {
				outer++
				err := retry.Do(ctx, p, func(context.Context) error {
					inner++
					return retry.Permanent(errBoom)
				})
				if mark {
					return retry.Permanent(err)
				}
				return err
			})
			want := map[bool]int{false: 3, true: 1}[mark]
			if err != errBoom || outer != want || inner != want {
				t.Errorf("marked again %t: Do() = %v with %d outer and %d inner calls, want %v with %d and %d",
					mark, err, outer, inner, errBoom, want, want)
			}
		}
	})
}

// TestDeepMarkerStopsEnclosingDo pins the same rule for a marker deeper in
// fn's error: it stays in the error Do returns, unchanged, and stops an
// enclosing Do too.
func TestDeepMarkerStopsEnclosingDo(t *testing.T) {
	bubble(t, func(t *testing.T) {
		p := retry.Policy{Attempts: 3, Base: time.Millisecond}
		fnErr := fmt.Errorf("load user: %w", retry.Permanent(&statusErr{404}))
		outer, inner := 0, 0
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			outer++
			return retry.Do(ctx, p, func(context.Context) error {
				inner++
				return fnErr
			})
		})
		if err != fnErr || outer != 1 || inner != 1 {
			t.Errorf("Do() = %v with %d outer and %d inner calls, want %v with 1 and 1", err, outer, inner, fnErr)
		}
		var se *statusErr
		if !errors.As(err, &se) || se.code != 404 {
			t.Errorf("errors.As(Do(), *statusErr) = %v, want the 404 fn wrapped", se)
		}
	})
}

// TestMarkedCauseStopsEnclosingDo cancels an inner Do's ctx with a marked
// cause: the error the inner Do returns holds the cause, marker and all,
// and stops the enclosing Do, whose own ctx lives.
func TestMarkedCauseStopsEnclosingDo(t *testing.T) {
	bubble(t, func(t *testing.T) {
		shutdown := errors.New("shutting down")
		unavailable := errors.New("HTTP 503")
		p := retry.Policy{Attempts: 3, Base: time.Millisecond}
		outer := 0
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			outer++
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			return retry.Do(ctx, p, func(context.Context) error {
				cancel(retry.Permanent(shutdown))
				return unavailable
			})
		})
		if outer != 1 {
			t.Errorf("the enclosing Do called fn %d times, want 1", outer)
		}
		for _, want := range []error{context.Canceled, shutdown, unavailable} {
			if !errors.Is(err, want) {
				t.Errorf("Do() = %v, want it to match %v", err, want)
			}
		}
	})
}

// TestWaitPastDeadlineReturnsAtOnce pins the deadline rule: Do draws the wait
// first, and returns at once if it would reach the deadline. A hint of 1s
// with Max 2s draws from [1s, 2s]; with 1.5s left, half of the calls give
// up at once, and the rest wait less than 1.5s. Of 2,000 calls, fewer than
// 800 or more than 1,200 give up with a chance near 1e-18 (9 standard
// deviations); both "never early" and "always early" fail it.
func TestWaitPastDeadlineReturnsAtOnce(t *testing.T) {
	bubble(t, func(t *testing.T) {
		p := retry.Policy{Attempts: 2, Base: time.Millisecond, Max: 2 * time.Second}
		early := 0
		for range 2000 {
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			r := newRecorder(hint(time.Second))
			err := retry.Do(ctx, p, r.fn)
			cancel()
			switch {
			case err == nil && r.calls() == 2 && r.at[1] >= time.Second && r.at[1] < 1500*time.Millisecond:
			case errors.Is(err, context.DeadlineExceeded) && r.calls() == 1 && time.Since(r.start) == 0:
				early++
			default:
				t.Fatalf("Do() = %v after %d calls at %v, want nil after a wait in [1s, 1.5s), or an early stop", err, r.calls(), r.at)
			}
		}
		if early < 800 || early > 1200 {
			t.Errorf("%d of 2000 calls gave up at once, want about 1000", early)
		}
	})
}

type ctxKey struct{}

// TestDoPassesItsContext checks that fn gets Do's ctx on every call.
func TestDoPassesItsContext(t *testing.T) {
	bubble(t, func(t *testing.T) {
		ctx := context.WithValue(context.Background(), ctxKey{}, "request 7")
		calls := 0
		err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
			calls++
			if v := ctx.Value(ctxKey{}); v != "request 7" {
				t.Errorf("call %d: ctx.Value() = %v, want %q", calls, v, "request 7")
			}
			return errBoom
		})
		if err != errBoom || calls != 4 {
			t.Errorf("Do() = %v after %d calls, want %v after 4", err, calls, errBoom)
		}
	})
}

// TestDoReadsEachErrorAfresh checks that a hint in one error does not
// stretch the wait after the next error, which has none.
func TestDoReadsEachErrorAfresh(t *testing.T) {
	bubble(t, func(t *testing.T) {
		p := retry.Policy{Attempts: 3, Base: time.Millisecond, Max: time.Minute}
		r := newRecorder(hint(10*time.Second), errBoom)
		if err := retry.Do(context.Background(), p, r.fn); err != nil {
			t.Fatalf("Do() = %v, want nil", err)
		}
		if g := gaps(r.at); g[1] > 2*time.Millisecond {
			t.Errorf("wait after a plain error that followed a hint = %v, want at most its ceiling, 2ms", g[1])
		}
	})
}

// A deadlineCtx cancels itself when Do asks for its deadline, which Do does
// after its own look at ctx.Err and before it waits.
type deadlineCtx struct {
	context.Context
	cancel context.CancelFunc
}

func (c deadlineCtx) Deadline() (time.Time, bool) {
	c.cancel()
	return time.Time{}, false
}

// TestDoZeroWaitAsksContext checks that a cancel just before a wait of 0
// still stops Do. A ceiling of 1ns makes half of the waits 0; 64 Dos all
// draw 1ns with a chance of 2⁻⁶⁴.
func TestDoZeroWaitAsksContext(t *testing.T) {
	p := retry.Policy{Attempts: 2, Base: 1, Max: 1}
	for range 64 {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := retry.Do(deadlineCtx{ctx, cancel}, p, func(context.Context) error {
			calls++
			return errBoom
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("Do() = %v after %d calls, want canceled after 1", err, calls)
		}
	}
}

func TestCtxDoneEndsDo(t *testing.T) {
	t.Run("no attempt starts once ctx is done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := newRecorder()
		err := retry.Do(ctx, retry.Policy{}, r.fn)
		if !errors.Is(err, context.Canceled) || r.calls() != 0 {
			t.Errorf("Do() = %v after %d calls, want %v after 0", err, r.calls(), context.Canceled)
		}
	})
	t.Run("cancel while waiting returns at that instant with both errors", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			r := newRecorder(hint(30 * time.Minute))
			err := retry.Do(ctx, retry.Policy{Max: time.Hour}, r.fn)
			if time.Since(r.start) != 50*time.Millisecond {
				t.Errorf("Do returned after %v, want 50ms", time.Since(r.start))
			}
			if !errors.Is(err, context.Canceled) || !errors.Is(err, r.errs[0]) || r.calls() != 1 {
				t.Errorf("Do() = %v after %d calls, want canceled and %v after 1", err, r.calls(), r.errs[0])
			}
		})
	})
	t.Run("the cause and the last error are kept, on one line", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			shutdown := errors.New("shutting down")
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(time.Second, func() { cancel(shutdown) })
			err := retry.Do(ctx, retry.Policy{Attempts: 100, Base: 10 * time.Second}, func(context.Context) error { return errBoom })
			for _, want := range []error{context.Canceled, shutdown, errBoom} {
				if !errors.Is(err, want) {
					t.Errorf("Do() = %v, want it to match %v", err, want)
				}
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "canceled") || !strings.Contains(msg, "shutting down") || !strings.Contains(msg, "boom") {
				t.Errorf("Do().Error() = %q, want one line naming the context, its cause and the last error", msg)
			}
		})
	})
	t.Run("a cancel during fn stops before the next wait", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			calls := 0
			err := retry.Do(ctx, retry.Policy{Attempts: 5}, func(context.Context) error {
				calls++
				cancel()
				return errBoom
			})
			if !errors.Is(err, context.Canceled) || !errors.Is(err, errBoom) || calls != 1 {
				t.Errorf("Do() = %v after %d calls, want canceled and %v after 1", err, calls, errBoom)
			}
		})
	})
	t.Run("a cancel that comes as a wait ends gets no more attempts", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			ctx := &lateCtx{Context: context.Background(), done: make(chan struct{})}
			time.AfterFunc(500*time.Millisecond, func() { ctx.canceled.Store(true) })
			r := newRecorder(hint(time.Second), hint(time.Second))
			err := retry.Do(ctx, retry.Policy{Base: 1, Max: time.Second}, r.fn)
			if !errors.Is(err, context.Canceled) || r.calls() != 1 {
				t.Errorf("Do() = %v after %d calls, want canceled after 1", err, r.calls())
			}
		})
	})
	t.Run("a deadline the next wait would reach returns at once", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			// The wait is min(Max, 1s + draw) = 1s: it would end at the deadline.
			r := newRecorder(hint(time.Second), hint(time.Second))
			err := retry.Do(ctx, retry.Policy{Base: 1, Max: time.Second}, r.fn)
			if time.Since(r.start) != 0 || r.calls() != 1 {
				t.Errorf("Do returned after %v and %d calls, want at once after 1", time.Since(r.start), r.calls())
			}
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, r.errs[0]) {
				t.Errorf("Do() = %v, want it to match %v and %v", err, context.DeadlineExceeded, r.errs[0])
			}
			if ctx.Err() != nil {
				t.Errorf("ctx.Err() = %v when Do returned, want nil: Do should not sleep into the deadline", ctx.Err())
			}
		})
	})
	t.Run("a wait that fits before the deadline is taken", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			// A hint of Max makes the wait exactly 2ns short of the deadline.
			r := newRecorder(hint(time.Second - 2))
			if err := retry.Do(ctx, retry.Policy{Base: 1, Max: time.Second - 2}, r.fn); err != nil {
				t.Errorf("Do() = %v, want nil", err)
			}
		})
	})
	t.Run("a per-attempt timeout is retried while ctx lives", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			calls := 0
			err := retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
				calls++
				if calls == 3 {
					return nil
				}
				ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				defer cancel()
				<-ctx.Done()
				return ctx.Err()
			})
			if err != nil || calls != 3 {
				t.Errorf("Do() = %v after %d calls, want nil after 3", err, calls)
			}
		})
	})
}

// hourBoom is an error with the message "boom" and a hint of an hour.
type hourBoom struct{}

func (hourBoom) Error() string             { return "boom" }
func (hourBoom) RetryAfter() time.Duration { return time.Hour }

// TestStopMessages pins the one-line messages of the errors Do makes when
// ctx ends it.
func TestStopMessages(t *testing.T) {
	slow := errors.New("slow")
	shutdown := errors.New("shutting down")
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		end  func(cancel context.CancelFunc) // ends ctx during the first call
		want string
	}{
		{"a plain cancel names no cause",
			func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			func(cancel context.CancelFunc) { cancel() },
			"retry: context canceled; last error: boom"},
		{"a cancel with a cause names it",
			func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancelCause(context.Background())
				return ctx, func() { cancel(shutdown) }
			},
			func(cancel context.CancelFunc) { cancel() },
			"retry: context canceled (cause: shutting down); last error: boom"},
		{"a deadline that passed during fn",
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Second)
			},
			func(context.CancelFunc) { time.Sleep(2 * time.Second) },
			"retry: context deadline exceeded; last error: boom"},
		{"a deadline with a cause",
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeoutCause(context.Background(), time.Second, slow)
			},
			func(context.CancelFunc) { time.Sleep(2 * time.Second) },
			"retry: context deadline exceeded (cause: slow); last error: boom"},
		{"a wait that would reach the deadline",
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Second)
			},
			func(context.CancelFunc) {},
			"retry: the next wait would reach the context deadline; last error: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				ctx, cancel := tt.ctx()
				defer cancel()
				// Every wait is an hour long: a hint of Max leaves no room.
				p := retry.Policy{Base: time.Hour, Max: time.Hour}
				err := retry.Do(ctx, p, func(context.Context) error {
					tt.end(cancel)
					return hourBoom{}
				})
				if err == nil || err.Error() != tt.want {
					t.Errorf("Do() = %v, want %q", err, tt.want)
				}
			})
		})
	}
	t.Run("ctx done before the first call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := retry.Do(ctx, retry.Policy{}, succeed); err == nil || err.Error() != "retry: context canceled" {
			t.Errorf("Do() = %v, want %q", err, "retry: context canceled")
		}
	})
}

// TestStopSaysEachPartOnce pins the rule of Do's doc that fn's error comes
// back as it is when it already matches what Do's stop error would add:
// ctx.Err() and the cause for a stop, the early deadline return for that.
// Each row ends ctx during fn's first call, or lets the wait reach the
// deadline; in every row Do's error still matches each error in match.
func TestStopSaysEachPartOnce(t *testing.T) {
	shutdown := errors.New("shutting down")
	// Every wait is an hour long: a hint of Max leaves no room.
	p := retry.Policy{Base: time.Hour, Max: time.Hour}
	cancelWith := func(cause error) func() (context.Context, func()) {
		return func() (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, func() { cancel(cause) }
		}
	}
	inOneSecond := func() (context.Context, func()) {
		return context.WithTimeout(context.Background(), time.Second)
	}
	inner := func(ctx context.Context, end func()) error { // a Do inside fn
		return retry.Do(ctx, p, func(context.Context) error { end(); return hourBoom{} })
	}
	ctxErr := func(ctx context.Context, end func()) error { end(); return ctx.Err() }
	tests := []struct {
		name  string
		ctx   func() (context.Context, func()) // and what ends it
		fn    func(ctx context.Context, end func()) error
		same  bool   // Do returns fn's error itself
		want  string // Do's message
		match []error
	}{
		{"an inner Do's cancel comes back as it is", cancelWith(nil), inner, true,
			"retry: context canceled; last error: boom", []error{context.Canceled, hourBoom{}}},
		{"an inner Do's cancel with a cause comes back as it is", cancelWith(shutdown), inner, true,
			"retry: context canceled (cause: shutting down); last error: boom",
			[]error{context.Canceled, shutdown, hourBoom{}}},
		{"an inner Do's early deadline return comes back as it is", inOneSecond,
			func(ctx context.Context, _ func()) error { return inner(ctx, func() {}) }, true,
			"retry: the next wait would reach the context deadline; last error: boom",
			[]error{context.DeadlineExceeded, hourBoom{}}},
		{"ctx.Err() itself comes back as it is", cancelWith(nil), ctxErr, true,
			"context canceled", []error{context.Canceled}},
		{"ctx.Err() gets a cause it does not match", cancelWith(shutdown), ctxErr, false,
			"retry: context canceled (cause: shutting down); last error: context canceled",
			[]error{context.Canceled, shutdown}},
		{"the cause alone gets ctx.Err()", cancelWith(shutdown),
			func(_ context.Context, end func()) error { end(); return shutdown }, false,
			"retry: context canceled (cause: shutting down); last error: shutting down",
			[]error{context.Canceled, shutdown}},
		{"an inner Do's cancel under an outer deadline gets the deadline", inOneSecond,
			func(ctx context.Context, _ func()) error {
				ctx, cancel := context.WithCancel(ctx)
				return inner(ctx, cancel)
			}, false,
			"retry: the next wait would reach the context deadline; last error: retry: context canceled; last error: boom",
			[]error{context.DeadlineExceeded, context.Canceled, hourBoom{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				ctx, end := tt.ctx()
				defer end()
				var last error
				err := retry.Do(ctx, p, func(ctx context.Context) error {
					last = tt.fn(ctx, end)
					return last
				})
				if err == nil || err.Error() != tt.want || (err == last) != tt.same {
					t.Errorf("Do() = %q (fn's error itself: %t), want %q (%t)", err, err == last, tt.want, tt.same)
				}
				for _, m := range tt.match {
					if !errors.Is(err, m) {
						t.Errorf("Do() = %v, want it to match %v", err, m)
					}
				}
			})
		})
	}
}

// TestCancelLeavesNoTimerRunning cancels 10,000 Do calls during waits of an
// hour, under the timer semantics before Go 1.23 (asynctimerchan=1), where a
// timer that is not stopped stays in the runtime's heap, with its channel,
// until it fires. Since Go 1.23 such a timer is dropped when nothing waits
// on it, so the difference shows only under the old semantics.
func TestCancelLeavesNoTimerRunning(t *testing.T) {
	t.Setenv("GODEBUG", "asynctimerchan=1")
	ctx := brokenCtx{context.Background(), make(chan struct{})}
	close(ctx.done) // Do sees Err() == nil, waits, and the wait ends at once
	p := retry.Policy{Base: time.Hour, Max: time.Hour}
	before := heapObjects()
	for range 10000 {
		if err := retry.Do(ctx, p, func(context.Context) error { return errBoom }); !errors.Is(err, errBoom) {
			t.Fatalf("Do() = %v, want an error holding %v", err, errBoom)
		}
	}
	// A running timer keeps 3 objects; 10,000 of them would add 30,000.
	if grown := int64(heapObjects()) - int64(before); grown > 10000 {
		t.Errorf("the heap grew by %d objects over 10,000 canceled waits, want no timer left running", grown)
	}
}

// heapObjects returns the number of objects live on the heap after a GC.
func heapObjects() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapObjects
}

// A lateCtx reports its cancel through Err before its Done channel closes,
// which here is never. It makes deterministic the race in which a wait's
// timer and a cancel come due together and select may pick the timer.
type lateCtx struct {
	context.Context
	done     chan struct{}
	canceled atomic.Bool
}

func (c *lateCtx) Done() <-chan struct{} { return c.done }

func (c *lateCtx) Err() error {
	if c.canceled.Load() {
		return context.Canceled
	}
	return nil
}

func TestDoBadInput(t *testing.T) {
	ok := func(context.Context) error { return nil }
	okValue := func(context.Context) (int, error) { return 1, nil }
	tests := []struct {
		name string
		ctx  context.Context
		nilF bool
		want string
	}{
		{"a nil ctx", nil, false, "retry: nil Context"},
		{"a nil fn", context.Background(), true, "retry: nil func"},
		{"a nil ctx and fn name the ctx first", nil, true, "retry: nil Context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fn, fnValue := ok, okValue
			if tt.nilF {
				fn, fnValue = nil, nil
			}
			if err := retry.Do(tt.ctx, retry.Policy{}, fn); err == nil || err.Error() != tt.want {
				t.Errorf("Do() = %v, want %q", err, tt.want)
			}
			if v, err := retry.DoValue(tt.ctx, retry.Policy{}, fnValue); v != 0 || err == nil || err.Error() != tt.want {
				t.Errorf("DoValue() = %v, %v, want 0, %q", v, err, tt.want)
			}
		})
	}
}

// A brokenCtx is done, but its Err says it is not: it breaks the Context
// contract.
type brokenCtx struct {
	context.Context
	done chan struct{}
}

func (c brokenCtx) Done() <-chan struct{} { return c.done }

func TestDoBrokenContext(t *testing.T) {
	ctx := brokenCtx{context.Background(), make(chan struct{})}
	close(ctx.done)
	err := retry.Do(ctx, retry.Policy{Base: time.Hour}, func(context.Context) error { return errBoom })
	if !errors.Is(err, errBoom) || err.Error() == "" {
		t.Errorf("Do() = %v, want an error holding %v", err, errBoom)
	}
	var typed *msgErr
	err = retry.Do(nilErrCtx{context.Background(), typed}, retry.Policy{}, succeed)
	if want := "retry: <nil>"; err == nil || err.Error() != want {
		t.Errorf("Do(ctx whose Err is a nil pointer) = %v, want %q", err, want)
	}
}

// msgErr is an error whose Error method reads its receiver.
type msgErr struct{ msg string }

func (e *msgErr) Error() string { return e.msg }

// A nilErrCtx is done, and its Err is a nil pointer held in an error.
type nilErrCtx struct {
	context.Context
	err *msgErr
}

func (c nilErrCtx) Err() error { return c.err }

func TestDoPanicPropagates(t *testing.T) {
	type oops struct{ n int }
	defer func() {
		if r := recover(); r != (oops{7}) {
			t.Errorf("recovered %v, want %v", r, oops{7})
		}
	}()
	retry.Do(context.Background(), retry.Policy{}, func(context.Context) error { panic(oops{7}) })
	t.Error("Do returned, want a panic")
}

func TestDoValue(t *testing.T) {
	bubble(t, func(t *testing.T) {
		calls := 0
		v, err := retry.DoValue(context.Background(), retry.Policy{}, func(context.Context) (string, error) {
			calls++
			if calls < 3 {
				return "partial", errBoom
			}
			return "done", nil
		})
		if v != "done" || err != nil {
			t.Errorf("DoValue() = %q, %v, want %q, nil", v, err, "done")
		}
		v, err = retry.DoValue(context.Background(), retry.Policy{}, func(context.Context) (string, error) {
			return "partial", errBoom
		})
		if v != "" || err != errBoom {
			t.Errorf("DoValue() = %q, %v, want %q, %v", v, err, "", errBoom)
		}
	})
}

func succeed(context.Context) error { return nil }

func TestAllocs(t *testing.T) {
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { retry.Do(ctx, retry.Policy{}, succeed) }); n != 0 {
		t.Errorf("Do with a first-try success allocates %v objects, want 0", n)
	}
	value := func(context.Context) (int, error) { return 1, nil }
	if n := testing.AllocsPerRun(100, func() { retry.DoValue(ctx, retry.Policy{}, value) }); n != 0 {
		t.Errorf("DoValue with a first-try success allocates %v objects, want 0", n)
	}
	// Waits of 1µs make Do wait on nearly every retry. Each failure costs
	// the two targets Do hands errors.As, for Retryable and RetryAfter.
	p := retry.Policy{Attempts: 30, Base: time.Microsecond, Max: time.Microsecond}
	cancelable, cancel := context.WithCancel(ctx)
	defer cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		fails int
		want  float64
	}{
		// A ctx that cannot be canceled lets Do sleep without a timer of its own.
		{"Background, 2 retries", ctx, 2, 4},
		{"Background, 29 retries", ctx, 29, 58},
		// One time.Timer, reused: since Go 1.23 it is 3 objects, the Timer,
		// its channel and the channel's buffer.
		{"cancelable, 2 retries", cancelable, 2, 3 + 4},
		{"cancelable, 29 retries", cancelable, 29, 3 + 58},
	}
	for _, tt := range tests {
		calls := 0
		fn := func(context.Context) error {
			calls++
			if calls%(tt.fails+1) == 0 {
				return nil
			}
			return errBoom
		}
		n := testing.AllocsPerRun(20, func() {
			if err := retry.Do(tt.ctx, p, fn); err != nil {
				t.Fatalf("Do() = %v, want nil", err)
			}
		})
		if n != tt.want {
			t.Errorf("%s: Do allocates %v objects, want %v", tt.name, n, tt.want)
		}
	}
	// A fresh ctx per call, as a server hands each request, has no Done
	// channel until Do asks for one: one more object than the timer's 3,
	// and 2 for the failure. A hint of Max makes the wait exactly 1µs: a
	// draw of 0 would skip it.
	var maxHint error = hint(time.Microsecond)
	fresh := func(do bool) func() {
		return func() {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			fn := failOnce(maxHint)
			if do {
				if err := retry.Do(ctx, p, fn); err != nil {
					t.Fatalf("Do() = %v, want nil", err)
				}
			}
		}
	}
	if n := testing.AllocsPerRun(20, fresh(true)) - testing.AllocsPerRun(20, fresh(false)); n != 6 {
		t.Errorf("fresh cancelable ctx, 1 retry: Do allocates %v objects, want 6", n)
	}
	// A wait of 0 makes no timer: with a ceiling of 1ns, half the waits are
	// 0, so Do allocates 2 + 1.5 objects on average, and 5 if a 0 made a
	// timer. AllocsPerRun rounds down; 1,000 runs keep the average within
	// 3.3-3.7.
	tiny := retry.Policy{Attempts: 2, Base: 1, Max: 1}
	if n := testing.AllocsPerRun(1000, func() { retry.Do(cancelable, tiny, failOnce(errBoom)) }); n != 3 {
		t.Errorf("cancelable ctx, waits of 0 or 1ns: Do allocates %v objects on average, want 3", n)
	}
}

// TestAllocsFreshGoroutine pins what AllocsPerRun's warm-up hides: with a
// ctx that can never be canceled, Do waits with time.Sleep, and the runtime
// allocates a goroutine's sleep timer on that goroutine's first Sleep.
func TestAllocsFreshGoroutine(t *testing.T) {
	// A hint of Max makes the wait exactly 1µs: a draw of 0 would not sleep.
	p := retry.Policy{Attempts: 2, Base: time.Microsecond, Max: time.Microsecond}
	var maxHint error = hint(time.Microsecond)
	// onFresh calls Do on a new goroutine with an fn that fails once with
	// err, or succeeds at once if err is nil, and counts what a run allocates.
	onFresh := func(err error) float64 {
		return testing.AllocsPerRun(100, func() {
			fn := failOnce(err)
			done := make(chan error)
			go func() { done <- retry.Do(context.Background(), p, fn) }()
			if err := <-done; err != nil {
				t.Fatalf("Do() = %v, want nil", err)
			}
		})
	}
	if got := onFresh(maxHint) - onFresh(nil); got != 3 {
		t.Errorf("Do with Background and one retry on a fresh goroutine allocates %v objects, want 3: the errors.As targets and the sleep timer", got)
	}
}

// failOnce returns an fn that fails with err on its first call and succeeds
// after.
func failOnce(err error) func(context.Context) error {
	calls := 0
	return func(context.Context) error {
		if calls++; calls == 1 {
			return err
		}
		return nil
	}
}

func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := retry.Do(ctx, retry.Policy{}, succeed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoRetry measures a call that fails twice, then succeeds, with
// waits of at most 1ns, so that the cost of Do itself shows.
func BenchmarkDoRetry(b *testing.B) {
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, bb := range []struct {
		name string
		ctx  context.Context
	}{{"Background", context.Background()}, {"cancelable", cancelable}} {
		b.Run(bb.name, func(b *testing.B) {
			p := retry.Policy{Attempts: 5, Base: 1, Max: 1}
			calls := 0
			fn := func(context.Context) error {
				if calls++; calls%3 != 0 {
					return errBoom
				}
				return nil
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := retry.Do(bb.ctx, p, fn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDoValue(b *testing.B) {
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := retry.DoValue(ctx, retry.Policy{}, fn); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDelay(b *testing.B) {
	p := retry.Policy{}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Delay(i & 15)
	}
}

// A recovering server rejects every call during an outage, then accepts at
// most capacity calls in each slot of time and rejects the rest at once.
type recovering struct {
	outage, slot time.Duration
	capacity     int

	mu       sync.Mutex
	start    time.Time
	calls    int         // calls in all
	after    int         // calls after the outage
	perSlot  map[int]int // calls in each slot after the outage
	accepted map[int]int // accepted calls in each slot after the outage
	lastOK   time.Duration
}

var errUnavailable = errors.New("503 service unavailable")

func (s *recovering) call(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	now := time.Since(s.start)
	if now < s.outage {
		return errUnavailable
	}
	s.after++
	slot := int((now - s.outage) / s.slot)
	s.perSlot[slot]++
	if s.accepted[slot] == s.capacity {
		return errUnavailable
	}
	s.accepted[slot]++
	s.lastOK = max(s.lastOK, now)
	return nil
}

// fleetResult is what one fleet did to a recovering server.
type fleetResult struct {
	calls, after, peak int
	drain              time.Duration
	perSlot            []int // calls in each slot after the outage
}

// runFleet starts clients that each call do against one recovering server
// at the same instant, in virtual time, and reports what the server saw.
func runFleet(t *testing.T, clients int, do func(fn func(context.Context) error) error) fleetResult {
	var res fleetResult
	bubble(t, func(t *testing.T) {
		s := &recovering{outage: 2 * time.Second, slot: 10 * time.Millisecond, capacity: 50,
			start: time.Now(), perSlot: map[int]int{}, accepted: map[int]int{}}
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := do(s.call); err != nil {
					t.Errorf("client: %v, want success", err)
				}
			}()
		}
		wg.Wait()
		res = fleetResult{calls: s.calls, after: s.after, drain: s.lastOK - s.outage}
		for slot, n := range s.perSlot {
			res.peak = max(res.peak, n)
			for len(res.perSlot) <= slot {
				res.perSlot = append(res.perSlot, 0)
			}
			res.perSlot[slot] = n
		}
	})
	return res
}

// fleets runs 1,000 clients against one recovering server twice, in
// virtual time: with Do, and with a loop that waits exactly
// min(Max, Base·2ⁿ), as a baseline.
func fleets(t *testing.T) (jittered, baseline fleetResult) {
	p := retry.Policy{Attempts: 1000, Base: 10 * time.Millisecond, Max: 2 * time.Second}
	jittered = runFleet(t, 1000, func(fn func(context.Context) error) error {
		return retry.Do(context.Background(), p, fn)
	})
	baseline = runFleet(t, 1000, func(fn func(context.Context) error) error {
		for n := 0; ; n++ {
			err := fn(context.Background())
			if err == nil || n+1 == p.Attempts {
				return err
			}
			time.Sleep(min(p.Max, p.Base<<min(n, 20)))
		}
	})
	return jittered, baseline
}

var fleetSeries = flag.String("fleet.series", "", "a CSV file for the calls per 10ms slot of TestFleet's two fleets, for .ci/compare/cmd/fleetplot")

// TestFleet shows what full jitter does for a service that comes back
// from an outage.
func TestFleet(t *testing.T) {
	jittered, baseline := fleets(t)
	if *fleetSeries != "" {
		if err := writeSeries(*fleetSeries, jittered.perSlot, baseline.perSlot); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		name string
		fleetResult
	}{{"full jitter (Do)", jittered}, {"no jitter", baseline}} {
		t.Logf("%-16s calls %5d, after recovery %5d, peak per 10ms slot %4d, drained %v after recovery",
			r.name, r.calls, r.after, r.peak, r.drain)
	}
	if jittered.after > baseline.after/4 {
		t.Errorf("Do made %d calls after recovery, want at most a quarter of the baseline's %d", jittered.after, baseline.after)
	}
	if jittered.drain*10 > baseline.drain {
		t.Errorf("Do drained in %v, want at least 10x sooner than the baseline's %v", jittered.drain, baseline.drain)
	}
	if jittered.peak >= 50 {
		t.Errorf("Do's peak is %d calls in a slot, want below the capacity of 50", jittered.peak)
	}
}

// writeSeries writes the calls per 10ms slot of two fleets to a CSV file,
// one row per slot: its start in milliseconds after the outage, then the
// calls of each fleet.
func writeSeries(name string, jittered, baseline []int) error {
	var b strings.Builder
	b.WriteString("ms,full jitter,no jitter\n")
	for i := range max(len(jittered), len(baseline)) {
		at := func(s []int) int {
			if i < len(s) {
				return s[i]
			}
			return 0
		}
		fmt.Fprintf(&b, "%d,%d,%d\n", 10*i, at(jittered), at(baseline))
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}

// TestTour is the README's first command, go test -run Tour -v: it shows
// the package at work, in plain text, and checks what it shows.
func TestTour(t *testing.T) {
	say := func(format string, args ...any) {
		if testing.Verbose() {
			fmt.Printf(format+"\n", args...)
		}
	}
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

	say("\n1. A call that fails twice, then succeeds, with the zero Policy (4 attempts,")
	say("   waits drawn from [0, 100ms], then [0, 200ms]), on the real clock:")
	start, last, attempt := time.Now(), time.Now(), 0
	err := retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
		attempt++
		if attempt == 1 {
			say("   attempt 1 at 0ms")
		} else {
			say("   attempt %d at %v, after a wait of %v drawn from [0, %v]",
				attempt, ms(time.Since(start)), ms(time.Since(last)), 100*time.Millisecond<<(attempt-2))
		}
		last = time.Now()
		if attempt < 3 {
			say("     -> connection refused")
			return errors.New("connection refused")
		}
		say("     -> ok")
		return nil
	})
	say("   Do returned %v after %d attempts", err, attempt)
	if err != nil || attempt != 3 {
		t.Errorf("Do() = %v after %d attempts, want nil after 3", err, attempt)
	}

	say("\n2. A permanent error stops Do at once:")
	attempt = 0
	notFound := errors.New("GET /users/7: 404 Not Found")
	err = retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
		attempt++
		say("   attempt %d -> %v, marked retry.Permanent", attempt, notFound)
		return retry.Permanent(notFound)
	})
	say("   Do returned %q after %d attempt, without a wait", err, attempt)
	if err != notFound || attempt != 1 {
		t.Errorf("Do() = %v after %d attempts, want %v after 1", err, attempt, notFound)
	}

	say("\n3. A cancel during a wait returns at once, keeping the cause and the last error:")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	shutdown := errors.New("shutting down")
	time.AfterFunc(50*time.Millisecond, func() { cancel(shutdown) })
	start = time.Now()
	err = retry.Do(ctx, retry.Policy{Max: time.Minute}, func(ctx context.Context) error {
		say("   Policy{Max: time.Minute}; attempt 1 -> HTTP 503 with Retry-After: 30, which fn")
		say("   hands Do with retry.After; the wait is drawn from [30s, 1m]; ctx is canceled at 50ms")
		return retry.After(errors.New("HTTP 503 (Retry-After 30s)"), 30*time.Second)
	})
	say("   Do returned after %v: %v", ms(time.Since(start)), err)
	say("   errors.Is(err, context.Canceled) = %t, errors.Is(err, cause) = %t",
		errors.Is(err, context.Canceled), errors.Is(err, shutdown))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, shutdown) || !strings.HasSuffix(err.Error(), "last error: HTTP 503 (Retry-After 30s)") {
		t.Errorf("Do() = %v, want it to match %v and %v and end with the last error", err, context.Canceled, shutdown)
	}

	say("\n4. A fleet: 1,000 clients against a service that is down for 2s, then takes")
	say("   50 calls per 10ms; Policy{Attempts: 1000, Base: 10ms, Max: 2s}; in virtual time:")
	jittered, baseline := fleets(t)
	say("   %-22s %20s %20s %22s", "", "calls after recovery", "peak calls per 10ms", "drained after recovery")
	for _, r := range []struct {
		name string
		fleetResult
	}{{"full jitter (retry.Do)", jittered}, {"no jitter", baseline}} {
		say("   %-22s %20d %20d %22v", r.name, r.after, r.peak, ms(r.drain))
	}
	say("")
	if jittered.after >= baseline.after {
		t.Errorf("Do made %d calls after recovery, want fewer than the baseline's %d", jittered.after, baseline.after)
	}
}

// FuzzDelay checks Delay against a ceiling computed with math/big.
func FuzzDelay(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1<<40+1), int64(time.Hour), 24)
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), math.MaxInt)
	f.Add(int64(-1), int64(math.MinInt64), -1)
	f.Fuzz(func(t *testing.T, base, limit int64, n int) {
		p := retry.Policy{Base: time.Duration(base), Max: time.Duration(limit)}
		if base <= 0 {
			base = int64(100 * time.Millisecond)
		}
		if limit <= 0 {
			limit = int64(10 * time.Second)
		}
		c := new(big.Int).Lsh(big.NewInt(base), uint(min(max(n, 0), 64)))
		if c.Cmp(big.NewInt(limit)) > 0 {
			c.SetInt64(limit)
		}
		if d := p.Delay(n); d < 0 || big.NewInt(int64(d)).Cmp(c) > 0 {
			t.Errorf("%+v.Delay(%d) = %d, want within [0, %v]", p, n, d, c)
		}
	})
}

// FuzzDo runs Do in virtual time against an fn that returns error trees
// built from the fuzzer's bytes, and checks Do's calls, waits and result
// against an oracle that reads each error with errors.Is and errors.As
// itself, as Do's doc says Do does.
func FuzzDo(f *testing.F) {
	f.Add(0, int64(0), int64(0), false, []byte{1, 1, 1, 1, 1})
	f.Add(3, int64(time.Millisecond), int64(time.Second), true, []byte{1, 4, 2, 6, 3, 9})
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), false, []byte{1, 1, 3, 200})
	f.Add(-5, int64(-1), int64(1), true, []byte{9, 14, 0, 5, 5, 2})
	f.Add(4, int64(time.Millisecond), int64(time.Second), true, []byte{8, 2, 1, 7, 4, 0, 3, 9, 12})
	f.Add(6, int64(time.Millisecond), int64(time.Minute), true, []byte{10, 8, 3, 7, 11, 2, 6, 1, 5, 9, 50})
	marker := markerTarget(f)
	f.Fuzz(func(t *testing.T, attempts int, base, limit int64, cancelable bool, script []byte) {
		p := retry.Policy{Attempts: attempts, Base: time.Duration(base), Max: time.Duration(limit)}
		effAttempts, effMax := positive(attempts, 4), positive(time.Duration(limit), 10*time.Second)
		effBase := positive(time.Duration(base), 100*time.Millisecond)
		// errs[i] is what call i returns, until a nil; want and calls are
		// what Do should return, and after how many calls.
		b := &builder{script: script, markers: map[error]bool{}}
		var errs []error
		var want error
		calls := 0
		for {
			err := b.tree(0)
			errs = append(errs, err)
			calls++
			if err == nil {
				want = nil
				break
			}
			want = err
			if b.markers[err] {
				want = errors.Unwrap(err) // the marker fn returned comes off
			}
			if errors.Is(err, marker) || !oracleRetryable(err) || calls == effAttempts || oracleHint(err) > effMax {
				break
			}
		}
		// The bubble's clock starts in 2000 and stops at the end of int64
		// nanoseconds, in 2262, where every later timer fires at once. In Go
		// 1.26 a time.Sleep there, which Do uses for a ctx that cannot be
		// canceled, is a fatal runtime error.
		inClock := effMax <= 200*365*24*time.Hour/time.Duration(calls)
		if !cancelable && !inClock {
			t.Skip("the waits could pass the end of the bubble's clock")
		}
		bubble(t, func(t *testing.T) {
			ctx := context.Background()
			if cancelable {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			r := newRecorder(errs...)
			err := retry.Do(ctx, p, r.fn)
			if err != want || r.calls() != calls {
				t.Fatalf("Do(%+v) = %v after %d calls, want %v after %d", p, err, r.calls(), want, calls)
			}
			for i, g := range gaps(r.at) {
				if !inClock {
					break
				}
				c := ceiling(effBase, effMax, i)
				lo, hi := time.Duration(0), c
				if h := oracleHint(errs[i]); h > 0 {
					lo, hi = h, h+min(max(h, c), effMax-h)
				}
				if g < lo || g > hi {
					t.Errorf("wait %d after %v = %v, want within [%v, %v]", i+1, errs[i], g, lo, hi)
				}
			}
			if waited := time.Since(r.start) - r.at[len(r.at)-1]; waited != 0 {
				t.Errorf("Do returned %v after the last call, want at once", waited)
			}
		})
	})
}

// oracleRetryable and oracleHint read err as Do's doc says Do reads it.
func oracleRetryable(err error) bool {
	var r interface{ Retryable() bool }
	return !errors.As(err, &r) || r.Retryable()
}

func oracleHint(err error) time.Duration {
	var h interface{ RetryAfter() time.Duration }
	if errors.As(err, &h) {
		return h.RetryAfter()
	}
	return 0
}

// ceiling returns min(limit, base·2ⁿ) for base and limit above zero.
func ceiling(base, limit time.Duration, n int) time.Duration {
	c := new(big.Int).Lsh(big.NewInt(int64(base)), uint(min(n, 64)))
	if c.Cmp(big.NewInt(int64(limit))) > 0 {
		return limit
	}
	return time.Duration(c.Int64())
}

// markerTarget returns the target under which Do asks errors.Is for a
// marker, which an fn's error whose Is method records its target catches.
func markerTarget(t testing.TB) error {
	var target error
	retry.Do(context.Background(), retry.Policy{Attempts: 1}, func(context.Context) error {
		return recordIs{&target}
	})
	if target == nil || !errors.Is(retry.Permanent(errBoom), target) || errors.Is(errBoom, target) {
		t.Fatalf("Do asked errors.Is for %v, want a target that only a marker matches", target)
	}
	return target
}

// recordIs is an error whose Is method records the target it is asked for.
type recordIs struct{ target *error }

func (e recordIs) Error() string { return "records its Is target" }

func (e recordIs) Is(target error) bool {
	*e.target = target
	return false
}

// A builder makes error trees from a fuzzer's bytes, each byte choosing a
// node, and nil once the bytes run out.
type builder struct {
	script  []byte
	leaves  int
	markers map[error]bool // what Permanent returned
}

func (b *builder) next() byte {
	if len(b.script) == 0 {
		return 0
	}
	c := b.script[0]
	b.script = b.script[1:]
	return c
}

// tree returns a tree at the given depth, or nil for a 0 at the top.
func (b *builder) tree(depth int) error {
	c := b.next()
	if depth == 0 && c == 0 {
		return nil
	}
	b.leaves++
	leaf := fmt.Errorf("leaf %d", b.leaves)
	if depth == 3 {
		return leaf
	}
	sub := func() error { return cmp.Or(b.tree(depth+1), leaf) }
	ms := time.Duration(b.next()) * time.Millisecond
	switch c % 12 {
	case 1:
		return leaf
	case 2:
		return retryable(c&16 != 0)
	case 3:
		return hint(ms)
	case 4:
		err := retry.Permanent(sub())
		b.markers[err] = true
		return err
	case 5:
		return retry.After(sub(), ms)
	case 6:
		return fmt.Errorf("wrapped: %w", sub())
	case 7:
		return errors.Join(sub(), sub())
	case 8:
		return newChain(sub(), sub())
	case 9:
		return &appError{sub(), c&16 != 0}
	case 10:
		return fmt.Errorf("%w and %w", sub(), sub())
	default:
		return errors.Join(sub())
	}
}

func positive[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// The README's quick start holds get and retryAfter too, and
// .ci/quickstart.go checks that the two copies stay the same.

// get fetches url once. A status that can get better on its own is
// retried, after at least the wait the server asked for in a Retry-After
// header; any other status is Permanent.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", retry.Permanent(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err // a network error: retried
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	switch code := resp.StatusCode; code {
	case http.StatusOK:
		return string(body), nil
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		wait := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if wait <= 0 {
			return "", fmt.Errorf("HTTP %d", code)
		}
		err := fmt.Errorf("HTTP %d (Retry-After %v)", code, wait)
		return "", retry.After(err, wait)
	default:
		return "", retry.Permanent(fmt.Errorf("HTTP %d", code))
	}
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP-date,
// and returns 0 or less when it holds no wait. Seconds too many for a
// Duration saturate rather than wrap: a hint above Policy.Max stops Do.
func retryAfter(v string, now time.Time) time.Duration {
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		const most = math.MaxInt64 / uint64(time.Second)
		return time.Duration(min(secs, most)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// TestRetryAfter checks the Retry-After parser of the README's quick start,
// which this file holds too.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		v    string
		want time.Duration
	}{
		{"delta-seconds", "120", 2 * time.Minute},
		{"zero seconds", "0", 0},
		{"the longest delta that fits", "9223372036", 9223372036 * time.Second},
		{"a delta too long for a Duration saturates", "9223372037", 9223372036 * time.Second},
		{"an absurd delta saturates", "18446744073709551615", 9223372036 * time.Second},
		{"a delta past uint64 is not a wait", "99999999999999999999", 0},
		{"a negative delta is not a wait", "-1", 0},
		{"a signed delta is not delta-seconds", "+5", 0},
		{"an HTTP-date ahead", "Mon, 30 Nov 2026 12:00:30 GMT", 30 * time.Second},
		{"an HTTP-date past", "Mon, 30 Nov 2026 11:59:30 GMT", -30 * time.Second},
		{"an RFC 850 date ahead", "Monday, 30-Nov-26 12:01:00 GMT", time.Minute},
		{"garbage", "soon", 0},
		{"no header", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.v, now); got != tt.want {
				t.Errorf("retryAfter(%q) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

// TestGetRetriesTransientStatuses checks which HTTP statuses the quick
// start's get retries, against a real server on loopback.
func TestGetRetriesTransientStatuses(t *testing.T) {
	retried := map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true}
	for _, code := range []int{400, 401, 403, 404, 408, 409, 429, 500, 501, 502, 503, 504, 505, 511} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.WriteHeader(code)
			}))
			defer srv.Close()
			p := retry.Policy{Attempts: 2, Base: time.Millisecond}
			_, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (string, error) {
				return get(ctx, srv.URL)
			})
			want := int32(1)
			if retried[code] {
				want = 2
			}
			if calls.Load() != want || err == nil || err.Error() != "HTTP "+strconv.Itoa(code) {
				t.Errorf("Do() = %v after %d calls, want HTTP %d after %d", err, calls.Load(), code, want)
			}
		})
	}
	t.Run("an absurd Retry-After stops Do at once", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Retry-After", "9999999999")
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer srv.Close()
		_, err := retry.DoValue(context.Background(), retry.Policy{Base: time.Millisecond}, func(ctx context.Context) (string, error) {
			return get(ctx, srv.URL)
		})
		want := "HTTP 503 (Retry-After 2562047h47m16s)"
		if calls.Load() != 1 || err == nil || err.Error() != want {
			t.Errorf("Do() = %v after %d calls, want %q after 1", err, calls.Load(), want)
		}
	})
	t.Run("an HTTP-date is honoured", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
				w.WriteHeader(http.StatusTooManyRequests)
			}
		}))
		defer srv.Close()
		start := time.Now()
		// An HTTP-date counts whole seconds: 2s ahead is a hint in (1s, 2s].
		_, err := retry.DoValue(context.Background(), retry.Policy{Base: time.Millisecond}, func(ctx context.Context) (string, error) {
			return get(ctx, srv.URL)
		})
		if elapsed := time.Since(start); err != nil || calls.Load() != 2 || elapsed < time.Second {
			t.Errorf("Do() = %v after %d calls and %v, want nil after 2 and at least 1s", err, calls.Load(), elapsed)
		}
	})
}

// bubble runs f in a synctest bubble, where time is virtual. The timer
// semantics before Go 1.23 (GODEBUG=asynctimerchan=1), under which CI also
// runs the real-clock tests, have no bubbles: there it skips t.
func bubble(t *testing.T, f func(*testing.T)) {
	t.Helper()
	if strings.Contains(os.Getenv("GODEBUG"), "asynctimerchan=1") {
		t.Skip("synctest needs the timer semantics of Go 1.23 and later")
	}
	synctest.Test(t, f)
}

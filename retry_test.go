// SPDX-License-Identifier: MIT

// These tests need Go 1.25, for testing/synctest, and the timers of Go 1.23
// and later, which a module whose go line is below 1.23 would not select.

//go:build go1.25

//go:debug asynctimerchan=0

package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bfc42b4f/retry"
)

// Helpers, then a section for each rule of Do's doc, opened by the rule; then
// Policy's waits, Permanent and After, allocations, the tour, the fuzzers.

var errBoom = errors.New("boom")

// hint is an error that carries a server's Retry-After hint.
type hint time.Duration

func (h hint) Error() string             { return fmt.Sprintf("retry after %v", time.Duration(h)) }
func (h hint) RetryAfter() time.Duration { return time.Duration(h) }

// retryable is an error that classifies itself.
type retryable bool

func (r retryable) Error() string   { return fmt.Sprintf("retryable=%t", bool(r)) }
func (r retryable) Retryable() bool { return bool(r) }

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
// has no Unwrap method, as hashicorp/go-multierror's chain does.
type chain struct{ errs []error }

func newChain(errs ...error) *chain { return &chain{errs} }
func (c *chain) Error() string      { return fmt.Sprint(c.errs) }
func (c *chain) Is(t error) bool {
	return slices.ContainsFunc(c.errs, func(e error) bool { return errors.Is(e, t) })
}
func (c *chain) As(t any) bool {
	return slices.ContainsFunc(c.errs, func(e error) bool { return errors.As(e, t) })
}

// recorder is an fn for Do that returns the errors of errs in turn, then
// nil, and records when it was called, since its start.
type recorder struct {
	errs  []error
	start time.Time
	at    []time.Duration
}

func newRecorder(errs ...error) *recorder { return &recorder{errs: errs, start: time.Now()} }
func (r *recorder) calls() int            { return len(r.at) }

func (r *recorder) fn(context.Context) error {
	r.at = append(r.at, time.Since(r.start))
	if n := len(r.at); n <= len(r.errs) {
		return r.errs[n-1]
	}
	return nil
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

// Rule: Do calls fn(ctx) until it returns nil or ctx is done, waiting as
// Policy describes.

type ctxKey struct{}

// TestCallsUntilNil runs on the real clock, where CI also runs it under
// GODEBUG=asynctimerchan=1; its last row reuses one timer 19 times.
func TestCallsUntilNil(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "request 7")
	cancelable, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, 19) // distinct, to tell which came back
	for i := range errs {
		errs[i] = fmt.Errorf("failure %d", i+1)
	}
	tests := []struct {
		name  string
		ctx   context.Context
		p     retry.Policy
		errs  []error // what fn returns in turn, then nil
		want  error
		calls int
	}{
		{"gives up with the last error", ctx, retry.Policy{Attempts: 5, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}, errs[:5], errs[4], 5},
		{"waits 19 times", cancelable, retry.Policy{Attempts: 20, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}, errs, nil, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, values := newRecorder(tt.errs...), 0
			err := retry.Do(tt.ctx, tt.p, func(ctx context.Context) error {
				if ctx.Value(ctxKey{}) == "request 7" {
					values++
				}
				return r.fn(ctx)
			})
			if err != tt.want || r.calls() != tt.calls || values != tt.calls {
				t.Errorf("Do() = %v after %d calls, %d of them with Do's ctx, want %v after %d, all with it", err, r.calls(), values, tt.want, tt.calls)
			}
		})
	}
}

// TestDoValue: the value of the call that succeeded, or the zero value
// with Do's error, not the value of the call that failed.
func TestDoValue(t *testing.T) {
	for attempts, want := range map[int]string{1: "", 2: "whole"} {
		calls := 0
		v, err := retry.DoValue(context.Background(), retry.Policy{Attempts: attempts, BaseDelay: 1}, func(context.Context) (string, error) {
			if calls++; calls == 1 {
				return "partial", errBoom
			}
			return "whole", nil
		})
		if v != want || (err == nil) != (want != "") {
			t.Errorf("DoValue() = %q, %v after %d calls, want %q", v, err, calls, want)
		}
	}
}

// Rule: Do panics if ctx or fn is nil. (A ctx done before the first call
// gets no call, and Do's error is ctx's, as the rule on a done ctx says.)

func TestNilPanicsAndDoneGetsNoCall(t *testing.T) {
	calls := 0
	fn := func(context.Context) error { calls++; return nil }
	fnValue := func(context.Context) (int, error) { calls++; return 1, nil }
	var noCtx context.Context // nil, which staticcheck flags where written as nil
	bg, p := context.Background(), retry.Policy{}
	done, cancel := context.WithCancel(bg)
	cancel()
	doneCause, cancelCause := context.WithCancelCause(bg)
	cancelCause(errors.New("shutting down"))
	tests := []struct {
		name       string
		call       func() error
		panic, err string // what the call panics with, or what it returns
	}{
		{"Do, nil ctx", func() error { return retry.Do(noCtx, p, fn) }, "retry: nil Context", ""},
		{"Do, nil fn", func() error { return retry.Do(bg, p, nil) }, "retry: nil func", ""},
		{"Do, both nil: ctx first", func() error { return retry.Do(noCtx, p, nil) }, "retry: nil Context", ""},
		{"DoValue, nil ctx", func() error { _, err := retry.DoValue(noCtx, p, fnValue); return err }, "retry: nil Context", ""},
		{"DoValue, nil fn", func() error { _, err := retry.DoValue[int](bg, p, nil); return err }, "retry: nil func", ""},
		{"Do, done ctx", func() error { return retry.Do(done, p, fn) }, "", "retry: context canceled"},
		{"DoValue, done ctx with a cause", func() error { _, err := retry.DoValue(doneCause, p, fnValue); return err }, "", "retry: context canceled (cause: shutting down)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil && r != tt.panic || calls != 0 {
					t.Errorf("panic = %v after %d calls, want %q after 0", r, calls, tt.panic)
				}
			}()
			if err := tt.call(); tt.panic != "" || err == nil || err.Error() != tt.err || !errors.Is(err, context.Canceled) {
				t.Errorf("call = %v, want a panic %q or the error %q", err, tt.panic, tt.err)
			}
		})
	}
}

// Rule: Do stops after Attempts calls, or at once if fn's error holds an
// error from Permanent, or ErrPermanent itself, as errors.Is finds them; or
// its first Retryable() bool method returns false; or its first RetryAfter()
// time.Duration method returns a hint above MaxDelay. In all these cases Do
// returns fn's error as it is, unless ctx is done.

// TestStopsWithFnsError runs Do inside an enclosing Do with the same Policy.
// fn returns err on every call, first canceling ctx, with a cause, where the
// row says so. Both must return err itself or, once ctx is canceled, what the
// next rule says, each part said once: the inner Do after calls calls, the
// enclosing one after calls of the inner. What stops one stops both.
func TestStopsWithFnsError(t *testing.T) {
	perm, final := retry.Permanent(errors.New("cause")), fmt.Errorf("op: %w", retryable(false))
	shutdown := errors.New("shutting down")
	p, hintMax := retry.Policy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Hour}, retry.Policy{MaxDelay: time.Second}
	tests := []struct {
		name   string
		p      retry.Policy
		err    error
		calls  int
		cancel bool
	}{
		{"a plain error is retried until Attempts", p, errBoom, 3, false},
		{"the zero Policy makes 4 attempts", retry.Policy{}, errBoom, 4, false},
		{"a marker stops, and stays in Do's error", p, perm, 1, false},
		{"a wrapped marker stops", p, fmt.Errorf("op: %w", perm), 1, false},
		{"a marker in a join stops", p, errors.Join(errBoom, perm), 1, false},
		{"a marker below Retryable true still stops", p, &appError{perm, true}, 1, false},
		{"a marker found through an Is method stops", p, newChain(errBoom, perm), 1, false},
		{"Retryable false stops", p, final, 1, false},
		{"true before false in a join retries", p, errors.Join(retryable(true), final), 3, false},
		{"false before true in a join stops", p, errors.Join(final, retryable(true)), 1, false},
		{"an outer Retryable true overrules an inner false", p, &appError{final, true}, 3, false},
		{"an outer Retryable false overrules an inner true", p, &appError{retryable(true), false}, 1, false},
		{"an As method that hands over Retryable false stops", p, newChain(errBoom, final), 1, false},
		{"an As method that hands over Retryable true retries", p, newChain(retryable(true), final), 3, false},
		{"a hint above MaxDelay stops", hintMax, hint(time.Second + 1), 1, false},
		{"an After above MaxDelay stops", hintMax, retry.After(errBoom, time.Second+1), 1, false},
		{"a cancel during the last attempt shows", retry.Policy{Attempts: 1}, errBoom, 1, true},
		{"a cancel shows beside a wrapped marker", p, fmt.Errorf("op: %w", perm), 1, true},
		{"a cancel shows beside Retryable false", p, final, 1, true},
		{"a cancel shows beside a hint above MaxDelay", hintMax, hint(time.Hour), 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				r, outer := newRecorder(slices.Repeat([]error{tt.err}, 16)...), 0
				err := retry.Do(ctx, tt.p, func(ctx context.Context) error {
					outer++
					return retry.Do(ctx, tt.p, func(ctx context.Context) error {
						if tt.cancel {
							cancel(shutdown)
						}
						return r.fn(ctx)
					})
				})
				want, match := tt.err.Error(), []error{tt.err}
				if tt.cancel {
					want, match = "retry: context canceled (cause: shutting down); last error: "+want, []error{tt.err, context.Canceled, shutdown}
				}
				if last := r.at[len(r.at)-1]; err == nil || err.Error() != want || (err == tt.err) == tt.cancel || outer != tt.calls || r.calls() != tt.calls*tt.calls || time.Since(r.start) != last {
					t.Errorf("Do(Do()) = %v after %d and %d calls, and %v more, want %q after %d and %d, at once",
						err, outer, r.calls(), time.Since(r.start)-last, want, tt.calls, tt.calls*tt.calls)
				}
				if slices.ContainsFunc(match, func(m error) bool { return !errors.Is(err, m) }) {
					t.Errorf("Do(Do()) = %v, want it to match each of %v", err, match)
				}
			})
		})
	}
}

// Rule: Do stops when ctx is done, and Do's error matches ctx.Err(),
// context.Cause(ctx) and fn's last error, if fn was called.

// TestStopMessages has fn end ctx during the first call, or return an error
// whose hint of an hour does not fit before a deadline 1s away. Do's error
// must match what the doc says, and have the row's message, each part said
// once: fn's error comes back as it is if it matches all Do's would add.
func TestStopMessages(t *testing.T) {
	shutdown, slow, boom := errors.New("shutting down"), errors.New("slow"), retry.After(errors.New("boom"), time.Hour)
	p := retry.Policy{BaseDelay: time.Hour, MaxDelay: time.Hour}
	fail := func(_ context.Context, end func()) error { end(); return boom }
	inner := func(ctx context.Context, end func()) error { // a Do inside fn
		return retry.Do(ctx, p, func(ctx context.Context) error { return fail(ctx, end) })
	}
	failLate := func(context.Context, func()) error { time.Sleep(2 * time.Second); return boom }
	ctxErr := func(ctx context.Context, end func()) error { end(); return ctx.Err() }
	causeErr := func(ctx context.Context, end func()) error { end(); return fmt.Errorf("op: %w", context.Cause(ctx)) }
	innerCanceled := func(ctx context.Context, _ func()) error {
		ctx, cancel := context.WithCancel(ctx)
		return inner(ctx, cancel)
	}
	tests := []struct {
		name     string
		deadline bool  // ctx has a deadline 1s away, and end does nothing; else end cancels ctx
		cause    error // of the cancel or the deadline
		fn       func(ctx context.Context, end func()) error
		want     string // Do's message; where it is fn's, Do must return fn's error itself
	}{
		{"a plain cancel names no cause", false, nil, fail, "retry: context canceled; last error: boom"},
		{"a cancel with a cause names it", false, shutdown, fail, "retry: context canceled (cause: shutting down); last error: boom"},
		{"a deadline with a cause", true, slow, failLate, "retry: context deadline exceeded (cause: slow); last error: boom"},
		{"a hint that does not fit gives up before the deadline", true, nil, fail, "retry: gave up before the deadline; last error: boom"},
		{"an inner Do's cancel comes back as it is", false, nil, inner, "retry: context canceled; last error: boom"},
		{"an inner Do's early deadline return comes back as it is", true, nil, inner, "retry: gave up before the deadline; last error: boom"},
		{"ctx.Err() itself comes back as it is", false, nil, ctxErr, "context canceled"},
		{"ctx.Err() gets a cause it does not match", false, shutdown, ctxErr, "retry: context canceled (cause: shutting down); last error: context canceled"},
		{"fn's error that matches the cause says it once", false, shutdown, causeErr, "retry: context canceled; last error: op: shutting down"},
		{"an inner Do's cancel under an outer deadline gets the deadline", true, nil, innerCanceled,
			"retry: gave up before the deadline; last error: retry: context canceled; last error: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				end := func() { cancel(tt.cause) }
				if tt.deadline {
					var stop context.CancelFunc
					ctx, stop = context.WithTimeoutCause(context.Background(), time.Second, tt.cause)
					defer stop()
					end = func() {}
				}
				var last error
				calls := 0
				err := retry.Do(ctx, p, func(ctx context.Context) error {
					calls++
					last = tt.fn(ctx, end)
					return last
				})
				if same := tt.want == last.Error(); err == nil || err.Error() != tt.want || (err == last) != same || calls != 1 {
					t.Errorf("Do() = %q (fn's error itself: %t) after %d calls, want %q (%t) after 1", err, err == last, calls, tt.want, same)
				}
				// What Do's doc says its error matches: after a stop once ctx is done, ctx.Err(),
				// context.Cause(ctx) and the last error; at the early return, DeadlineExceeded and the last error.
				match := []error{last, context.DeadlineExceeded}
				if ctx.Err() != nil {
					match = []error{last, ctx.Err(), context.Cause(ctx)}
				}
				if slices.ContainsFunc(match, func(m error) bool { return !errors.Is(err, m) }) {
					t.Errorf("Do() = %v, want it to match each of %v", err, match)
				}
			})
		})
	}
}

// An oddCtx breaks the Context contract, as a test of a caller's own type
// may: its Done and Err need not agree.
type oddCtx struct {
	context.Context
	done <-chan struct{}
	err  func() error
}

func (c oddCtx) Done() <-chan struct{} { return c.done }
func (c oddCtx) Err() error            { return c.err() }

// TestCancelDuringWaitReturnsThen: a ctx canceled during the wait ends Do
// then, with no more calls. In the second row, half of MaxInt64 plus a draw
// from [0, MaxInt64] would overflow about every other run, and a negative
// wait would call fn again at once. In the third, ctx returns its cancel
// through Err alone: Done never closes, so the wait ends with the timer, as
// when a cancel and the timer come together and select picks the timer.
func TestCancelDuringWaitReturnsThen(t *testing.T) {
	tests := []struct {
		p        retry.Policy
		h, after time.Duration // the hint, and when ctx is canceled
		noDone   bool
	}{
		{retry.Policy{MaxDelay: time.Hour}, 30 * time.Minute, 50 * time.Millisecond, false},
		{retry.Policy{BaseDelay: math.MaxInt64, MaxDelay: math.MaxInt64}, math.MaxInt64 / 2, 1000 * time.Hour, false},
		{retry.Policy{MaxDelay: time.Hour}, 30 * time.Minute, 50 * time.Millisecond, true},
	}
	for _, tt := range tests {
		for range 16 {
			bubble(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(tt.after, cancel)
				if tt.noDone {
					ctx = oddCtx{ctx, nil, ctx.Err}
				}
				r := newRecorder(hint(tt.h))
				err := retry.Do(ctx, tt.p, r.fn)
				if !tt.noDone && time.Since(r.start) != tt.after || r.calls() != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, r.errs[0]) {
					t.Fatalf("Do() = %v after %v and %d calls, want an error matching %v and %v after %v and 1",
						err, time.Since(r.start), r.calls(), context.Canceled, r.errs[0], tt.after)
				}
			})
		}
	}
}

// TestCancelLeavesNoTimerRunning ends 10,000 waits of an hour through a
// closed Done, Err nil, under the timer semantics before Go 1.23
// (asynctimerchan=1), where a timer not stopped stays in the heap to fire.
func TestCancelLeavesNoTimerRunning(t *testing.T) {
	t.Setenv("GODEBUG", "asynctimerchan=1")
	done := make(chan struct{})
	close(done)
	ctx := oddCtx{context.Background(), done, func() error { return nil }}
	p := retry.Policy{Attempts: 2, BaseDelay: time.Hour, MaxDelay: time.Hour}
	heapObjects := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapObjects)
	}
	before := heapObjects()
	for range 10000 {
		if err := retry.Do(ctx, p, func(context.Context) error { return errBoom }); err != errBoom {
			t.Fatalf("Do() = %v, want %v", err, errBoom)
		}
	}
	// A running timer keeps 3 objects; 10,000 of them would add 30,000.
	if grown := heapObjects() - before; grown > 10000 {
		t.Errorf("the heap grew by %d objects over 10,000 waits ended by ctx, want no timer left running", grown)
	}
}

// Rule: if ctx has a deadline, a wait's range is cut to end before it with
// time for the next call, estimated (in this version) as the slowest so far.
// Do returns at once an error matching context.DeadlineExceeded and fn's
// error, ctx.Err() still nil, if no wait fits, or if fn fails after a wait
// whose range, without a hint, was cut to less than half. The stops above
// come first.

// TestWaitsAndCallsEndBeforeTheDeadline runs 1,000 clients in virtual time,
// each with a deadline left away (the fleet's at once); fn takes call, fails
// once with a hint h (0 for none), then succeeds. Where a wait fits, every
// client must succeed after a wait in [lo, hi], seeing no done ctx, with
// waits within a tenth of the width of each end (missed with a chance of
// 0.9^1000, or 2^-1000 for a width of 1ns; a top of 1ns where it is 0 passes
// with 2^-1000), and at most 2 at the top of a range over 1ms wide (a clamp
// puts a quarter there; a uniform draw 3 with a chance below 2e-13).
// Elsewhere each must get at once, ctx live, an error matching
// DeadlineExceeded and fn's.
func TestWaitsAndCallsEndBeforeTheDeadline(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name                string
		base, call, left, h time.Duration
		early               bool
		lo, hi              time.Duration // the waits' range where not early
	}{
		{"an instant call after a wait cut at the deadline", 200 * ms, 0, 150 * ms, 0, false, 0, 150*ms - 1},
		{"a fleet of 50ms calls after a wait cut so that the call fits", 200 * ms, 50 * ms, 150 * ms, 0, false, 0, 50*ms - 1},
		{"a ceiling below the cut keeps its range", 10 * ms, 50 * ms, 150 * ms, 0, false, 0, 10 * ms},
		{"with 2ns to spare, the wait is 0 or 1ns", 200 * ms, 50 * ms, 100*ms + 2, 0, false, 0, 1},
		{"with 1ns to spare, the wait is 0", 200 * ms, 50 * ms, 100*ms + 1, 0, false, 0, 0},
		{"with no time to spare, Do returns at once (a negative hint is none)", 200 * ms, 50 * ms, 100 * ms, -time.Hour, true, 0, 0},
		{"a hint equal to the time left returns at once", 200 * ms, 0, 150 * ms, 150 * ms, true, 0, 0},
		{"a hint that leaves no time for the call returns at once", 200 * ms, 50 * ms, 150 * ms, 50 * ms, true, 0, 0},
		{"a hint that leaves the call 1ns to spare is the wait", 200 * ms, 50 * ms, 150 * ms, 50*ms - 1, false, 50*ms - 1, 50*ms - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				waits, bad := make([]time.Duration, 1000), make([]string, 1000)
				client := func(ctx context.Context, i int) {
					starts, start, sawDone := []time.Duration(nil), time.Now(), false
					err := retry.Do(ctx, retry.Policy{BaseDelay: tt.base}, func(ctx context.Context) error {
						starts, sawDone = append(starts, time.Since(start)), sawDone || ctx.Err() != nil
						time.Sleep(tt.call)
						if sawDone = sawDone || ctx.Err() != nil; len(starts) == 1 {
							return hint(tt.h)
						}
						return nil
					})
					at, live := time.Since(start), ctx.Err() == nil
					ok := err == nil && len(starts) == 2 && !sawDone
					if tt.early {
						ok = errors.Is(err, context.DeadlineExceeded) && errors.Is(err, hint(tt.h)) && len(starts) == 1 && at == tt.call && live
					} else if ok {
						waits[i] = starts[1] - starts[0] - tt.call
					}
					if !ok {
						bad[i] = fmt.Sprintf("Do() = %v after calls at %v, returning at %v, a done ctx seen: %t, then: %t; want nil after 2 calls and no done ctx, or at once an error matching DeadlineExceeded and fn's, ctx live", err, starts, at, sawDone, !live)
					}
				}
				// One at a time but for the fleet: 1,000 goroutines in every row
				// make the race detector's runtime fail a CHECK now and then.
				var wg sync.WaitGroup
				for i := range waits {
					ctx, cancel := context.WithTimeout(context.Background(), tt.left)
					defer cancel()
					if strings.HasPrefix(tt.name, "a fleet") {
						wg.Go(func() { client(ctx, i) })
					} else {
						client(ctx, i)
					}
				}
				wg.Wait()
				if i := slices.IndexFunc(bad, func(s string) bool { return s != "" }); i >= 0 {
					t.Fatalf("client %d of 1,000: %s", i, bad[i])
				}
				low, top, tenth := slices.Min(waits), slices.Max(waits), (tt.hi-tt.lo)/10
				atTop := len(slices.DeleteFunc(slices.Clone(waits), func(w time.Duration) bool { return w != tt.hi }))
				if !tt.early && (low < tt.lo || top > tt.hi || low > tt.lo+tenth || top < tt.hi-tenth || tt.hi-tt.lo > ms && atTop > 2) {
					t.Errorf("waits span [%v, %v], %d of them at the top, want near [%v, %v], at most 2 at the top", low, top, atTop, tt.lo, tt.hi)
				}
			})
		})
	}
}

// TestDeadlineEndsTheBackoff: with a deadline left away and calls that take
// the row's times (the last repeats) and fail, Do must make the row's calls,
// then return fn's error itself where a stop above comes first, or else, ctx
// live, the early error, matching DeadlineExceeded and fn's. The rows fix
// the count whatever the waits, but the third: a second wait of exactly 0,
// a chance of 1e-9, would give it a fourth call.
func TestDeadlineEndsTheBackoff(t *testing.T) {
	const ms, sec = time.Millisecond, time.Second
	tests := []struct {
		name  string
		p     retry.Policy
		left  time.Duration
		calls []time.Duration
		want  int  // calls
		early bool // the early error, not fn's
	}{
		{"less than half a range fits: one last call", retry.Policy{Attempts: 20, BaseDelay: 10 * sec, MaxDelay: 10 * sec}, sec, []time.Duration{0}, 2, true},
		{"Attempts comes first", retry.Policy{Attempts: 2, BaseDelay: 10 * sec, MaxDelay: 10 * sec}, sec, []time.Duration{0}, 2, false},
		{"exactly half fits: Do goes on", retry.Policy{Attempts: 20, BaseDelay: 2 * sec, MaxDelay: 2 * sec}, sec + 1, []time.Duration{0}, 3, true},
		{"more than half fits: Do goes on", retry.Policy{Attempts: 3, BaseDelay: 2 * sec, MaxDelay: 2 * sec}, 3 * sec / 2, []time.Duration{0}, 3, false},
		{"the slowest call is the estimate", retry.Policy{Attempts: 20, BaseDelay: 1}, 42 * ms, []time.Duration{20 * ms, 5 * ms}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), tt.left)
				defer cancel()
				calls, start := 0, time.Now()
				err := retry.Do(ctx, tt.p, func(context.Context) error {
					time.Sleep(tt.calls[min(calls, len(tt.calls)-1)])
					calls++
					return errBoom
				})
				early := errors.Is(err, context.DeadlineExceeded) && errors.Is(err, errBoom) && ctx.Err() == nil && time.Since(start) < tt.left
				if (tt.early && !early) || (!tt.early && err != errBoom) || calls != tt.want {
					t.Errorf("Do() = %v after %d calls, ctx.Err() = %v, want %d calls, then the early error: %t", err, calls, ctx.Err(), tt.want, tt.early)
				}
			})
		})
	}
}

// TestHintedWaitsGoOnNearTheDeadline: a hint sets the pace, so a hinted
// range is cut to what fits however little that is. 1,000 clients told h on
// every failure, with 1s left and ranges of 10s, must each make 2 calls or
// more and get fn's error or the early error; after a first wait drawn from
// [h, 1s), a third call fits for 8 clients in 9 or more, so at least half
// must make one (missed with a chance below 1e-200).
func TestHintedWaitsGoOnNearTheDeadline(t *testing.T) {
	for _, h := range []time.Duration{100 * time.Millisecond, 1} {
		bubble(t, func(t *testing.T) {
			p := retry.Policy{Attempts: 20, BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second}
			more := 0
			for range 1000 {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				calls := 0
				err := retry.Do(ctx, p, func(context.Context) error { calls++; return hint(h) })
				if !errors.Is(err, hint(h)) || ctx.Err() != nil || calls < 2 {
					t.Fatalf("hint %v: Do() = %v after %d calls, ctx.Err() = %v, want fn's error or the early error after 2 calls or more", h, err, calls, ctx.Err())
				}
				if calls > 2 {
					more++
				}
				cancel()
			}
			if more < 500 {
				t.Errorf("hint %v: %d of 1,000 clients made more than 2 calls, want at least 500", h, more)
			}
		})
	}
}

// Policy's waits: after attempt n fails, a draw from [0, c], where c is
// min(MaxDelay, BaseDelay<<(n-1)); after a hint h > 0, from [h, min(MaxDelay, h+max(h, c))].

// lastWaits calls Do 400 times in virtual time with an fn that fails n
// times with err, then succeeds, and returns the wait after attempt n of
// each. Every other call of Do has a deadline far beyond MaxDelay, which must
// not change the range.
func lastWaits(t *testing.T, p retry.Policy, err error, n int) []time.Duration {
	t.Helper()
	waits := make([]time.Duration, 400)
	bubble(t, func(t *testing.T) {
		far, cancel := context.WithTimeout(context.Background(), 1000*time.Hour)
		defer cancel()
		for i := range waits {
			r := newRecorder(slices.Repeat([]error{err}, n)...)
			if err := retry.Do([]context.Context{context.Background(), far}[i%2], p, r.fn); err != nil {
				t.Fatalf("Do() = %v, want nil", err)
			}
			waits[i] = r.at[n] - r.at[n-1]
		}
	})
	return waits
}

// TestWaitsSpanEachCeiling checks that the wait after attempt n is drawn
// from 0 up to its own ceiling, BaseDelay<<(n-1), to the nanosecond: of 400
// draws from [0, 4ns], none is 0, or none 4ns, with a chance of 0.8^400,
// 1.7e-39, each, and the narrower ranges miss an end with less.
func TestWaitsSpanEachCeiling(t *testing.T) {
	for n, c := range map[int]time.Duration{1: 1, 2: 2, 3: 4} {
		waits := lastWaits(t, retry.Policy{BaseDelay: 1, MaxDelay: time.Hour}, errBoom, n)
		if low, top := slices.Min(waits), slices.Max(waits); low != 0 || top != c {
			t.Errorf("wait after attempt %d spans [%v, %v], want [0, %v]", n, low, top, c)
		}
	}
}

// TestWaitIsJittered checks that 400 waits look drawn uniformly from the
// range of Policy's doc, near MaxDelay too, so that clients told one hint come
// back apart: all in it, their mean within a tenth of its width of the
// middle (missed with a chance of 4e-12, 6.9 standard deviations), and some
// within a tenth of each end (missed with a chance of 0.9^400, 5e-19, each).
func TestWaitIsJittered(t *testing.T) {
	ns := retry.Policy{Attempts: 2, BaseDelay: 1, MaxDelay: time.Minute}          // ceiling 1ns
	s := retry.Policy{Attempts: 2, BaseDelay: time.Second, MaxDelay: time.Minute} // ceiling 1s
	const sec = time.Second
	tests := []struct {
		name   string
		p      retry.Policy
		err    error
		lo, hi time.Duration
	}{
		{"no hint draws from [0, ceiling]", s, errBoom, 0, sec},
		{"a zero hint is none", s, hint(0), 0, sec},
		{"a negative hint is none", ns, hint(-time.Hour), 0, 1},
		{"a hint above the ceiling draws as wide as the hint", s, hint(3 * sec), 3 * sec, 6 * sec},
		{"a hint below the ceiling draws as wide as the ceiling", s, hint(sec / 10), sec / 10, 11 * sec / 10},
		{"a hint near MaxDelay draws in the room left", retry.Policy{Attempts: 2, BaseDelay: sec, MaxDelay: 30 * sec}, hint(59 * sec / 2), 59 * sec / 2, 30 * sec},
		{"the room left is below the default MaxDelay of 10s", retry.Policy{Attempts: 2, BaseDelay: sec}, hint(19 * sec / 2), 19 * sec / 2, 10 * sec},
		{"a wrapped hint counts", ns, fmt.Errorf("get: %w", hint(sec)), sec, 2 * sec},
		{"the first of joined hints counts", ns, errors.Join(hint(sec), hint(2*sec)), sec, 2 * sec},
		{"the first of nested hints counts", ns, fmt.Errorf("%w", errors.Join(fmt.Errorf("%w", hint(2*sec)), hint(sec))), 2 * sec, 4 * sec},
		{"an outer After lowers an inner hint", ns, retry.After(hint(time.Hour), sec), sec, 2 * sec},
		{"a hint of exactly MaxDelay, even 1ns, leaves no room", retry.Policy{Attempts: 2, BaseDelay: 1, MaxDelay: 1}, hint(1), 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waits := lastWaits(t, tt.p, tt.err, 1)
			low, top, tenth := slices.Min(waits), slices.Max(waits), (tt.hi-tt.lo)/10
			var sum time.Duration
			for _, w := range waits {
				sum += w - tt.lo
			}
			mean, mid := tt.lo+sum/400, tt.lo+(tt.hi-tt.lo)/2
			if low < tt.lo || top > tt.hi || low > tt.lo+tenth || top < tt.hi-tenth || mean < mid-tenth || mean > mid+tenth {
				t.Errorf("waits span [%v, %v] with a mean of %v, want near [%v, %v] and %v", low, top, mean, tt.lo, tt.hi, mid)
			}
			// Clamping h + draw to MaxDelay would put about half of the waits
			// near MaxDelay at exactly MaxDelay. A uniform draw lands there with a
			// chance of 1/(room+1), 2e-9 at most where the room is 0.5s or
			// more, so three or more of 400 do with a chance of 8e-20.
			if atMax := len(slices.DeleteFunc(waits, func(w time.Duration) bool { return w != tt.hi })); atMax > 2 && tt.hi-tt.lo >= sec/2 {
				t.Errorf("%d of 400 waits are exactly %v, want the jitter kept near MaxDelay", atMax, tt.hi)
			}
		})
	}
}

// TestDelay checks that Delay(n), the wait after attempt n fails, draws
// from [0, c] for the ceiling c of Policy's doc, min(MaxDelay, BaseDelay<<(n-1)) with
// n below 1 meaning 1, and reaches it: the largest of 20,000 draws is
// within c/128 of c, exact below 128ns, missed with a chance below 1e-68.
func TestDelay(t *testing.T) {
	tests := []struct {
		p retry.Policy
		n int
		c time.Duration
	}{
		{retry.Policy{}, 1, 100 * time.Millisecond}, // the defaults: BaseDelay after attempt 1
		{retry.Policy{}, 0, 100 * time.Millisecond}, // 0 means 1
		{retry.Policy{}, 41, 10 * time.Second},
		{retry.Policy{BaseDelay: 1, MaxDelay: 8}, 4, 8},                          // BaseDelay<<(n-1) equal to MaxDelay
		{retry.Policy{BaseDelay: 3, MaxDelay: 7}, 2, 6},                          // BaseDelay equal to MaxDelay>>(n-1)
		{retry.Policy{BaseDelay: 2, MaxDelay: 1}, 1, 1},                          // BaseDelay above MaxDelay
		{retry.Policy{BaseDelay: 5, MaxDelay: 8}, math.MinInt, 5},                // a negative n means 1
		{retry.Policy{BaseDelay: 1<<40 + 1, MaxDelay: time.Hour}, 25, time.Hour}, // a shift that would wrap
		{retry.Policy{BaseDelay: 1, MaxDelay: time.Hour}, math.MaxInt, time.Hour},
		{retry.Policy{BaseDelay: math.MaxInt64, MaxDelay: math.MaxInt64}, math.MaxInt, math.MaxInt64},
	}
	for _, tt := range tests {
		var top time.Duration
		for range 20000 {
			d := tt.p.Delay(tt.n)
			if d < 0 || d > tt.c {
				t.Fatalf("%+v.Delay(%d) = %v, want within [0, %v]", tt.p, tt.n, d, tt.c)
			}
			top = max(top, d)
		}
		if top < tt.c-tt.c/128 {
			t.Errorf("largest of 20000 %+v.Delay(%d) = %v, want %v or within a 128th below", tt.p, tt.n, top, tt.c)
		}
	}
}

// Permanent and After.

// TestPermanentAndAfter: nil in, nil out; a marker or hint whose message
// and Unwrap are err's, the message as fmt prints err; one marker for two;
// err itself for an After of d <= 0.
func TestPermanentAndAfter(t *testing.T) {
	after := func(err error) error { return retry.After(err, 1) }
	for name, wrap := range map[string]func(error) error{"Permanent": retry.Permanent, "After 1ns": after} {
		inner := fmt.Errorf("get: %w", io.EOF)
		err := wrap(inner)
		if wrap(nil) != nil || err.Error() != inner.Error() || errors.Unwrap(err) != inner || !errors.Is(err, io.EOF) {
			t.Errorf("%s(err) = %q and unwraps to %#v, want err's message and err; of nil, %v, want nil", name, err, errors.Unwrap(err), wrap(nil))
		}
		if got := wrap((*appError)(nil)).Error(); got != "<nil>" { // (*appError).Error panics on nil
			t.Errorf("%s of a nil *appError = %q, want %q, as fmt prints it", name, got, "<nil>")
		}
	}
	if marker := retry.Permanent(errBoom); retry.Permanent(marker) != marker || errors.Is(marker, io.EOF) {
		t.Errorf("Permanent(marker) = %#v, want %#v, matching only what it wraps", retry.Permanent(marker), marker)
	}
	if h, ok := after(errBoom).(interface{ RetryAfter() time.Duration }); !ok || h.RetryAfter() != 1 {
		t.Errorf("After(err, 1ns) = %#v, want a hint of 1ns", after(errBoom))
	}
	for _, d := range []time.Duration{0, -1, math.MinInt64} {
		if err := retry.After(errBoom, d); err != errBoom {
			t.Errorf("After(errBoom, %v) = %#v, want errBoom unchanged", d, err)
		}
	}
}

// TestErrPermanent: errors.Is finds ErrPermanent wherever a marker is, and
// errors.As the marker's Retryable false unless another comes first, in
// fn's error and in Do's, which adds the cancel fn makes.
func TestErrPermanent(t *testing.T) {
	perm := retry.Permanent(errBoom)
	tests := []struct {
		name              string
		err               error
		marked, retryable bool // retryable: what the first Retryable method returns
	}{
		{"a marker", perm, true, false},
		{"a wrapped marker", fmt.Errorf("op: %w", perm), true, false},
		{"a marker in a join after Retryable true", errors.Join(retryable(true), perm), true, true},
		{"a marker below Retryable true", &appError{perm, true}, true, true},
		{"no marker", &appError{retryable(false), true}, false, true},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithCancel(context.Background())
		err := retry.Do(ctx, retry.Policy{}, func(context.Context) error { cancel(); return tt.err })
		for _, e := range []error{tt.err, err} {
			var r interface{ Retryable() bool }
			marked, found := errors.Is(e, retry.ErrPermanent), errors.As(e, &r)
			if marked != tt.marked || !found || r.Retryable() != tt.retryable {
				t.Errorf("%s: errors.Is(%v, ErrPermanent) = %t, want %t; the first Retryable is %#v, want one returning %t",
					tt.name, e, marked, tt.marked, r, tt.retryable)
			}
		}
	}
}

// TestErrPermanentItself: ErrPermanent itself, bare or wrapped with %w, stops
// Do at once, and an enclosing Do too, though it has no Retryable method.
func TestErrPermanentItself(t *testing.T) {
	p := retry.Policy{Attempts: 3, BaseDelay: time.Nanosecond}
	for _, perm := range []error{retry.ErrPermanent, fmt.Errorf("%w: user 7", retry.ErrPermanent)} {
		outer, inner := 0, 0
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			outer++
			return retry.Do(ctx, p, func(context.Context) error { inner++; return perm })
		})
		if err != perm || outer != 1 || inner != 1 {
			t.Errorf("Do(Do()) = %v after %d and %d calls, want %v after 1 and 1", err, outer, inner, perm)
		}
	}
}

// Allocations.

// TestAllocs: a first-try success allocates nothing, as README says; two
// failures, with a ctx that can be canceled or not or has a deadline, at
// most what the leanest peer, avast/retry-go v5.1.1, does on its retry
// path: 8 objects.
func TestAllocs(t *testing.T) {
	cancelable, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline, stop := context.WithTimeout(context.Background(), time.Hour)
	defer stop()
	p := retry.Policy{BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}
	for _, ctx := range []context.Context{context.Background(), cancelable, deadline} {
		calls := 0
		fn := func(context.Context) error { // fails twice, then succeeds, over and over
			if calls++; calls%3 != 0 {
				return errBoom
			}
			return nil
		}
		first := testing.AllocsPerRun(100, func() {
			if _, err := retry.DoValue(ctx, p, func(context.Context) (int, error) { return 1, nil }); err != nil {
				t.Fatal(err)
			}
		})
		two := testing.AllocsPerRun(100, func() {
			if err := retry.Do(ctx, p, fn); err != nil {
				t.Fatal(err)
			}
		})
		if first != 0 || two > 8 {
			t.Errorf("with %v, a first-try success allocates %v objects and two failures %v, want 0 and at most 8", ctx, first, two)
		}
	}
}

// The tour.

// TestTour is README's first command, go test -run Tour -v: it shows the
// package at work, in plain text. It runs in virtual time, so that each
// time it prints is exact and each wait is asserted within its range.
func TestTour(t *testing.T) {
	bubble(t, func(t *testing.T) {
		say := func(format string, args ...any) {
			if testing.Verbose() {
				fmt.Printf(format+"\n", args...)
			}
		}
		refused := errors.New("connection refused")

		say("\n1. A call that fails twice, then succeeds, with the zero Policy: at most 4")
		say("   attempts, and after attempt n fails, a wait drawn from [0, 100ms<<(n-1)]:")
		r := newRecorder(refused, refused)
		err := retry.Do(context.Background(), retry.Policy{}, r.fn)
		say("   attempt 1 at %v -> %v", r.at[0], refused)
		for i := 1; i < r.calls(); i++ {
			wait, c, result := r.at[i]-r.at[i-1], 100*time.Millisecond<<(i-1), "ok"
			if i < len(r.errs) {
				result = r.errs[i].Error()
			}
			say("   attempt %d at %v, after a wait of %v from [0s, %v] -> %s", i+1, r.at[i], wait, c, result)
			if wait < 0 || wait > c {
				t.Errorf("wait %d = %v, want within [0s, %v]", i, wait, c)
			}
		}
		say("   Do returned %v after %d attempts, at %v", err, r.calls(), time.Since(r.start))
		if err != nil || r.calls() != 3 || r.at[0] != 0 || time.Since(r.start) != r.at[2] {
			t.Errorf("Do() = %v after calls at %v, returning at %v, want nil after 3, the first at 0s, returning at the last", err, r.at, time.Since(r.start))
		}

		say("\n2. A permanent error stops Do at once:")
		notFound := retry.Permanent(errors.New("GET /users/7: 404 Not Found"))
		r = newRecorder(notFound)
		err = retry.Do(context.Background(), retry.Policy{}, r.fn)
		say("   attempt 1 -> %v, marked with retry.Permanent", notFound)
		say("   Do returned %q after %d attempt, at %v; errors.Is(err, retry.ErrPermanent) = %t",
			err, r.calls(), time.Since(r.start), errors.Is(err, retry.ErrPermanent))
		if err != notFound || r.calls() != 1 || time.Since(r.start) != 0 || !errors.Is(err, retry.ErrPermanent) {
			t.Errorf("Do() = %v after %d attempts, at %v, want %v, matching ErrPermanent, after 1, at 0s", err, r.calls(), time.Since(r.start), notFound)
		}

		say("\n3. A cancel during a wait returns at once, with the cause and the last error:")
		say("   Policy{MaxDelay: time.Minute}; attempt 1 -> HTTP 503 with Retry-After: 30, which fn")
		say("   hands Do with retry.After; the wait is drawn from [30s, 1m]; ctx is canceled at 50ms")
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		shutdown := errors.New("shutting down")
		time.AfterFunc(50*time.Millisecond, func() { cancel(shutdown) })
		r = newRecorder(retry.After(errors.New("HTTP 503 (Retry-After 30s)"), 30*time.Second))
		err = retry.Do(ctx, retry.Policy{MaxDelay: time.Minute}, r.fn)
		canceled, cause := errors.Is(err, context.Canceled), errors.Is(err, shutdown)
		say("   Do returned at %v: %v\n   errors.Is(err, context.Canceled) = %t, errors.Is(err, cause) = %t", time.Since(r.start), err, canceled, cause)
		const want = "retry: context canceled (cause: shutting down); last error: HTTP 503 (Retry-After 30s)"
		if err == nil || err.Error() != want || !canceled || !cause || r.calls() != 1 || time.Since(r.start) != 50*time.Millisecond {
			t.Errorf("Do() = %v after %d attempts, at %v, want %q, matching %v and the cause, after 1, at 50ms",
				err, r.calls(), time.Since(r.start), want, context.Canceled)
		}
	})
}

// The fuzzers.

// effective returns p's fields as they count: zero or negative means the
// default that the field's doc gives.
func effective(p retry.Policy) (attempts int, base, limit time.Duration) {
	if attempts = p.Attempts; attempts <= 0 {
		attempts = 4
	}
	if base = p.BaseDelay; base <= 0 {
		base = 100 * time.Millisecond
	}
	if limit = p.MaxDelay; limit <= 0 {
		limit = 10 * time.Second
	}
	return attempts, base, limit
}

// atMost returns min(limit, x) for an x in math/big, where Policy's
// formulas, BaseDelay<<n and h+max(h, c), cannot overflow.
func atMost(limit time.Duration, x *big.Int) time.Duration {
	if x.Cmp(big.NewInt(int64(limit))) > 0 {
		return limit
	}
	return time.Duration(x.Int64())
}

// ceiling returns the ceiling after attempt n fails, n >= 1, for the
// Policy's effective fields: c = min(MaxDelay, BaseDelay<<(n-1)).
func ceiling(base, limit time.Duration, n int) time.Duration {
	return atMost(limit, new(big.Int).Lsh(big.NewInt(int64(base)), uint(min(n-1, 64))))
}

// FuzzDelay checks Delay against the ceiling of Policy's doc: Delay(n) is
// the wait after attempt n fails, and n below 1 means 1.
func FuzzDelay(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(0), int64(0), 1)
	f.Add(int64(1<<40+1), int64(time.Hour), 25)
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), math.MaxInt)
	f.Add(int64(-1), int64(math.MinInt64), math.MinInt)
	f.Fuzz(func(t *testing.T, base, limit int64, n int) {
		p := retry.Policy{BaseDelay: time.Duration(base), MaxDelay: time.Duration(limit)}
		_, b, l := effective(p)
		failed := n
		if failed < 1 {
			failed = 1
		}
		if d, c := p.Delay(n), ceiling(b, l, failed); d < 0 || d > c {
			t.Errorf("%+v.Delay(%d) = %d, want within [0, %v]", p, n, d, c)
		}
	})
}

// FuzzDo runs Do in virtual time against an fn that returns error trees
// built from the fuzzer's bytes, and checks Do's calls, waits and result
// against Do's doc and Policy's, given what the builder put in each tree.
func FuzzDo(f *testing.F) {
	f.Add(0, int64(0), int64(0), []byte{1, 1, 1, 1, 1})
	f.Add(3, int64(time.Millisecond), int64(time.Second), []byte{1, 4, 2, 6, 3, 9})
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), []byte{1, 1, 3, 200})
	f.Add(-5, int64(-1), int64(1), []byte{9, 14, 0, 5, 5, 2})
	f.Add(4, int64(time.Millisecond), int64(time.Second), []byte{8, 2, 1, 7, 4, 0, 3, 9, 12})
	f.Add(6, int64(time.Millisecond), int64(time.Minute), []byte{10, 8, 3, 7, 11, 2, 6, 1, 5, 9, 50})
	// Schedules: the defaults for negative fields, doubling up to MaxDelay, and a BaseDelay above MaxDelay.
	f.Add(-1, int64(-1), int64(-1), slices.Repeat([]byte{1}, 8))
	f.Add(6, int64(time.Second), int64(5*time.Second), slices.Repeat([]byte{1}, 12))
	f.Add(3, int64(time.Hour), int64(time.Second), slices.Repeat([]byte{1}, 6))
	// A hint of 200ms does not stretch the wait after the plain error next.
	f.Add(3, int64(time.Millisecond), int64(time.Minute), []byte{3, 200, 1})
	// The first method errors.As finds counts: a hint of 0 hides one of
	// 200ms; Retryable true hides false, above it or before it in a join,
	// but not a marker, whose own Retryable false hides a true after it.
	f.Add(3, int64(time.Millisecond), int64(time.Minute), []byte{7, 0, 3, 0, 3, 200})
	f.Add(3, int64(time.Millisecond), int64(time.Minute), []byte{21, 0, 2, 0, 7, 0, 26, 0, 2, 0})
	f.Add(3, int64(time.Millisecond), int64(time.Minute), []byte{21, 0, 4, 0, 1, 0})
	f.Add(3, int64(time.Millisecond), int64(time.Minute), []byte{7, 0, 26, 0, 4, 0, 1, 0})
	f.Add(3, int64(time.Millisecond), int64(time.Minute), []byte{7, 0, 4, 0, 1, 0, 26, 0})
	f.Fuzz(func(t *testing.T, attempts int, base, limit int64, script []byte) {
		p := retry.Policy{Attempts: attempts, BaseDelay: time.Duration(base), MaxDelay: time.Duration(limit)}
		effAttempts, effBase, effMax := effective(p)
		// Call i returns trees[i].err, until Do stops as its doc says, with
		// the error of the last tree.
		b := &builder{script: script}
		var trees, errs = []tree(nil), []error(nil)
		for {
			tr := b.tree(0)
			trees, errs = append(trees, tr), append(errs, tr.err)
			if tr.err == nil || tr.marked || tr.retryable != nil && !*tr.retryable ||
				tr.hint != nil && *tr.hint > effMax || len(trees) == effAttempts {
				break
			}
		}
		// What a caller finds in each: ErrPermanent where a marker is, its Retryable false.
		for _, tr := range trees {
			var r interface{ Retryable() bool }
			marked, found := errors.Is(tr.err, retry.ErrPermanent), errors.As(tr.err, &r)
			if marked != tr.marked || found != (tr.retryable != nil) || found && r.Retryable() != *tr.retryable {
				t.Fatalf("in %v, errors.Is(err, ErrPermanent) = %t, want %t; errors.As finds %#v, want a Retryable: %t, returning %t",
					tr.err, marked, tr.marked, r, tr.retryable != nil, tr.retryable != nil && *tr.retryable)
			}
		}
		bubble(t, func(t *testing.T) {
			r := newRecorder(errs...)
			if err := retry.Do(context.Background(), p, r.fn); err != errs[len(errs)-1] || r.calls() != len(errs) {
				t.Fatalf("Do(%+v) = %v after %d calls, want %v after %d", p, err, r.calls(), errs[len(errs)-1], len(errs))
			}
			// The bubble's clock starts in 2000 and stops at the end of
			// int64 nanoseconds, in 2262, where every later timer fires at
			// once: waits that could pass it are not checked.
			inClock := effMax <= 200*365*24*time.Hour/time.Duration(len(errs))
			for i := range len(r.at) - 1 {
				g, c := r.at[i+1]-r.at[i], ceiling(effBase, effMax, i+1) // the wait after call i+1, and its ceiling
				lo, hi := time.Duration(0), c
				if h := trees[i].hint; h != nil && *h > 0 {
					lo, hi = *h, atMost(effMax, new(big.Int).Add(big.NewInt(int64(*h)), big.NewInt(int64(max(*h, c)))))
				}
				if inClock && (g < lo || g > hi) {
					t.Errorf("wait %d after %v = %v, want within [%v, %v]", i+1, errs[i], g, lo, hi)
				}
			}
			if waited := time.Since(r.start) - r.at[len(r.at)-1]; waited != 0 {
				t.Errorf("Do returned %v after the last call, want at once", waited)
			}
		})
	})
}

// A tree is an error the builder made, with what Do's doc says Do reads in
// it, known from where the builder put what: whether a marker is in it, and
// what the first Retryable and RetryAfter methods errors.As finds return,
// or nil for none. errors.As walks the tree depth first, a node before its
// children, and a chain's As method asks its errors in turn.
type tree struct {
	err       error
	marked    bool
	retryable *bool
	hint      *time.Duration
}

// then returns what errors.As finds in a node that reads as t, then as u.
func (t tree) then(u tree) tree {
	t.marked = t.marked || u.marked
	if t.retryable == nil {
		t.retryable = u.retryable
	}
	if t.hint == nil {
		t.hint = u.hint
	}
	return t
}

// A builder makes error trees from a fuzzer's bytes, each byte choosing a
// node, and a nil error once the bytes run out.
type builder struct {
	script []byte
	leaves int
}

func (b *builder) next() byte {
	if len(b.script) == 0 {
		return 0
	}
	c := b.script[0]
	b.script = b.script[1:]
	return c
}

// tree returns a tree at the given depth, or a nil error for a 0 at the top.
func (b *builder) tree(depth int) tree {
	c := b.next()
	if depth == 0 && c == 0 {
		return tree{}
	}
	b.leaves++
	if depth == 3 {
		return tree{err: fmt.Errorf("leaf %d", b.leaves)}
	}
	// node returns a node that reads as own, then as its n children.
	node := func(own tree, n int, wrap func(...error) error) tree {
		var errs []error
		for range n {
			child := b.tree(depth + 1)
			own, errs = own.then(child), append(errs, child.err)
		}
		own.err = wrap(errs...)
		return own
	}
	ms := time.Duration(b.next()) * time.Millisecond
	bit := c&16 != 0
	switch c % 12 {
	case 1:
		return tree{err: fmt.Errorf("leaf %d", b.leaves)}
	case 2:
		return tree{err: retryable(bit), retryable: &bit}
	case 3:
		return tree{err: hint(ms), hint: &ms}
	case 4:
		no := false // a marker's Retryable returns false
		return node(tree{marked: true, retryable: &no}, 1, func(e ...error) error { return retry.Permanent(e[0]) })
	case 5:
		own := tree{}
		if ms > 0 { // else After returns err itself
			own.hint = &ms
		}
		return node(own, 1, func(e ...error) error { return retry.After(e[0], ms) })
	case 6:
		return node(tree{}, 1, func(e ...error) error { return fmt.Errorf("wrapped: %w", e[0]) })
	case 7:
		return node(tree{}, 2, errors.Join)
	case 8:
		return node(tree{}, 2, func(e ...error) error { return newChain(e...) })
	case 9:
		return node(tree{retryable: &bit}, 1, func(e ...error) error { return &appError{e[0], bit} })
	case 10:
		return node(tree{}, 2, func(e ...error) error { return fmt.Errorf("%w and %w", e[0], e[1]) })
	default:
		return node(tree{}, 1, errors.Join)
	}
}

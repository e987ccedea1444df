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

// Helpers first; then a section per rule of Do's doc, in order, opened by
// "Rule: ..."; then Policy's waits, Permanent and After, the examples'
// instructions, allocations, the fleet and the tour, and the fuzzers.

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
// has no Unwrap method, as hashicorp/go-multierror's chain does: only
// errors.Is and errors.As see inside it.
type chain struct{ errs []error }

func newChain(errs ...error) *chain { return &chain{errs} }

func (c *chain) Error() string { return fmt.Sprint(c.errs) }

func (c *chain) Is(t error) bool {
	return slices.ContainsFunc(c.errs, func(e error) bool { return errors.Is(e, t) })
}
func (c *chain) As(t any) bool {
	return slices.ContainsFunc(c.errs, func(e error) bool { return errors.As(e, t) })
}

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

// gaps returns the waits between the calls recorded at times at.
func gaps(at []time.Duration) []time.Duration {
	var g []time.Duration
	for i := 1; i < len(at); i++ {
		g = append(g, at[i]-at[i-1])
	}
	return g
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

func succeed(context.Context) error { return nil }

// failing returns an fn that fails with errBoom n times, then succeeds
// once, over and over.
func failing(n int) func(context.Context) error {
	calls := 0
	return func(context.Context) error {
		if calls++; calls%(n+1) != 0 {
			return errBoom
		}
		return nil
	}
}

// Rule: Do calls fn until it returns nil, at most Attempts times; fn gets ctx.

// ms is a policy with millisecond waits for the tests on the real clock.
var ms = retry.Policy{Attempts: 5, Base: time.Millisecond, Max: 5 * time.Millisecond}

// TestRealClock checks the loop on the real clock, where CI also runs it
// under GODEBUG=asynctimerchan=1; its last row reuses one timer 19 times.
func TestRealClock(t *testing.T) {
	cancelable, cancel := context.WithCancel(context.Background()) // so Do uses a timer
	defer cancel()
	errs := failures(19)
	tests := []struct {
		name  string
		ctx   context.Context
		p     retry.Policy
		errs  []error // what fn returns in turn, then nil
		want  error
		calls int
	}{
		{"succeeds on the third attempt", context.Background(), ms, errs[:2], nil, 3},
		{"gives up with the last error", context.Background(), ms, errs[:5], errs[4], 5},
		{"reuses its timer", cancelable, retry.Policy{Attempts: 20, Base: time.Millisecond, Max: time.Millisecond}, errs, nil, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder(tt.errs...)
			if err := retry.Do(tt.ctx, tt.p, r.fn); err != tt.want || r.calls() != tt.calls {
				t.Errorf("Do() = %v after %d calls, want %v after %d", err, r.calls(), tt.want, tt.calls)
			}
		})
	}
}

type ctxKey struct{}

func TestFnGetsDosContext(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "request 7")
	var got []any
	retry.Do(ctx, retry.Policy{Attempts: 2, Base: 1}, func(ctx context.Context) error {
		got = append(got, ctx.Value(ctxKey{}))
		return errBoom
	})
	if want := []any{"request 7", "request 7"}; !slices.Equal(got, want) {
		t.Errorf("fn got ctx values %v, want %v", got, want)
	}
}

// TestDoValue: the zero value with the error, not the value of the call
// that failed. (ExampleDoValue shows a success.)
func TestDoValue(t *testing.T) {
	v, err := retry.DoValue(context.Background(), retry.Policy{Attempts: 1}, func(context.Context) (string, error) {
		return "partial", errBoom
	})
	if v != "" || err != errBoom {
		t.Errorf("DoValue() = %q, %v, want %q, %v", v, err, "", errBoom)
	}
}

// Rule: Do panics if ctx or fn is nil, and never calls fn once ctx is done.

func TestNilContextOrFuncPanics(t *testing.T) {
	calls := 0
	fn := func(context.Context) error { calls++; return nil }
	fnValue := func(context.Context) (int, error) { calls++; return 1, nil }
	var noCtx context.Context // nil, which staticcheck flags where written as nil
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"Do, nil ctx", func() { retry.Do(noCtx, retry.Policy{}, fn) }, "retry: nil Context"},
		{"Do, nil fn", func() { retry.Do(context.Background(), retry.Policy{}, nil) }, "retry: nil func"},
		{"Do, both nil: ctx first", func() { retry.Do(noCtx, retry.Policy{}, nil) }, "retry: nil Context"},
		{"DoValue, nil ctx", func() { retry.DoValue(noCtx, retry.Policy{}, fnValue) }, "retry: nil Context"},
		{"DoValue, nil fn", func() { retry.DoValue[int](context.Background(), retry.Policy{}, nil) }, "retry: nil func"},
		{"DoValue, both nil: ctx first", func() { retry.DoValue[int](noCtx, retry.Policy{}, nil) }, "retry: nil Context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != tt.want || calls != 0 {
					t.Errorf("panic = %v after %d calls, want %q after 0", r, calls, tt.want)
				}
			}()
			tt.call()
		})
	}
}

func TestDoneContextGetsNoCall(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := retry.Do(done, retry.Policy{}, func(context.Context) error { calls++; return nil })
	v, errValue := retry.DoValue(done, retry.Policy{}, func(context.Context) (int, error) { calls++; return 1, nil })
	const want = "retry: context canceled"
	if err == nil || err.Error() != want || !errors.Is(err, context.Canceled) || v != 0 || errValue == nil || errValue.Error() != want || calls != 0 {
		t.Errorf("Do, DoValue(done ctx) = %v; %v, %v after %d calls, want %q after 0", err, v, errValue, calls, want)
	}
}

// Rule: a Permanent marker stays in the error Do returns, so every enclosing Do stops too.

// TestMarkerStopsEveryEnclosingDo: bare or wrapped, the marker comes back
// unchanged from an inner Do, stops the enclosing one, and errors.Is finds
// the error marked, as Permanent's doc says to compare.
func TestMarkerStopsEveryEnclosingDo(t *testing.T) {
	cause := errors.New("not found")
	p := retry.Policy{Attempts: 3, Base: time.Millisecond}
	tests := []struct {
		name string
		err  error // what the innermost fn returns on every call
	}{
		{"a bare marker", retry.Permanent(cause)},
		{"a wrapped marker", fmt.Errorf("get: %w", retry.Permanent(cause))},
		{"a marker around Retryable true", retry.Permanent(&appError{cause, true})},
		{"a marker on the last attempt", retry.Permanent(cause)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := p
			if i == len(tests)-1 {
				p.Attempts = 1
			}
			inner, outer := 0, 0
			err := retry.Do(context.Background(), p, func(ctx context.Context) error {
				outer++
				return retry.Do(ctx, p, func(context.Context) error { inner++; return tt.err })
			})
			if err != tt.err || !errors.Is(err, cause) || inner != 1 || outer != 1 {
				t.Errorf("Do(Do()) = %v after %d inner and %d outer calls, want %v, matching %v, after 1 and 1",
					err, inner, outer, tt.err, cause)
			}
		})
	}
}

// Rule: a wrapped marker, Retryable false, a hint above Max or the last attempt stops Do.

// nilSafe is an error type whose methods work on a nil receiver.
type nilSafe struct{}

func (*nilSafe) Error() string   { return "nil-safe" }
func (*nilSafe) Retryable() bool { return false }

// TestStopsWithFnsError has a row for each way fn's error ends Do. fn
// returns err on every call, and cancels ctx first in the rows that say so;
// Do must return err itself after calls calls, or, where canceled is true,
// an error that matches context.Canceled and err.
func TestStopsWithFnsError(t *testing.T) {
	perm := retry.Permanent(errors.New("cause"))
	final := fmt.Errorf("op: %w", retryable(false))
	var nilPtr *nilSafe
	p, hintMax := retry.Policy{Attempts: 3, Base: time.Millisecond, Max: time.Hour}, retry.Policy{Max: time.Second}
	tests := []struct {
		name             string
		p                retry.Policy
		err              error
		calls            int
		cancel, canceled bool
	}{
		{"a wrapped marker stops", p, fmt.Errorf("op: %w", perm), 1, false, false},
		{"a marker in a join stops", p, errors.Join(errBoom, perm), 1, false, false},
		{"a marker below Retryable true still stops", p, &appError{perm, true}, 1, false, false},
		{"a marker found through an Is method stops", p, newChain(errBoom, perm), 1, false, false},
		{"an Is method that finds no marker stops nothing", p, newChain(errBoom), 3, false, false},
		{"a plain error is retried until Attempts", p, errBoom, 3, false, false},
		{"Retryable false stops", p, final, 1, false, false},
		{"Retryable false in a join stops", p, errors.Join(errBoom, final), 1, false, false},
		{"Retryable true is retried", p, retryable(true), 3, false, false},
		{"a per-attempt DeadlineExceeded is retried", p, fmt.Errorf("attempt: %w", context.DeadlineExceeded), 3, false, false},
		{"true before false in a join retries", p, errors.Join(retryable(true), final), 3, false, false},
		{"false before true in a join stops", p, errors.Join(final, retryable(true)), 1, false, false},
		{"an outer Retryable true overrules an inner false", p, &appError{final, true}, 3, false, false},
		{"an outer Retryable false overrules an inner true", p, &appError{retryable(true), false}, 1, false, false},
		{"an As method that hands over Retryable false stops", p, newChain(errBoom, final), 1, false, false},
		{"an As method that hands over Retryable true retries", p, newChain(retryable(true), final), 3, false, false},
		{"a nil pointer whose Retryable says false stops", p, nilPtr, 1, false, false},
		{"a wrapped nil pointer whose Retryable says false stops", p, fmt.Errorf("op: %w", nilPtr), 1, false, false},
		{"a hint above Max stops", hintMax, hint(time.Second + 1), 1, false, false},
		{"an After above Max stops", hintMax, retry.After(errBoom, time.Second+1), 1, false, false},
		{"the zero Policy makes 4 attempts", retry.Policy{}, errBoom, 4, false, false},
		{"negative Attempts makes 4", retry.Policy{Attempts: -1}, errBoom, 4, false, false},
		{"a wrapped marker stops though ctx is done", p, fmt.Errorf("op: %w", perm), 1, true, false},
		{"Retryable false stops though ctx is done", p, final, 1, true, false},
		{"a hint above Max stops though ctx is done", hintMax, hint(time.Hour), 1, true, false},
		{"the last attempt stops though ctx is done", retry.Policy{Attempts: 1}, errBoom, 1, true, false},
		{"a hint up to Max yields to ctx", retry.Policy{Max: time.Hour}, hint(time.Hour), 1, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				r := newRecorder()
				err := retry.Do(ctx, tt.p, func(ctx context.Context) error {
					r.fn(ctx) // records the call
					if tt.cancel {
						cancel()
					}
					return tt.err
				})
				if r.calls() != tt.calls || tt.canceled != (err != tt.err) ||
					tt.canceled && (!errors.Is(err, context.Canceled) || !errors.Is(err, tt.err)) {
					t.Errorf("Do() = %v after %d calls, want %v (canceled: %t) after %d", err, r.calls(), tt.err, tt.canceled, tt.calls)
				}
				if last := r.at[len(r.at)-1]; time.Since(r.start) != last {
					t.Errorf("Do returned %v after the last call, want at once", time.Since(r.start)-last)
				}
			})
		})
	}
}

// TestMarkedCauseStopsEnclosingDo: a marker in the cause of an inner Do's
// cancel stays in the error that Do returns, and stops the enclosing Do,
// whose own ctx lives. (ExamplePermanent shows a marker in fn's error.)
func TestMarkedCauseStopsEnclosingDo(t *testing.T) {
	bubble(t, func(t *testing.T) {
		shutdown, unavailable := errors.New("shutting down"), errors.New("HTTP 503")
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
		if outer != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, shutdown) || !errors.Is(err, unavailable) {
			t.Errorf("Do() = %v after %d calls, want an error matching %v, %v and %v after 1",
				err, outer, context.Canceled, shutdown, unavailable)
		}
	})
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

// Rule: once ctx is done, Do returns an error that matches ctx.Err(), its cause and fn's.

// hourBoom is an error with the message "boom" and a hint of an hour.
type hourBoom struct{}

func (hourBoom) Error() string             { return "boom" }
func (hourBoom) RetryAfter() time.Duration { return time.Hour }

// TestStopMessages pins the messages of the errors Do makes when ctx ends
// during fn's first call, or the wait, an hour, would reach its deadline,
// and that each part is said once: fn's error comes back as it is when it
// already matches all that Do's error would add.
func TestStopMessages(t *testing.T) {
	shutdown, slow := errors.New("shutting down"), errors.New("slow")
	p := retry.Policy{Base: time.Hour, Max: time.Hour}
	cancelWith := func(cause error) func() (context.Context, func()) {
		return func() (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(context.Background())
			return ctx, func() { cancel(cause) }
		}
	}
	inOneSecond := func(cause error) func() (context.Context, func()) {
		return func() (context.Context, func()) {
			return context.WithTimeoutCause(context.Background(), time.Second, cause)
		}
	}
	fail := func(_ context.Context, end func()) error { end(); return hourBoom{} }
	failLate := func(context.Context, func()) error { time.Sleep(2 * time.Second); return hourBoom{} }
	inner := func(ctx context.Context, end func()) error { // a Do inside fn
		return retry.Do(ctx, p, func(ctx context.Context) error { return fail(ctx, end) })
	}
	ctxErr := func(ctx context.Context, end func()) error { end(); return ctx.Err() }
	canceled, deadline, boom := context.Canceled, context.DeadlineExceeded, hourBoom{}
	tests := []struct {
		name  string
		ctx   func() (context.Context, func()) // and what ends it
		fn    func(ctx context.Context, end func()) error
		same  bool   // Do returns fn's error itself
		want  string // Do's message
		match []error
	}{
		{"a plain cancel names no cause", cancelWith(nil), fail, false,
			"retry: context canceled; last error: boom", []error{canceled, boom}},
		{"a cancel with a cause names it", cancelWith(shutdown), fail, false,
			"retry: context canceled (cause: shutting down); last error: boom", []error{canceled, shutdown, boom}},
		{"a deadline that passed during fn", inOneSecond(nil), failLate, false,
			"retry: context deadline exceeded; last error: boom", []error{deadline, boom}},
		{"a deadline with a cause", inOneSecond(slow), failLate, false,
			"retry: context deadline exceeded (cause: slow); last error: boom", []error{deadline, slow, boom}},
		{"a wait that would reach the deadline", inOneSecond(nil), func(context.Context, func()) error { return boom }, false,
			"retry: the next wait would reach the context deadline; last error: boom", []error{deadline, boom}},
		{"an inner Do's cancel comes back as it is", cancelWith(nil), inner, true,
			"retry: context canceled; last error: boom", []error{canceled, boom}},
		{"an inner Do's cancel with a cause comes back as it is", cancelWith(shutdown), inner, true,
			"retry: context canceled (cause: shutting down); last error: boom", []error{canceled, shutdown, boom}},
		{"an inner Do's early deadline return comes back as it is", inOneSecond(nil),
			func(ctx context.Context, _ func()) error { return inner(ctx, func() {}) }, true,
			"retry: the next wait would reach the context deadline; last error: boom", []error{deadline, boom}},
		{"ctx.Err() itself comes back as it is", cancelWith(nil), ctxErr, true,
			"context canceled", []error{canceled}},
		{"ctx.Err() gets a cause it does not match", cancelWith(shutdown), ctxErr, false,
			"retry: context canceled (cause: shutting down); last error: context canceled", []error{canceled, shutdown}},
		{"the cause alone gets ctx.Err()", cancelWith(shutdown),
			func(_ context.Context, end func()) error { end(); return shutdown }, false,
			"retry: context canceled (cause: shutting down); last error: shutting down", []error{canceled, shutdown}},
		{"an inner Do's cancel under an outer deadline gets the deadline", inOneSecond(nil),
			func(ctx context.Context, _ func()) error {
				ctx, cancel := context.WithCancel(ctx)
				return inner(ctx, cancel)
			}, false,
			"retry: the next wait would reach the context deadline; last error: retry: context canceled; last error: boom",
			[]error{deadline, canceled, boom}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				ctx, end := tt.ctx()
				defer end()
				var last error
				calls := 0
				err := retry.Do(ctx, p, func(ctx context.Context) error {
					calls++
					last = tt.fn(ctx, end)
					return last
				})
				if err == nil || err.Error() != tt.want || (err == last) != tt.same || calls != 1 {
					t.Errorf("Do() = %q (fn's error itself: %t) after %d calls, want %q (%t) after 1",
						err, err == last, calls, tt.want, tt.same)
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

// A brokenCtx is done, but its Err says it is not: it breaks the Context
// contract.
type brokenCtx struct {
	context.Context
	done chan struct{}
}

func (c brokenCtx) Done() <-chan struct{} { return c.done }

// TestBrokenContextGetsAnError: a ctx that breaks the Context contract
// gets an error that holds fn's, and a message, never a panic.
func TestBrokenContextGetsAnError(t *testing.T) {
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

// Rule: a wait that would reach ctx's deadline ends Do at once.

// TestStopsBeforeAWaitThatWouldReachTheDeadline: a hint of Max makes the wait
// Max exactly: 1s with 1s left stops Do at once, and 2ns less is taken. The
// early stop comes while ctx.Err() is nil, so the deadline's cause is not in
// Do's error.
func TestStopsBeforeAWaitThatWouldReachTheDeadline(t *testing.T) {
	cause := errors.New("the deadline's cause")
	for _, early := range []bool{true, false} {
		bubble(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeoutCause(context.Background(), time.Second, cause)
			defer cancel()
			wait := map[bool]time.Duration{true: time.Second, false: time.Second - 2}[early]
			r := newRecorder(hint(wait))
			err := retry.Do(ctx, retry.Policy{Base: 1, Max: wait}, r.fn)
			switch {
			case !early && (err != nil || r.calls() != 2):
				t.Errorf("Do() = %v after %d calls, want nil after 2", err, r.calls())
			case early && (time.Since(r.start) != 0 || r.calls() != 1 || ctx.Err() != nil):
				t.Errorf("Do returned after %v and %d calls, ctx.Err() = %v, want at once after 1, before the deadline",
					time.Since(r.start), r.calls(), ctx.Err())
			case early && (!errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, r.errs[0]) || errors.Is(err, cause)):
				t.Errorf("Do() = %v, want it to match %v and %v, not %v", err, context.DeadlineExceeded, r.errs[0], cause)
			}
		})
	}
	// A hint of 1s with Max 2s draws from [1s, 2s]; with 1.5s left, half of
	// the calls stop at once, and the rest wait less than 1.5s. Of 2,000,
	// fewer than 800 or more than 1,200 stop with a chance near 1e-18 (9
	// standard deviations): "never early" and "always early" both fail.
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

// Rule: a ctx that ends during the wait ends Do then.

// TestCancelDuringWaitReturnsThen cancels ctx during the wait after a hint.
// In the second row, half of MaxInt64 plus a draw from [0, MaxInt64] would
// overflow about every other run, and a negative wait call fn again at once.
func TestCancelDuringWaitReturnsThen(t *testing.T) {
	tests := []struct {
		p        retry.Policy
		h, after time.Duration // the hint, and when ctx is canceled
	}{
		{retry.Policy{Max: time.Hour}, 30 * time.Minute, 50 * time.Millisecond},
		{retry.Policy{Base: math.MaxInt64, Max: math.MaxInt64}, math.MaxInt64 / 2, 1000 * time.Hour},
	}
	for _, tt := range tests {
		for range 16 {
			bubble(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(tt.after, cancel)
				r := newRecorder(hint(tt.h))
				err := retry.Do(ctx, tt.p, r.fn)
				if time.Since(r.start) != tt.after || r.calls() != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, r.errs[0]) {
					t.Fatalf("Do() = %v after %v and %d calls, want an error matching %v and %v after %v and 1",
						err, time.Since(r.start), r.calls(), context.Canceled, r.errs[0], tt.after)
				}
			})
		}
	}
}

// A lateCtx is canceled when Do asks for its deadline, after its look at
// ctx.Err and before it waits, and says so through Err alone: Done never
// closes. It makes deterministic the races in which a cancel comes just
// before a wait of 0, or as the timer fires and select picks the timer.
type lateCtx struct {
	context.Context
	done chan struct{}
	err  error
}

func (c *lateCtx) Deadline() (time.Time, bool) { c.err = context.Canceled; return time.Time{}, false }
func (c *lateCtx) Done() <-chan struct{}       { return c.done }
func (c *lateCtx) Err() error                  { return c.err }

// TestCancelAsAWaitEndsGetsNoMoreCalls: with a ceiling of 1ns, half the waits
// are 0 and half 1ns, on a timer; 64 Dos all draw one with a chance of 2⁻⁶³.
func TestCancelAsAWaitEndsGetsNoMoreCalls(t *testing.T) {
	for range 64 {
		ctx := &lateCtx{Context: context.Background(), done: make(chan struct{})}
		r := newRecorder(errBoom)
		if err := retry.Do(ctx, retry.Policy{Attempts: 2, Base: 1, Max: 1}, r.fn); !errors.Is(err, context.Canceled) || r.calls() != 1 {
			t.Fatalf("Do() = %v after %d calls, want canceled after 1", err, r.calls())
		}
	}
}

// TestCancelLeavesNoTimerRunning cancels 10,000 Do calls during waits of an
// hour, under the timer semantics before Go 1.23 (asynctimerchan=1): only
// there does a timer that is not stopped stay in the heap until it fires.
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

// The waits, as Policy's doc gives them.

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
// within a tenth of its width of either end, which uniform draws miss with
// chances near 1e-11 (6.9 standard deviations) and 0.9⁴⁰⁰, 5e-19.
func checkUniform(t *testing.T, waits []time.Duration, lo, hi time.Duration) {
	t.Helper()
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
	if mean := lo + sum/time.Duration(len(waits)); mean < (lo+hi)/2-tenth || mean > (lo+hi)/2+tenth {
		t.Errorf("mean wait = %v, want near %v", mean, (lo+hi)/2)
	}
	if low > lo+tenth || top < hi-tenth {
		t.Errorf("waits span [%v, %v], want near [%v, %v]", low, top, lo, hi)
	}
}

// TestWaitsSpanEachCeiling checks that wait n+1 is drawn from 0 up to its
// own ceiling, Base·2ⁿ, to the nanosecond: the smallest and largest of 300
// draws from [0, 4ns] miss 0 and 4ns with a chance of 0.8³⁰⁰, 1e-29.
func TestWaitsSpanEachCeiling(t *testing.T) {
	bubble(t, func(t *testing.T) {
		smallest, largest := []time.Duration{9, 9, 9}, make([]time.Duration, 3)
		for range 300 {
			r := newRecorder(failures(3)...)
			retry.Do(context.Background(), retry.Policy{Attempts: 4, Base: 1, Max: time.Hour}, r.fn)
			for i, g := range gaps(r.at) {
				smallest[i], largest[i] = min(smallest[i], g), max(largest[i], g)
			}
		}
		if !slices.Equal(smallest, []time.Duration{0, 0, 0}) || !slices.Equal(largest, []time.Duration{1, 2, 4}) {
			t.Errorf("waits span %v to %v, want [0 0 0] to [1ns 2ns 4ns]", smallest, largest)
		}
	})
}

// TestWaitIsJittered checks that a wait is drawn uniformly from the range
// of Policy's doc, with no hint or after the first RetryAfter errors.As
// finds, near Max too, so that clients told one hint come back apart.
func TestWaitIsJittered(t *testing.T) {
	ns := retry.Policy{Attempts: 2, Base: 1, Max: time.Minute}          // ceiling 1ns
	s := retry.Policy{Attempts: 2, Base: time.Second, Max: time.Minute} // ceiling 1s
	const sec = time.Second
	tests := []struct {
		name   string
		p      retry.Policy
		err    error
		lo, hi time.Duration
	}{
		{"no hint draws from [0, ceiling]", s, errBoom, 0, sec},
		{"a zero hint is none", s, hint(0), 0, sec},
		{"a negative hint is none", s, hint(-time.Hour), 0, sec},
		{"an outer zero hint overrules an inner one", s, errors.Join(hint(0), hint(time.Hour)), 0, sec},
		{"a hint above the ceiling draws as wide as the hint", s, hint(3 * sec), 3 * sec, 6 * sec},
		{"a hint below the ceiling draws as wide as the ceiling", s, hint(100 * time.Millisecond),
			100 * time.Millisecond, 1100 * time.Millisecond},
		{"a hint near Max draws in the room left", retry.Policy{Attempts: 2, Base: sec, Max: 30 * sec},
			hint(29500 * time.Millisecond), 29500 * time.Millisecond, 30 * sec},
		{"the room left is below the default Max of 10s", retry.Policy{Attempts: 2, Base: sec},
			hint(9500 * time.Millisecond), 9500 * time.Millisecond, 10 * sec},
		{"a wrapped hint counts", ns, fmt.Errorf("get: %w", hint(sec)), sec, 2 * sec},
		{"the first of joined hints counts", ns, errors.Join(hint(sec), hint(2*sec)), sec, 2 * sec},
		{"the first of joined hints counts when it is larger", ns, errors.Join(hint(2*sec), hint(sec)), 2 * sec, 4 * sec},
		{"the first of nested hints counts", ns,
			fmt.Errorf("%w", errors.Join(fmt.Errorf("%w", hint(2*sec)), hint(sec))), 2 * sec, 4 * sec},
		{"an outer After lowers an inner hint", ns, retry.After(hint(time.Hour), sec), sec, 2 * sec},
		{"an outer After lowers an inner After", ns, retry.After(retry.After(errBoom, time.Hour), sec), sec, 2 * sec},
		{"a hint of exactly Max, even 1ns, leaves no room", retry.Policy{Attempts: 2, Base: 1, Max: 1}, hint(1), 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			waits := firstWaits(t, tt.p, tt.err, 400)
			checkUniform(t, waits, tt.lo, tt.hi)
			// Clamping h + draw to Max would put about half of the waits
			// near Max at exactly 30s; a uniform draw puts each there
			// with a chance of 2e-9, so three of 400 with a chance of 1e-17.
			atMax := 0
			for _, w := range waits {
				if w == tt.hi {
					atMax++
				}
			}
			if atMax > 2 && tt.lo < tt.hi {
				t.Errorf("%d of 400 waits are exactly %v, want the jitter kept near Max", atMax, tt.hi)
			}
		})
	}
}

// TestDelay checks that Delay draws from [0, c] for the ceiling c of
// Policy's doc, and reaches it: the largest of 20,000 draws is within c/128
// of c, exact below 128ns, which a uniform draw misses with a chance below
// 1e-68; so the default Base is 100ms to the millisecond.
func TestDelay(t *testing.T) {
	tests := []struct {
		name string
		p    retry.Policy
		n    int
		c    time.Duration
	}{
		{"zero policy, first wait", retry.Policy{}, 0, 100 * time.Millisecond},
		{"zero policy, third wait", retry.Policy{}, 2, 400 * time.Millisecond},
		{"zero policy, capped at 10s", retry.Policy{}, 40, 10 * time.Second},
		{"Base 1, Max 3, n 1: below Max", retry.Policy{Base: 1, Max: 3}, 1, 2},
		{"Base 1, Max 3, n 2: at Max", retry.Policy{Base: 1, Max: 3}, 2, 3},
		{"Base 1, Max 8, n 3: Base·2ⁿ equal to Max", retry.Policy{Base: 1, Max: 8}, 3, 8},
		{"Base 3, Max 7, n 1", retry.Policy{Base: 3, Max: 7}, 1, 6},
		{"Base 3, Max 7, n 2", retry.Policy{Base: 3, Max: 7}, 2, 7},
		{"Base 2, Max 1: Base above Max", retry.Policy{Base: 2, Max: 1}, 0, 1},
		{"Base 1, Max 1, n 0", retry.Policy{Base: 1, Max: 1}, 0, 1},
		{"negative n counts as 0", retry.Policy{Base: 5, Max: 8}, -1, 5},
		{"a shift that would wrap stays at Max", retry.Policy{Base: 1<<40 + 1, Max: time.Hour}, 24, time.Hour},
		{"n of 63 stays at Max", retry.Policy{Base: 1, Max: time.Hour}, 63, time.Hour},
		{"n of MaxInt stays at Max", retry.Policy{Base: 1, Max: time.Hour}, math.MaxInt, time.Hour},
		{"MaxInt64 everywhere", retry.Policy{Base: math.MaxInt64, Max: math.MaxInt64}, math.MaxInt, math.MaxInt64},
		{"MaxInt64 Max, first wait", retry.Policy{Base: 1, Max: math.MaxInt64}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var top time.Duration
			for range 20000 {
				d := tt.p.Delay(tt.n)
				if d < 0 || d > tt.c {
					t.Fatalf("%+v.Delay(%d) = %v, want within [0, %v]", tt.p, tt.n, d, tt.c)
				}
				top = max(top, d)
			}
			if top < tt.c-tt.c/128 {
				t.Errorf("largest of 20000 Delay(%d) = %v, want %v or within a 128th below", tt.n, top, tt.c)
			}
		})
	}
}

// Permanent and After.

// TestPermanent: nil in, nil out; one marker, with err's message and tree.
func TestPermanent(t *testing.T) {
	marked := fmt.Errorf("load: %w", retry.Permanent(io.EOF))
	err := retry.Permanent(marked)
	switch {
	case retry.Permanent(nil) != nil:
		t.Errorf("Permanent(nil) = %v, want nil", retry.Permanent(nil))
	case retry.Permanent(err) != err:
		t.Errorf("Permanent(Permanent(err)) = %#v, want %#v", retry.Permanent(err), err)
	case err.Error() != marked.Error() || errors.Unwrap(err) != marked:
		t.Errorf("Permanent(err) says %q and unwraps to %#v, want err's message and err", err, errors.Unwrap(err))
	case errors.Is(retry.Permanent(errBoom), io.EOF) || !errors.Is(err, io.EOF):
		t.Errorf("a marker matches what it does not wrap, or not what it wraps, under errors.Is")
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
}

// TestAfter: nil in, nil out; err for d <= 0; else a hint, with err's message and tree.
func TestAfter(t *testing.T) {
	if err := retry.After(nil, time.Second); err != nil {
		t.Errorf("After(nil, 1s) = %v, want nil", err)
	}
	for _, d := range []time.Duration{0, -1, math.MinInt64} {
		if err := retry.After(errBoom, d); err != errBoom {
			t.Errorf("After(errBoom, %v) = %#v, want errBoom unchanged", d, err)
		}
	}
	inner := fmt.Errorf("get: %w", errBoom)
	err := retry.After(inner, 1)
	if h, ok := err.(interface{ RetryAfter() time.Duration }); !ok || h.RetryAfter() != 1 {
		t.Errorf("After(err, 1ns) = %#v, want a hint of 1ns", err)
	}
	if err.Error() != inner.Error() || errors.Unwrap(err) != inner || !errors.Is(err, errBoom) {
		t.Errorf("After(err, 1ns) says %q and unwraps to %#v, want err's message and err", err, errors.Unwrap(err))
	}
	// After's doc: a gRPC pushback below zero is marked Permanent, and gets no
	// retry; a Retry-After date already past is handed to After, and does.
	for _, tt := range []struct {
		err   error
		calls int
	}{{retry.Permanent(errBoom), 1}, {retry.After(errBoom, -time.Second), 2}} {
		calls := 0
		retry.Do(context.Background(), retry.Policy{Attempts: 2, Base: 1}, func(context.Context) error {
			calls++
			return tt.err
		})
		if calls != tt.calls {
			t.Errorf("Do(fn returning %#v) made %d calls, want %d", tt.err, calls, tt.calls)
		}
	}
}

// Allocations and benchmarks.

// TestAllocs: a first-try success allocates nothing, as README says; two
// failures allocate at most what avast/retry-go v5.1.1, the leanest peer,
// does on its retry path (8 objects), with a ctx that cannot be canceled
// and with one that can.
func TestAllocs(t *testing.T) {
	ctx := context.Background()
	value := func(context.Context) (int, error) { return 1, nil }
	firstTry := func() {
		if err := retry.Do(ctx, retry.Policy{}, succeed); err != nil {
			t.Fatal(err)
		}
		if _, err := retry.DoValue(ctx, retry.Policy{}, value); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, firstTry); n != 0 {
		t.Errorf("Do and DoValue with a first-try success allocate %v objects, want 0", n)
	}
	cancelable, cancel := context.WithCancel(ctx)
	defer cancel()
	p := retry.Policy{Base: time.Microsecond, Max: time.Microsecond}
	for _, ctx := range []context.Context{ctx, cancelable} {
		fn := failing(2)
		n := testing.AllocsPerRun(100, func() {
			if err := retry.Do(ctx, p, fn); err != nil {
				t.Fatalf("Do() = %v, want nil", err)
			}
		})
		if n > 8 {
			t.Errorf("Do(%v) with two failures allocates %v objects, want at most 8", ctx, n)
		}
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

// The fleet and the tour.

// A recovering server rejects every call during an outage, then accepts at
// most capacity calls in each slot of time and rejects the rest at once.
type recovering struct {
	outage, slot time.Duration
	capacity     int

	mu                sync.Mutex
	start             time.Time
	calls, after      int   // calls in all, and after the outage
	perSlot, accepted []int // calls, and accepted calls, in each slot after the outage
	lastOK            time.Duration
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
	for len(s.perSlot) <= slot {
		s.perSlot, s.accepted = append(s.perSlot, 0), append(s.accepted, 0)
	}
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
		s := &recovering{outage: 2 * time.Second, slot: 10 * time.Millisecond, capacity: 50, start: time.Now()}
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
		res = fleetResult{calls: s.calls, after: s.after, peak: slices.Max(s.perSlot), drain: s.lastOK - s.outage, perSlot: s.perSlot}
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
	if !errors.Is(err, notFound) || attempt != 1 {
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

// The fuzzers.

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
		if d, c := p.Delay(n), ceiling(time.Duration(base), time.Duration(limit), max(n, 0)); d < 0 || d > c {
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
	// Schedules: the defaults for negative fields (4 attempts, ceilings of
	// 100ms, 200ms, 400ms), doubling up to Max, and a Base above Max.
	f.Add(-1, int64(-1), int64(-1), true, slices.Repeat([]byte{1}, 8))
	f.Add(6, int64(time.Second), int64(5*time.Second), false, slices.Repeat([]byte{1}, 12))
	f.Add(3, int64(time.Hour), int64(time.Second), true, slices.Repeat([]byte{1}, 6))
	// A hint of 200ms does not stretch the wait after the plain error next.
	f.Add(3, int64(time.Millisecond), int64(time.Minute), true, []byte{3, 200, 1})
	f.Fuzz(func(t *testing.T, attempts int, base, limit int64, cancelable bool, script []byte) {
		p := retry.Policy{Attempts: attempts, Base: time.Duration(base), Max: time.Duration(limit)}
		// What Policy's fields say zero and negative values mean.
		effAttempts, effBase, effMax := attempts, time.Duration(base), time.Duration(limit)
		if attempts <= 0 {
			effAttempts = 4
		}
		if base <= 0 {
			effBase = 100 * time.Millisecond
		}
		if limit <= 0 {
			effMax = 10 * time.Second
		}
		// errs[i] is what call i returns, until a nil; want and calls are
		// what Do should return, and after how many calls.
		b := &builder{script: script}
		var errs []error
		var want error
		calls := 0
		for {
			err := b.tree(0)
			errs, want = append(errs, err), err
			if calls++; err == nil {
				break
			}
			marked := slices.ContainsFunc(b.markers, func(m error) bool { return errors.Is(err, m) })
			if marked || !oracleRetryable(err) || calls == effAttempts || oracleHint(err) > effMax {
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

// A builder makes error trees from a fuzzer's bytes, each byte choosing a
// node, and nil once the bytes run out.
type builder struct {
	script  []byte
	leaves  int
	markers []error // what Permanent returned
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
		b.markers = append(b.markers, err)
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

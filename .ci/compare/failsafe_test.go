// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
)

// failsafe-go v0.9.8. Source: retrypolicy/retry.go,
// retrypolicy/retryexecutor.go, internal/util/util.go, execution.go and
// failsafehttp/policy.go in the module cache, at the lines named in each
// probe.

// runFailsafe runs op under rp with ctx, in the way its README shows.
func runFailsafe(ctx context.Context, rp retrypolicy.RetryPolicy[any], op func() error) error {
	return failsafe.With[any](rp).WithContext(ctx).Run(op)
}

// TestFailsafeFullJitter: no: WithBackoff waits exactly Delay·2ⁿ
// (retrypolicy/retryexecutor.go:144-153); WithJitter and WithJitterFactor
// add ± jitter around the delay (internal/util/util.go:155-171): with a
// delay of 1s, WithJitter(250ms) draws from [0.75s, 1.25s], below the delay
// as well as above it.
func TestFailsafeFullJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rp := retrypolicy.NewBuilder[any]().WithDelay(time.Second).WithJitter(250 * time.Millisecond).WithMaxRetries(400).Build()
		r := newRecorder(fails(400, errBoom)...)
		if err := runFailsafe(context.Background(), rp, r.call); err != nil {
			t.Fatal(err)
		}
		spread(t, "a wait with WithJitter(250ms)", r.waits(), 750*time.Millisecond, 1250*time.Millisecond)
	})
	synctest.Test(t, func(t *testing.T) {
		rp := retrypolicy.NewBuilder[any]().WithBackoff(time.Second, time.Hour).WithMaxRetries(3).Build()
		r := newRecorder(errBoom, errBoom, errBoom)
		if err := runFailsafe(context.Background(), rp, r.call); err != nil {
			t.Fatal(err)
		}
		for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
			if w := r.waits()[i]; w != want {
				t.Errorf("wait %d = %v, want exactly %v", i+1, w, want)
			}
		}
	})
}

// TestFailsafeNoWaitAboveCap: no: the jitter is applied after the cap
// (retrypolicy/retryexecutor.go:130-140): with a max delay of 1s and a
// jitter factor of 0.5, waits are drawn from [0.5s, 1.5s], around the cap.
func TestFailsafeNoWaitAboveCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rp := retrypolicy.NewBuilder[any]().WithBackoff(time.Second, time.Second).WithJitterFactor(0.5).WithMaxRetries(400).Build()
		r := newRecorder(fails(400, errBoom)...)
		if err := runFailsafe(context.Background(), rp, r.call); err != nil {
			t.Fatal(err)
		}
		spread(t, "a wait with a max delay of 1s and a jitter factor of 0.5", r.waits(), 500*time.Millisecond, 1500*time.Millisecond)
	})
}

// TestFailsafeOverflowSafety: no: with a max delay near MaxInt64, the next
// delay, float64(last)·2 above MaxInt64, becomes MinInt64 on amd64
// (retrypolicy/retryexecutor.go:148), and the wait clamps to 0s
// (retrypolicy/retryexecutor.go:161-165): the backoff wraps to waits of 0s.
func TestFailsafeOverflowSafety(t *testing.T) {
	amd64(t)
	synctest.Test(t, func(t *testing.T) {
		rp := retrypolicy.NewBuilder[any]().WithBackoff(1<<62, math.MaxInt64).WithMaxRetries(3).Build()
		r := newRecorder(errBoom, errBoom, errBoom)
		if err := runFailsafe(context.Background(), rp, r.call); err != nil {
			t.Fatal(err)
		}
		if w := r.waits(); w[0] != 1<<62 || w[1] != 0 || w[2] != 0 {
			t.Errorf("waits = %v, want 2⁶²ns, then 0s and 0s", w)
		}
	})
}

// TestFailsafeZeroValue: NewWithDefaults retries twice, 3 attempts, with no
// wait (retrypolicy/retry.go:14, 198-211).
func TestFailsafeZeroValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(fails(10, errBoom)...)
		err := runFailsafe(context.Background(), retrypolicy.NewWithDefaults[any](), r.call)
		if !errors.Is(err, errBoom) || r.calls() != 3 || time.Since(r.start) != 0 {
			t.Errorf("Run() = %v after %d calls and %v, want %v after 3 and 0s", err, r.calls(), time.Since(r.start), errBoom)
		}
	})
}

// TestFailsafeCtxCheckedBeforeFirstCall: no (execution.go:227-243): with a
// canceled ctx, it calls the operation, then returns context.Canceled.
func TestFailsafeCtxCheckedBeforeFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRecorder()
	err := runFailsafe(ctx, retrypolicy.NewWithDefaults[any](), r.call)
	if err != context.Canceled || r.calls() != 1 {
		t.Errorf("Run(canceled ctx) = %v after %d calls, want %v after 1", err, r.calls(), context.Canceled)
	}
}

// TestFailsafeCancelKeepsCauseAndLastError: ctx.Err() only
// (execution.go:232-238): neither the cause nor the last error.
func TestFailsafeCancelKeepsCauseAndLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(time.Second, func() { cancel(errStop) })
		rp := retrypolicy.NewBuilder[any]().WithDelay(time.Minute).WithMaxRetries(5).Build()
		err := runFailsafe(ctx, rp, func() error { return errBoom })
		if err != context.Canceled || errors.Is(err, errStop) || errors.Is(err, errBoom) {
			t.Errorf("Run() = %v, want %v alone", err, context.Canceled)
		}
	})
}

// TestFailsafeDeadlineAware: no (retrypolicy/retryexecutor.go:72-77): it
// sleeps into the deadline.
func TestFailsafeDeadlineAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		rp := retrypolicy.NewBuilder[any]().WithDelay(time.Minute).WithMaxRetries(5).Build()
		err := runFailsafe(ctx, rp, func() error { return errBoom })
		if time.Since(start) != time.Second || err != context.DeadlineExceeded {
			t.Errorf("Run() = %v after %v, want %v after 1s", err, time.Since(start), context.DeadlineExceeded)
		}
	})
}

// TestFailsafeServerHints: failsafehttp's DelayFunc reads Retry-After in
// integer seconds only, on 429 and 503 only (failsafehttp/policy.go:71-82),
// and the policy's max delay does not bound it: Retry-After: 99999999999
// overflows into a wait of about 246 years, an HTTP-date is ignored, and a
// 502's Retry-After too; an ignored hint leaves the retry to the policy's
// own delay, here 1ms.
func TestFailsafeServerHints(t *testing.T) {
	absurd := int64(99999999999)
	wrapped := time.Second * time.Duration(absurd) // as failsafehttp computes it
	tests := []struct {
		code       int
		retryAfter string
		want       time.Duration
	}{
		{http.StatusServiceUnavailable, "99999999999", wrapped},
		{http.StatusTooManyRequests, "Wed, 21 Oct 2026 07:28:00 GMT", time.Millisecond},
		{http.StatusBadGateway, "30", time.Millisecond},
		{http.StatusServiceUnavailable, "30", 30 * time.Second},
		{http.StatusTooManyRequests, "30", 30 * time.Second},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithCancel(context.Background())
		delay := time.Duration(-1) // no retry scheduled
		rp := failsafehttp.NewRetryPolicyBuilder().WithBackoff(time.Millisecond, time.Second).
			OnRetryScheduled(func(e failsafe.ExecutionScheduledEvent[*http.Response]) { delay = e.Delay; cancel() }).
			Build()
		resp := &http.Response{StatusCode: tt.code, Header: http.Header{"Retry-After": {tt.retryAfter}}}
		failsafe.With(rp).WithContext(ctx).Get(func() (*http.Response, error) { return resp, nil })
		if delay != tt.want {
			t.Errorf("%d with Retry-After: %s: delay = %v, want %v", tt.code, tt.retryAfter, delay, tt.want)
		}
		cancel()
	}
	if years := wrapped.Hours() / 24 / 365; years < 245 || years > 247 {
		t.Errorf("the overflowed delay is %.0f years, want about 246", years)
	}
}

// TestFailsafeWhatIsRetried: every error by default
// (retrypolicy/retry.go:204-211), or as HandleIf and AbortOnErrors say.
func TestFailsafeWhatIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errBoom, errBoom)
		if err := runFailsafe(context.Background(), retrypolicy.NewWithDefaults[any](), r.call); err != nil || r.calls() != 3 {
			t.Errorf("Run() = %v after %d calls, want nil after 3", err, r.calls())
		}
		handled := retrypolicy.NewBuilder[any]().HandleIf(func(_ any, err error) bool { return err != errStop }).Build()
		r = newRecorder(errBoom, errStop)
		if err := runFailsafe(context.Background(), handled, r.call); err != errStop || r.calls() != 2 {
			t.Errorf("Run(HandleIf rejecting the second error) = %v after %d calls, want %v after 2", err, r.calls(), errStop)
		}
		aborting := retrypolicy.NewBuilder[any]().AbortOnErrors(errStop).Build()
		r = newRecorder(errBoom, errStop)
		if err := runFailsafe(context.Background(), aborting, r.call); err != errStop || r.calls() != 2 {
			t.Errorf("Run(AbortOnErrors of the second error) = %v after %d calls, want %v after 2", err, r.calls(), errStop)
		}
	})
}

// TestFailsafeErrorAfterLastAttempt: an ExceededError that wraps the last
// error (retrypolicy/retryexecutor.go:117-123), or the last error itself
// with ReturnLastFailure.
func TestFailsafeErrorAfterLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := errors.New("last")
		err := runFailsafe(context.Background(), retrypolicy.NewWithDefaults[any](), newRecorder(errBoom, errBoom, last).call)
		if !retrypolicy.IsExceededError(err) || !errors.Is(err, last) || err == last {
			t.Errorf("Run() = %v, want an ExceededError wrapping %v", err, last)
		}
		rp := retrypolicy.NewBuilder[any]().ReturnLastFailure().Build()
		if err := runFailsafe(context.Background(), rp, newRecorder(errBoom, errBoom, last).call); err != last {
			t.Errorf("Run(ReturnLastFailure) = %v, want %v", err, last)
		}
	})
}

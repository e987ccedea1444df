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
// add ± jitter around the delay (internal/util/util.go:155-171).
func TestFailsafeFullJitter(t *testing.T) {
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
// jitter factor of 0.5, waits reach 1.5s.
func TestFailsafeNoWaitAboveCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rp := retrypolicy.NewBuilder[any]().WithBackoff(time.Second, time.Second).WithJitterFactor(0.5).WithMaxRetries(200).Build()
		r := newRecorder(fails(200, errBoom)...)
		if err := runFailsafe(context.Background(), rp, r.call); err != nil {
			t.Fatal(err)
		}
		var top time.Duration
		for _, w := range r.waits() {
			top = max(top, w)
		}
		// 200 draws from [0.5s, 1.5s] all stay below 1.4s with a chance of 0.9²⁰⁰, 7e-10.
		if top <= 1400*time.Millisecond || top > 1500*time.Millisecond {
			t.Errorf("longest of 200 waits with a max delay of 1s = %v, want above 1.4s", top)
		}
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
// bounded by nothing but WithMaxDuration: Retry-After: 99999999999
// overflows into a wait of about 246 years, an HTTP-date is ignored, and a
// 502's Retry-After too.
func TestFailsafeServerHints(t *testing.T) {
	absurd := int64(99999999999)
	wrapped := time.Second * time.Duration(absurd) // as failsafehttp computes it
	tests := []struct {
		code       int
		retryAfter string
		want       time.Duration
	}{
		{http.StatusServiceUnavailable, "99999999999", wrapped},
		{http.StatusTooManyRequests, "Wed, 21 Oct 2026 07:28:00 GMT", 0},
		{http.StatusBadGateway, "30", 0},
		{http.StatusServiceUnavailable, "30", 30 * time.Second},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithCancel(context.Background())
		var delay time.Duration
		rp := failsafehttp.NewRetryPolicyBuilder().
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

// TestFailsafeWhatIsRetried: every error by default (retrypolicy/retry.go:204-211).
func TestFailsafeWhatIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errBoom, errBoom)
		if err := runFailsafe(context.Background(), retrypolicy.NewWithDefaults[any](), r.call); err != nil || r.calls() != 3 {
			t.Errorf("Run() = %v after %d calls, want nil after 3", err, r.calls())
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

// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v7"
)

// cenkalti/backoff v7.0.3. Source: exponential.go, retry.go and error.go in
// the module cache, at the lines named in each probe. Since v6.0.0 Retry
// returns a *RetryError on every failure: the last operation error
// (LastErr) and why it stopped (Cause), both matched by errors.Is.

// TestCenkaltiFullJitter: no, ±50% around the interval
// (exponential.go:104-123): the default first wait is drawn from
// [250ms, 750ms], never from [0, 500ms].
func TestCenkaltiFullJitter(t *testing.T) {
	b := backoff.NewExponentialBackOff()
	low, top := time.Duration(math.MaxInt64), time.Duration(0)
	for range 1000 {
		b.Reset()
		d := b.NextBackOff()
		low, top = min(low, d), max(top, d)
	}
	// 1,000 draws all miss the outer tenths with a chance of 0.9¹⁰⁰⁰ each.
	if low < 250*time.Millisecond || top > 750*time.Millisecond+1 || low > 300*time.Millisecond || top < 700*time.Millisecond {
		t.Errorf("first waits span [%v, %v], want [250ms, 750ms]", low, top)
	}
}

// TestCenkaltiNoWaitAboveCap: no, the jitter is applied after the cap
// (exponential.go:30, "MaxInterval caps the RetryInterval and not the
// randomized interval"): with MaxInterval 1s, waits reach 1.5s.
func TestCenkaltiNoWaitAboveCap(t *testing.T) {
	b := &backoff.ExponentialBackOff{InitialInterval: time.Second, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: time.Second}
	var top time.Duration
	for range 1000 {
		top = max(top, b.NextBackOff())
	}
	if top <= 1400*time.Millisecond || top > 1500*time.Millisecond+1 {
		t.Errorf("longest of 1000 waits with MaxInterval 1s = %v, want near 1.5s", top)
	}
}

// TestCenkaltiOverflowSafety: yes, since v7.0.1: the interval saturates at
// MaxInterval (exponential.go:97), and a randomized interval at or above
// MaxInt64 is MaxInt64 (exponential.go:119-122), never negative. Retry
// then stops at once, as the wait would pass MaxElapsedTime
// (retry.go:184-186). (v5.0.3 turned it into MinInt64, a retry at once.)
func TestCenkaltiOverflowSafety(t *testing.T) {
	overflowing := func() *backoff.ExponentialBackOff {
		return &backoff.ExponentialBackOff{InitialInterval: math.MaxInt64, RandomizationFactor: 0.5, Multiplier: 1.5, MaxInterval: math.MaxInt64}
	}
	b := overflowing()
	saturated := 0
	for range 200 {
		d := b.NextBackOff()
		if d < math.MaxInt64/2 {
			t.Fatalf("NextBackOff() near MaxInt64 = %v, want at least MaxInt64/2, never negative", d)
		}
		if d == math.MaxInt64 {
			saturated++
		}
	}
	// Half the draws land above MaxInt64; all 200 miss with a chance of 2⁻²⁰⁰.
	if saturated == 0 {
		t.Errorf("no wait of 200 was MaxInt64, want about half")
	}
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(fails(100, errBoom)...)
		_, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() }, backoff.WithBackOff(overflowing()))
		if !errors.Is(err, backoff.ErrMaxElapsedTime) || !errors.Is(err, errBoom) || r.calls() != 1 || time.Since(r.start) != 0 {
			t.Errorf("Retry() = %v after %d calls and %v, want ErrMaxElapsedTime and %v after 1, at once", err, r.calls(), time.Since(r.start), errBoom)
		}
	})
}

// TestCenkaltiZeroValue: Retry's defaults are 500ms ×1.5 up to 60s with
// ±50% (exponential.go:58-63), no limit on tries, and a MaxElapsedTime of
// 15 minutes (retry.go:10); a zero ExponentialBackOff{} waits 0s. It times
// what Retry with no options does: the first wait spread over
// [250ms, 750ms], the second over [375ms, 1.125s], the 20th, at the cap,
// over [30s, 90s].
func TestCenkaltiZeroValue(t *testing.T) {
	if backoff.DefaultInitialInterval != 500*time.Millisecond || backoff.DefaultMultiplier != 1.5 ||
		backoff.DefaultMaxInterval != 60*time.Second || backoff.DefaultMaxElapsedTime != 15*time.Minute {
		t.Errorf("defaults = %v ×%v to %v, %v in all; want 500ms ×1.5 to 60s, 15m", backoff.DefaultInitialInterval,
			backoff.DefaultMultiplier, backoff.DefaultMaxInterval, backoff.DefaultMaxElapsedTime)
	}
	synctest.Test(t, func(t *testing.T) {
		var waits [3][]time.Duration
		for range 400 {
			r := newRecorder(fails(20, errBoom)...)
			if _, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() }); err != nil {
				t.Fatalf("Retry() = %v, want nil", err)
			}
			w := r.waits()
			waits[0], waits[1], waits[2] = append(waits[0], w[0]), append(waits[1], w[1]), append(waits[2], w[19])
		}
		spread(t, "Retry's first wait", waits[0], 250*time.Millisecond, 750*time.Millisecond)
		spread(t, "Retry's second wait", waits[1], 375*time.Millisecond, 1125*time.Millisecond)
		spread(t, "Retry's 20th wait", waits[2], 30*time.Second, 90*time.Second)
	})
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(fails(1000, errBoom)...)
		_, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() })
		// It stops once the next wait, at most 90s, would pass 15m.
		elapsed := time.Since(r.start)
		if !errors.Is(err, backoff.ErrMaxElapsedTime) || !errors.Is(err, errBoom) || elapsed > 15*time.Minute || elapsed < 13*time.Minute+30*time.Second {
			t.Errorf("Retry() = %v after %d calls and %v, want ErrMaxElapsedTime and %v after 13.5 to 15m", err, r.calls(), elapsed, errBoom)
		}
	})
	var zero backoff.ExponentialBackOff
	for i := range 5 {
		if d := zero.NextBackOff(); d != 0 {
			t.Errorf("ExponentialBackOff{}.NextBackOff() #%d = %v, want 0s", i+1, d)
		}
	}
}

// TestCenkaltiCtxCheckedBeforeFirstCall: no (retry.go:131-136, the ctx at
// 161): with a canceled ctx, Retry calls the operation and returns its
// success.
func TestCenkaltiCtxCheckedBeforeFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRecorder()
	v, err := backoff.Retry(ctx, func() (int, error) { return 7, r.call() })
	if v != 7 || err != nil || r.calls() != 1 {
		t.Errorf("Retry(canceled ctx) = %v, %v after %d calls, want 7, nil after 1", v, err, r.calls())
	}
}

// TestCenkaltiCancelKeepsCauseAndLastError: the cause and the last error,
// in a *RetryError (retry.go:203-204), but not ctx.Err() when the cancel
// has a cause of its own.
func TestCenkaltiCancelKeepsCauseAndLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(time.Second, func() { cancel(errStop) })
		_, err := backoff.Retry(ctx, func() (int, error) { return 0, errBoom },
			backoff.WithBackOff(backoff.NewConstantBackOff(time.Minute)))
		if !errors.Is(err, errStop) || !errors.Is(err, errBoom) || errors.Is(err, context.Canceled) {
			t.Errorf("Retry() = %v, want the cause %v and %v, without %v", err, errStop, errBoom, context.Canceled)
		}
	})
}

// TestCenkaltiDeadlineAware: no (retry.go:196-205): it sleeps into the
// deadline, and returns the deadline's error with the last error.
func TestCenkaltiDeadlineAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := backoff.Retry(ctx, func() (int, error) { return 0, errBoom },
			backoff.WithBackOff(backoff.NewConstantBackOff(time.Minute)))
		if time.Since(start) != time.Second || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errBoom) {
			t.Errorf("Retry() = %v after %v, want %v and %v after 1s", err, time.Since(start), context.DeadlineExceeded, errBoom)
		}
	})
}

// TestCenkaltiServerHints: RetryAfter(d, cause) replaces the backoff,
// without jitter, bounded only by MaxElapsedTime (retry.go:171-186), not by
// MaxInterval: a hint that would pass MaxElapsedTime ends Retry at once,
// with the cause as the last error; a negative hint is a wait of 0.
func TestCenkaltiServerHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &backoff.ExponentialBackOff{InitialInterval: time.Millisecond, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: time.Second}
		r := newRecorder(backoff.RetryAfter(time.Hour, errBoom), backoff.RetryAfter(-time.Hour, errBoom))
		_, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() },
			backoff.WithBackOff(b), backoff.WithMaxElapsedTime(2*time.Hour))
		if err != nil || r.calls() != 3 || r.waits()[0] != time.Hour || r.waits()[1] != 0 {
			t.Errorf("Retry() = %v after waits %v, want nil after exactly 1h, then 0s", err, r.waits())
		}
		r = newRecorder(backoff.RetryAfter(time.Hour, errBoom))
		_, err = backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() },
			backoff.WithBackOff(b), backoff.WithMaxElapsedTime(30*time.Minute))
		if re := backoff.AsRetryError(err); re == nil || re.LastErr != errBoom || re.Cause != backoff.ErrMaxElapsedTime || r.calls() != 1 || time.Since(r.start) != 0 {
			t.Errorf("Retry(MaxElapsedTime 30m) = %v after %d calls and %v, want ErrMaxElapsedTime with %v at once", err, r.calls(), time.Since(r.start), errBoom)
		}
	})
}

// TestCenkaltiWhatIsRetried: every error but a Permanent one (retry.go:139-142).
func TestCenkaltiWhatIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errBoom, errBoom)
		if _, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() }); err != nil || r.calls() != 3 {
			t.Errorf("Retry() = %v after %d calls, want nil after 3", err, r.calls())
		}
		r = newRecorder(backoff.Permanent(errBoom))
		_, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() })
		if !errors.Is(err, backoff.ErrPermanent) || !errors.Is(err, errBoom) || r.calls() != 1 {
			t.Errorf("Retry(Permanent) = %v after %d calls, want ErrPermanent and %v after 1", err, r.calls(), errBoom)
		}
	})
}

// TestCenkaltiErrorAfterLastAttempt: a *RetryError that holds the last
// error and ErrExhausted (retry.go:155-158), not the last error itself;
// its message says the cause first (error.go:57-59).
func TestCenkaltiErrorAfterLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := errors.New("last")
		r := newRecorder(errBoom, errBoom, last)
		_, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() }, backoff.WithMaxTries(3))
		re := backoff.AsRetryError(err)
		if err == last || re == nil || re.LastErr != last || re.Cause != backoff.ErrExhausted || err.Error() != "backoff: retries exhausted (last error: last)" {
			t.Errorf("Retry() = %#v, want a *RetryError of ErrExhausted and %v", err, last)
		}
	})
}

// TestCenkaltiPolicyState: an ExponentialBackOff keeps state and is not safe
// for concurrent use (exponential.go:46, retry.go:39-40), so it is built
// once per call: each
// NextBackOff grows the next.
func TestCenkaltiPolicyState(t *testing.T) {
	b := &backoff.ExponentialBackOff{InitialInterval: time.Second, Multiplier: 2, MaxInterval: time.Hour}
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if d := b.NextBackOff(); d != want {
			t.Errorf("NextBackOff() = %v, want %v", d, want)
		}
	}
}

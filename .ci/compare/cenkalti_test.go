// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// cenkalti/backoff v5.0.3. Source: exponential.go and retry.go in the module
// cache, at the lines named in each probe.

// TestCenkaltiFullJitter: no, ±50% around the interval
// (exponential.go:106-117): the default first wait is drawn from
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
// (exponential.go:29, "MaxInterval caps the RetryInterval and not the
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

// TestCenkaltiOverflowSafety: the interval saturates at MaxInterval
// (exponential.go:96), but the ±50% jitter then turns a float above
// MaxInt64 into an integer (exponential.go:117), which on amd64 is MinInt64:
// a negative wait, on which Retry's timer fires at once (retry.go:108-133).
// Retry thus retries at once after every wait that overflowed; a wait that
// did not, near MaxInt64, passes MaxElapsedTime and ends Retry.
func TestCenkaltiOverflowSafety(t *testing.T) {
	amd64(t)
	overflowing := func() *backoff.ExponentialBackOff {
		return &backoff.ExponentialBackOff{InitialInterval: math.MaxInt64, RandomizationFactor: 0.5, Multiplier: 1.5, MaxInterval: math.MaxInt64}
	}
	b := overflowing()
	negative := 0
	for range 200 {
		if b.NextBackOff() == math.MinInt64 {
			negative++
		}
	}
	// Half the draws land above MaxInt64; all 200 miss with a chance of 2⁻²⁰⁰.
	if negative == 0 {
		t.Errorf("no wait of 200 was MinInt64, want about half")
	}
	t.Logf("%d of 200 waits were MinInt64", negative)
	synctest.Test(t, func(t *testing.T) {
		// Each Retry makes a second call with a chance of 1/2: 64 of them
		// all stop after one with a chance of 2⁻⁶⁴.
		retried := 0
		for range 64 {
			r := newRecorder(fails(100, errBoom)...)
			_, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() }, backoff.WithBackOff(overflowing()))
			if err != errBoom || time.Since(r.start) != 0 {
				t.Fatalf("Retry() = %v after %d calls and %v, want %v without a wait", err, r.calls(), time.Since(r.start), errBoom)
			}
			retried += r.calls() - 1
		}
		if retried == 0 {
			t.Errorf("64 Retry calls made no second call, want retries after waits of 0")
		}
	})
}

// TestCenkaltiZeroValue: Retry's defaults are 500ms ×1.5 up to 60s with
// ±50% (exponential.go:57-62), no limit on tries, and a MaxElapsedTime of
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
		if elapsed := time.Since(r.start); err != errBoom || elapsed > 15*time.Minute || elapsed < 13*time.Minute+30*time.Second {
			t.Errorf("Retry() = %v after %d calls and %v, want %v after 13.5 to 15m", err, r.calls(), elapsed, errBoom)
		}
	})
	var zero backoff.ExponentialBackOff
	for i := range 5 {
		if d := zero.NextBackOff(); d != 0 {
			t.Errorf("ExponentialBackOff{}.NextBackOff() #%d = %v, want 0s", i+1, d)
		}
	}
}

// TestCenkaltiCtxCheckedBeforeFirstCall: no (retry.go:85-104): with a
// canceled ctx, Retry calls the operation and returns its success.
func TestCenkaltiCtxCheckedBeforeFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRecorder()
	v, err := backoff.Retry(ctx, func() (int, error) { return 7, r.call() })
	if v != 7 || err != nil || r.calls() != 1 {
		t.Errorf("Retry(canceled ctx) = %v, %v after %d calls, want 7, nil after 1", v, err, r.calls())
	}
}

// TestCenkaltiCancelKeepsCauseAndLastError: the cause only
// (retry.go:133-136): the last error is lost.
func TestCenkaltiCancelKeepsCauseAndLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(time.Second, func() { cancel(errStop) })
		_, err := backoff.Retry(ctx, func() (int, error) { return 0, errBoom },
			backoff.WithBackOff(backoff.NewConstantBackOff(time.Minute)))
		if err != errStop || errors.Is(err, errBoom) || errors.Is(err, context.Canceled) {
			t.Errorf("Retry() = %v, want the cause %v alone", err, errStop)
		}
	})
}

// TestCenkaltiDeadlineAware: no (retry.go:132-136): it sleeps into the
// deadline, and returns the deadline's error, without the last error.
func TestCenkaltiDeadlineAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := backoff.Retry(ctx, func() (int, error) { return 0, errBoom },
			backoff.WithBackOff(backoff.NewConstantBackOff(time.Minute)))
		if time.Since(start) != time.Second || err != context.DeadlineExceeded {
			t.Errorf("Retry() = %v after %v, want %v after 1s", err, time.Since(start), context.DeadlineExceeded)
		}
	})
}

// TestCenkaltiServerHints: a RetryAfterError replaces the backoff, without
// jitter, bounded only by MaxElapsedTime (retry.go:114-124), not by
// MaxInterval: a hint that would pass MaxElapsedTime ends Retry at once.
func TestCenkaltiServerHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &backoff.ExponentialBackOff{InitialInterval: time.Millisecond, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: time.Second}
		r := newRecorder(backoff.RetryAfter(3600))
		_, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() },
			backoff.WithBackOff(b), backoff.WithMaxElapsedTime(2*time.Hour))
		if err != nil || r.calls() != 2 || r.waits()[0] != time.Hour {
			t.Errorf("Retry() = %v after waits %v, want nil after exactly 1h", err, r.waits())
		}
		hint := backoff.RetryAfter(3600)
		r = newRecorder(hint)
		_, err = backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() },
			backoff.WithBackOff(b), backoff.WithMaxElapsedTime(30*time.Minute))
		if err != hint || r.calls() != 1 || time.Since(r.start) != 0 {
			t.Errorf("Retry(MaxElapsedTime 30m) = %v after %d calls and %v, want the hint's error at once", err, r.calls(), time.Since(r.start))
		}
	})
}

// TestCenkaltiWhatIsRetried: every error but a Permanent one (retry.go:97).
func TestCenkaltiWhatIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errBoom, errBoom)
		if _, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() }); err != nil || r.calls() != 3 {
			t.Errorf("Retry() = %v after %d calls, want nil after 3", err, r.calls())
		}
		r = newRecorder(backoff.Permanent(errBoom))
		if _, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() }); err != errBoom || r.calls() != 1 {
			t.Errorf("Retry(Permanent) = %v after %d calls, want %v after 1", err, r.calls(), errBoom)
		}
	})
}

// TestCenkaltiErrorAfterLastAttempt: the last error, unchanged (retry.go:93).
func TestCenkaltiErrorAfterLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := errors.New("last")
		r := newRecorder(errBoom, errBoom, last)
		_, err := backoff.Retry(context.Background(), func() (int, error) { return 0, r.call() }, backoff.WithMaxTries(3))
		if err != last {
			t.Errorf("Retry() = %v, want %v", err, last)
		}
	})
}

// TestCenkaltiPolicyState: an ExponentialBackOff keeps state and is not safe
// for concurrent use (exponential.go:45), so it is built once per call: each
// NextBackOff grows the next.
func TestCenkaltiPolicyState(t *testing.T) {
	b := &backoff.ExponentialBackOff{InitialInterval: time.Second, Multiplier: 2, MaxInterval: time.Hour}
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if d := b.NextBackOff(); d != want {
			t.Errorf("NextBackOff() = %v, want %v", d, want)
		}
	}
}

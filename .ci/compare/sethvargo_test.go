// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sethvargo/go-retry"
)

// sethvargo/go-retry v0.5.0. Source: retry.go, backoff.go and
// backoff_exponential.go in the module cache, at the lines named in each
// probe.

// TestSethvargoFullJitter: opt-in with WithFullJitter (backoff.go:101),
// which draws from [0, base·2ⁿ); a bare NewExponential waits exactly
// base·2ⁿ.
func TestSethvargoFullJitter(t *testing.T) {
	b := retry.NewExponential(time.Second)
	for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if d, _ := b.Next(); d != want {
			t.Errorf("Next() = %v, want exactly %v", d, want)
		}
	}
	var waits []time.Duration
	for range 400 {
		b := retry.WithFullJitter(retry.NewExponential(time.Second))
		b.Next()
		d, _ := b.Next()
		waits = append(waits, d)
	}
	spread(t, "WithFullJitter's second wait with base 1s", waits, 0, 2*time.Second)
}

// TestSethvargoNoWaitAboveCap: it depends on the order of the wrappers
// (backoff.go:30, 143): a cap outside the jitter holds, a cap inside it
// does not.
func TestSethvargoNoWaitAboveCap(t *testing.T) {
	capOutside := retry.WithCappedDuration(time.Second, retry.WithJitter(500*time.Millisecond, retry.NewConstant(time.Second)))
	capInside := retry.WithJitter(500*time.Millisecond, retry.WithCappedDuration(time.Second, retry.NewConstant(time.Second)))
	var outside, inside time.Duration
	for range 1000 {
		d, _ := capOutside.Next()
		outside = max(outside, d)
		d, _ = capInside.Next()
		inside = max(inside, d)
	}
	// 1,000 draws from [0.5s, 1.5s) all stay below 1.4s with a chance of 0.9¹⁰⁰⁰.
	if outside > time.Second || inside <= 1400*time.Millisecond {
		t.Errorf("longest waits: cap outside the jitter %v, inside %v; want at most 1s, and above 1.4s", outside, inside)
	}
}

// TestSethvargoOverflowSafety: yes, it saturates at MaxInt64
// (backoff_exponential.go:42-44): it shifts one step further only after a
// shift that kept every bit, so the first shift that loses bits is negative
// and stops the count there. With base 2⁴⁰+1ns, where one shift of 24 would
// wrap to a positive 16.8ms, the 24th wait and every later one is MaxInt64.
func TestSethvargoOverflowSafety(t *testing.T) {
	b := retry.NewExponential(1<<40 + 1)
	for i := 1; i <= 30; i++ {
		want := time.Duration(math.MaxInt64)
		if i < 24 {
			want = time.Duration(1<<40+1) << (i - 1)
		}
		if d, _ := b.Next(); d != want {
			t.Errorf("Next() #%d with base 2⁴⁰+1ns = %v, want %v", i, d, want)
		}
	}
}

// TestSethvargoZeroValue: NewExponential(0) panics
// (backoff_exponential.go:28-31), and there is no limit on attempts without
// WithMaxRetries.
func TestSethvargoZeroValue(t *testing.T) {
	if !panics(func() { retry.NewExponential(0) }) {
		t.Error("NewExponential(0) does not panic, want a panic")
	}
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(fails(1000, retry.RetryableError(errBoom))...)
		err := retry.Do(context.Background(), retry.NewConstant(time.Second), func(context.Context) error { return r.call() })
		if err != nil || r.calls() != 1001 {
			t.Errorf("Do() = %v after %d calls, want nil after 1001", err, r.calls())
		}
	})
}

// TestSethvargoCtxCheckedBeforeFirstCall: yes (retry.go:57).
func TestSethvargoCtxCheckedBeforeFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRecorder()
	err := retry.Do(ctx, retry.NewConstant(time.Second), func(context.Context) error { return r.call() })
	if err != context.Canceled || r.calls() != 0 {
		t.Errorf("Do(canceled ctx) = %v after %d calls, want %v after 0", err, r.calls(), context.Canceled)
	}
}

// TestSethvargoCancelKeepsCauseAndLastError: the cause only (retry.go:57).
func TestSethvargoCancelKeepsCauseAndLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(time.Second, func() { cancel(errStop) })
		err := retry.Do(ctx, retry.NewConstant(time.Minute), func(context.Context) error { return retry.RetryableError(errBoom) })
		if err != errStop || errors.Is(err, errBoom) {
			t.Errorf("Do() = %v, want the cause %v alone", err, errStop)
		}
	})
}

// TestSethvargoDeadlineAware: no (retry.go:79-84): it sleeps into the
// deadline.
func TestSethvargoDeadlineAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := retry.Do(ctx, retry.NewConstant(time.Minute), func(context.Context) error { return retry.RetryableError(errBoom) })
		if time.Since(start) != time.Second || err != context.DeadlineExceeded {
			t.Errorf("Do() = %v after %v, want %v after 1s", err, time.Since(start), context.DeadlineExceeded)
		}
	})
}

// TestSethvargoServerHints: none: an error's RetryAfter method is not read.
func TestSethvargoServerHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(retry.RetryableError(hourHint{}))
		err := retry.Do(context.Background(), retry.NewConstant(time.Second), func(context.Context) error { return r.call() })
		if err != nil || r.waits()[0] != time.Second {
			t.Errorf("Do() = %v after a wait of %v, want nil after 1s", err, r.waits()[0])
		}
	})
}

// TestSethvargoWhatIsRetried: only errors wrapped with RetryableError
// (retry.go:67-70): a plain error returns after one call.
func TestSethvargoWhatIsRetried(t *testing.T) {
	r := newRecorder(errBoom)
	err := retry.Do(context.Background(), retry.NewConstant(time.Second), func(context.Context) error { return r.call() })
	if err != errBoom || r.calls() != 1 {
		t.Errorf("Do() = %v after %d calls, want %v after 1", err, r.calls(), errBoom)
	}
}

// TestSethvargoErrorAfterLastAttempt: the last error, unwrapped from
// RetryableError (retry.go:72-75).
func TestSethvargoErrorAfterLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := errors.New("last")
		r := newRecorder(retry.RetryableError(errBoom), retry.RetryableError(last))
		err := retry.Do(context.Background(), retry.WithMaxRetries(1, retry.NewConstant(time.Second)),
			func(context.Context) error { return r.call() })
		if err != last {
			t.Errorf("Do() = %v, want %v", err, last)
		}
	})
}

// TestSethvargoPolicyState: a Backoff keeps its attempt count
// (backoff_exponential.go:17-20), so one is built per call: a second Do
// with the same Backoff starts where the first stopped.
func TestSethvargoPolicyState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := retry.NewExponential(time.Second)
		for range 2 {
			r := newRecorder(retry.RetryableError(errBoom), retry.RetryableError(errBoom))
			if err := retry.Do(context.Background(), b, func(context.Context) error { return r.call() }); err != nil {
				t.Fatal(err)
			}
		}
		if d, _ := b.Next(); d != 16*time.Second {
			t.Errorf("Next() after two Do calls of two retries = %v, want 16s", d)
		}
	})
}

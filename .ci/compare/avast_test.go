// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/avast/retry-go/v5"
)

// avast/retry-go v5.1.1. Source: retry.go and options.go in the module
// cache, at the lines named in each probe. Since v5.0.0 a call is
// retry.New(opts...).Do(fn): the options, the ctx among them, make a
// Retrier that can be reused (options.go:118-121).

// TestAvastFullJitter: opt-in with FullJitterBackoffDelay; the default
// delay type, CombineDelay(BackOffDelay, RandomDelay) (options.go:86-97),
// adds 0-100ms to Delay·2ⁿ⁻¹: the first wait is drawn from [100ms, 200ms),
// and FullJitterBackoffDelay draws from [0, Delay·2ⁿ].
func TestAvastFullJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []time.Duration
		for range 400 {
			r := newRecorder(errBoom)
			if err := retry.New(retry.Attempts(2)).Do(r.call); err != nil {
				t.Fatalf("Do() = %v, want nil", err)
			}
			waits = append(waits, r.waits()[0])
		}
		spread(t, "the default's first wait", waits, 100*time.Millisecond, 200*time.Millisecond)
	})
	cfg := retry.New(retry.Delay(time.Second))
	var waits []time.Duration
	for range 400 {
		waits = append(waits, retry.FullJitterBackoffDelay(2, nil, cfg))
	}
	spread(t, "FullJitterBackoffDelay(2) with Delay 1s", waits, 0, 4*time.Second)
}

// TestAvastNoWaitAboveCap: only with MaxDelay, none by default. The default
// delay type is clamped after the jitter (retry.go:478-484), so every wait
// at the cap is exactly MaxDelay; FullJitterBackoffDelay caps before the draw
// (options.go:245-262), so its waits at the cap stay spread.
func TestAvastNoWaitAboveCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(fails(9, errBoom)...)
		if err := retry.New(retry.MaxDelay(time.Second)).Do(r.call); err != nil {
			t.Fatalf("Do() = %v, want nil", err)
		}
		for i, w := range r.waits()[4:] { // 100ms·2⁴ = 1.6s is past the cap
			if w != time.Second {
				t.Errorf("wait %d = %v, want exactly the MaxDelay of 1s", i+5, w)
			}
		}
		cfg := retry.New(retry.Delay(time.Second), retry.MaxDelay(time.Second))
		seen := map[time.Duration]bool{}
		for range 100 {
			d := retry.FullJitterBackoffDelay(10, nil, cfg)
			if d < 0 || d > time.Second {
				t.Fatalf("FullJitterBackoffDelay(10) = %v, want within [0, 1s]", d)
			}
			seen[d] = true
		}
		if len(seen) < 90 {
			t.Errorf("FullJitterBackoffDelay at the cap took %d values of 100, want them spread", len(seen))
		}
	})
}

// TestAvastOverflowSafety: yes, since v5: BackOffDelay caps the shift
// (options.go:200-208, 114-116), so its waits never fall as n grows, and
// FullJitterBackoffDelay saturates its ceiling at MaxInt64
// (options.go:252-268), so it no longer panics without MaxDelay, as
// v4.7.0's did from n = 37 at the default 100ms.
func TestAvastOverflowSafety(t *testing.T) {
	for _, delay := range []time.Duration{1, time.Millisecond, 100 * time.Millisecond, time.Second, time.Hour, math.MaxInt64 / 2} {
		cfg := retry.New(retry.Delay(delay))
		prev := time.Duration(0)
		for n := uint(1); n <= 1000; n++ { // Do calls it from n = 1 (retry.go:280-282)
			d := retry.BackOffDelay(n, nil, cfg)
			if d <= 0 || d < prev {
				t.Fatalf("Delay %v: BackOffDelay(%d) = %v after %v, want positive and never less", delay, n, d, prev)
			}
			prev = d
			if panics(func() { d = retry.FullJitterBackoffDelay(n, nil, cfg) }) || d < 0 {
				t.Fatalf("Delay %v: FullJitterBackoffDelay(%d) panics or is negative (%v), want a draw", delay, n, d)
			}
		}
	}
}

func panics(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}

// TestAvastZeroValue: with no options, 10 attempts (options.go:86-97),
// 100ms·2ⁿ⁻¹ plus 0-100ms, and no cap: the ninth wait is 25.6s or more.
func TestAvastZeroValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(fails(100, errBoom)...)
		err := retry.New().Do(r.call)
		if r.calls() != 10 || !errors.Is(err, errBoom) {
			t.Fatalf("Do() = %v after %d calls, want %v after 10", err, r.calls(), errBoom)
		}
		if w := r.waits()[8]; w < 25600*time.Millisecond || w >= 25700*time.Millisecond {
			t.Errorf("ninth wait = %v, want within [25.6s, 25.7s)", w)
		}
	})
}

// TestAvastCtxCheckedBeforeFirstCall: yes (retry.go:188-190).
func TestAvastCtxCheckedBeforeFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRecorder()
	if err := retry.New(retry.Context(ctx)).Do(r.call); err != context.Canceled || r.calls() != 0 {
		t.Errorf("Do(canceled ctx) = %v after %d calls, want %v after 0", err, r.calls(), context.Canceled)
	}
}

// TestAvastCancelKeepsCauseAndLastError: with a finite Attempts, the cause
// and every error (retry.go:281-289), but the cause only with
// LastErrorOnly; with Attempts(0) or UntilSucceeded, the cause only unless
// WrapContextErrorWithLastError(true) (retry.go:228-235), which keeps the
// last error alone. Each call fails with an error of its own, so that every
// error, the last only and none can be told apart.
func TestAvastCancelKeepsCauseAndLastError(t *testing.T) {
	tests := []struct {
		name string
		opts []retry.Option
		kept string // which of the three errors fn returned Do's error holds
	}{
		{"finite Attempts", []retry.Option{retry.Attempts(5)}, "every"},
		{"finite Attempts, LastErrorOnly", []retry.Option{retry.Attempts(5), retry.LastErrorOnly(true)}, "none"},
		{"UntilSucceeded", []retry.Option{retry.UntilSucceeded()}, "none"},
		{"UntilSucceeded, WrapContextErrorWithLastError", []retry.Option{retry.UntilSucceeded(), retry.WrapContextErrorWithLastError(true)}, "last"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(context.Background())
				time.AfterFunc(150*time.Second, func() { cancel(errStop) })
				errs := []error{errors.New("first"), errors.New("second"), errors.New("third")}
				r := newRecorder(errs...)
				opts := append([]retry.Option{retry.Context(ctx), retry.Delay(time.Minute), retry.DelayType(retry.FixedDelay)}, tt.opts...)
				err := retry.New(opts...).Do(r.call)
				kept := map[bool]map[bool]string{false: {false: "none", true: "last"}, true: {false: "first, not last", true: "every"}}
				got := kept[errors.Is(err, errs[0]) && errors.Is(err, errs[1])][errors.Is(err, errs[2])]
				if r.calls() != 3 || !errors.Is(err, errStop) || got != tt.kept {
					t.Errorf("Do() = %v after %d calls, want the cause %v and %s of the 3 errors after 3; it holds %s", err, r.calls(), errStop, tt.kept, got)
				}
			})
		})
	}
}

// TestAvastDeadlineAware: no (retry.go:280-289): it sleeps into the deadline.
func TestAvastDeadlineAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := retry.New(retry.Context(ctx), retry.Delay(time.Minute)).Do(func() error { return errBoom })
		if time.Since(start) != time.Second || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do() = %v after %v, want %v after 1s", err, time.Since(start), context.DeadlineExceeded)
		}
	})
}

// TestAvastServerHints: none built in: an error's RetryAfter method is not
// read, and the wait is the usual 100-200ms. A DelayTypeFunc is handed the
// error (options.go:26), so it can read one: here it waits the hour.
func TestAvastServerHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(hourHint{})
		if err := retry.New().Do(r.call); err != nil || r.waits()[0] >= 200*time.Millisecond {
			t.Errorf("Do() = %v after a wait of %v, want nil after less than 200ms", err, r.waits()[0])
		}
		hinted := func(n uint, err error, cfg retry.DelayContext) time.Duration {
			if h, ok := err.(interface{ RetryAfter() time.Duration }); ok {
				return h.RetryAfter()
			}
			return 0
		}
		r = newRecorder(hourHint{})
		if err := retry.New(retry.DelayType(hinted)).Do(r.call); err != nil || r.waits()[0] != time.Hour {
			t.Errorf("Do(DelayType reading the error) = %v after a wait of %v, want nil after 1h", err, r.waits()[0])
		}
	})
}

// TestAvastWhatIsRetried: every error but an Unrecoverable one, or those
// RetryIf rejects (options.go:93, retry.go:258-260).
func TestAvastWhatIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errBoom, errBoom)
		if err := retry.New().Do(r.call); err != nil || r.calls() != 3 {
			t.Errorf("Do() = %v after %d calls, want nil after 3", err, r.calls())
		}
		r = newRecorder(retry.Unrecoverable(errBoom))
		if err := retry.New().Do(r.call); !errors.Is(err, errBoom) || r.calls() != 1 {
			t.Errorf("Do(Unrecoverable) = %v after %d calls, want %v after 1", err, r.calls(), errBoom)
		}
		r = newRecorder(errBoom, errStop, errBoom)
		notStop := retry.RetryIf(func(err error) bool { return err != errStop })
		if err := retry.New(notStop).Do(r.call); !errors.Is(err, errStop) || r.calls() != 2 {
			t.Errorf("Do(RetryIf rejecting the second error) = %v after %d calls, want %v after 2", err, r.calls(), errStop)
		}
	})
}

// TestAvastErrorAfterLastAttempt: its own list of every error, retry.Error
// (retry.go:292-295), with Unwrap() []error and LastError()
// (retry.go:401-437), or the last error with LastErrorOnly(true).
func TestAvastErrorAfterLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := errors.New("last")
		err := retry.New(retry.Attempts(3)).Do(newRecorder(errBoom, errBoom, last).call)
		var list retry.Error
		if !errors.As(err, &list) || len(list) != 3 || list.LastError() != last || err.Error() != "All attempts fail:\n#1: boom\n#2: boom\n#3: last" {
			t.Errorf("Do() = %q, want a retry.Error of 3", err)
		}
		err = retry.New(retry.Attempts(3), retry.LastErrorOnly(true)).Do(newRecorder(errBoom, errBoom, last).call)
		if err != last {
			t.Errorf("Do(LastErrorOnly) = %v, want %v", err, last)
		}
	})
}

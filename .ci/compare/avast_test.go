// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/avast/retry-go/v4"
)

// avast/retry-go v4.7.0. Source: retry.go and options.go in the module
// cache, at the lines named in each probe.

// TestAvastFullJitter: opt-in with FullJitterBackoffDelay; the default
// delay type, CombineDelay(BackOffDelay, RandomDelay) (retry.go:225-239),
// adds 0-100ms to Delay·2ⁿ⁻¹: the first wait lies in [100ms, 200ms).
func TestAvastFullJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for range 100 {
			r := newRecorder(errBoom)
			if err := retry.Do(r.call, retry.Attempts(2)); err != nil {
				t.Fatalf("Do() = %v, want nil", err)
			}
			if w := r.waits()[0]; w < 100*time.Millisecond || w >= 200*time.Millisecond {
				t.Fatalf("first wait = %v, want within [100ms, 200ms)", w)
			}
		}
	})
}

// TestAvastNoWaitAboveCap: only with MaxDelay, none by default. The default
// delay type is clamped after the jitter (retry.go:340-346), so every wait
// at the cap is exactly MaxDelay; FullJitterBackoffDelay caps before the draw
// (options.go:167-190), so its waits at the cap stay spread.
func TestAvastNoWaitAboveCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(fails(9, errBoom)...)
		if err := retry.Do(r.call, retry.MaxDelay(time.Second)); err != nil {
			t.Fatalf("Do() = %v, want nil", err)
		}
		for i, w := range r.waits()[4:] { // 100ms·2⁴ = 1.6s is past the cap
			if w != time.Second {
				t.Errorf("wait %d = %v, want exactly the MaxDelay of 1s", i+5, w)
			}
		}
		cfg := &retry.Config{}
		retry.Delay(time.Second)(cfg)
		retry.MaxDelay(time.Second)(cfg)
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

// TestAvastOverflowSafety: BackOffDelay caps the shift (options.go:115-134),
// but FullJitterBackoffDelay without MaxDelay turns Delay·2ⁿ, a float above
// MaxInt64, into a negative integer on amd64 and rand.Int63n panics on it
// (options.go:169-188): from n = 37 at the default 100ms, 40 at 10ms and 34
// at 1s.
func TestAvastOverflowSafety(t *testing.T) {
	amd64(t)
	for _, tt := range []struct {
		delay time.Duration
		n     uint
	}{{100 * time.Millisecond, 37}, {10 * time.Millisecond, 40}, {time.Second, 34}} {
		cfg := &retry.Config{}
		retry.Delay(tt.delay)(cfg)
		if panics(func() { retry.FullJitterBackoffDelay(tt.n-1, nil, cfg) }) {
			t.Errorf("Delay %v: FullJitterBackoffDelay(%d) panics, want the first panic at n = %d", tt.delay, tt.n-1, tt.n)
		}
		if !panics(func() { retry.FullJitterBackoffDelay(tt.n, nil, cfg) }) {
			t.Errorf("Delay %v: FullJitterBackoffDelay(%d) does not panic, want a panic", tt.delay, tt.n)
		}
	}
	cfg := &retry.Config{}
	retry.Delay(time.Second)(cfg)
	if d := retry.BackOffDelay(1000, nil, cfg); d <= 0 {
		t.Errorf("BackOffDelay(1000) = %v, want a positive, saturated wait", d)
	}
}

func panics(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}

// TestAvastZeroValue: with no options, 10 attempts (retry.go:225-239),
// 100ms·2ⁿ⁻¹ plus 0-100ms, and no cap: the ninth wait is 25.6s or more.
func TestAvastZeroValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(fails(100, errBoom)...)
		err := retry.Do(r.call)
		if r.calls() != 10 || !errors.Is(err, errBoom) {
			t.Fatalf("Do() = %v after %d calls, want %v after 10", err, r.calls(), errBoom)
		}
		if w := r.waits()[8]; w < 25600*time.Millisecond || w >= 25700*time.Millisecond {
			t.Errorf("ninth wait = %v, want within [25.6s, 25.7s)", w)
		}
	})
}

// TestAvastCtxCheckedBeforeFirstCall: yes (retry.go:135).
func TestAvastCtxCheckedBeforeFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRecorder()
	if err := retry.Do(r.call, retry.Context(ctx)); err != context.Canceled || r.calls() != 0 {
		t.Errorf("Do(canceled ctx) = %v after %d calls, want %v after 0", err, r.calls(), context.Canceled)
	}
}

// TestAvastCancelKeepsCauseAndLastError: with a finite Attempts, the cause
// and all errors (retry.go:210-215), but the cause only with LastErrorOnly;
// with Attempts(0) or UntilSucceeded, the cause only unless
// WrapContextErrorWithLastError(true) (retry.go:160-166).
func TestAvastCancelKeepsCauseAndLastError(t *testing.T) {
	tests := []struct {
		name     string
		opts     []retry.Option
		lastKept bool
	}{
		{"finite Attempts", []retry.Option{retry.Attempts(5)}, true},
		{"finite Attempts, LastErrorOnly", []retry.Option{retry.Attempts(5), retry.LastErrorOnly(true)}, false},
		{"UntilSucceeded", []retry.Option{retry.UntilSucceeded()}, false},
		{"UntilSucceeded, WrapContextErrorWithLastError", []retry.Option{retry.UntilSucceeded(), retry.WrapContextErrorWithLastError(true)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancelCause(context.Background())
				time.AfterFunc(time.Second, func() { cancel(errStop) })
				opts := append([]retry.Option{retry.Context(ctx), retry.Delay(time.Minute)}, tt.opts...)
				err := retry.Do(func() error { return errBoom }, opts...)
				if !errors.Is(err, errStop) || errors.Is(err, errBoom) != tt.lastKept {
					t.Errorf("Do() = %v, want the cause %v, with the last error: %t", err, errStop, tt.lastKept)
				}
			})
		})
	}
}

// TestAvastDeadlineAware: no (retry.go:208-215): it sleeps into the deadline.
func TestAvastDeadlineAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := retry.Do(func() error { return errBoom }, retry.Context(ctx), retry.Delay(time.Minute))
		if time.Since(start) != time.Second || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do() = %v after %v, want %v after 1s", err, time.Since(start), context.DeadlineExceeded)
		}
	})
}

// TestAvastServerHints: none built in: an error's RetryAfter method is not
// read, and the wait is the usual 100-200ms. A DelayTypeFunc gets the error
// (options.go:105) and could read one.
func TestAvastServerHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(hourHint{})
		if err := retry.Do(r.call); err != nil || r.waits()[0] >= 200*time.Millisecond {
			t.Errorf("Do() = %v after a wait of %v, want nil after less than 200ms", err, r.waits()[0])
		}
	})
}

// TestAvastWhatIsRetried: every error but an Unrecoverable one, or those
// RetryIf rejects (retry.go:225-239).
func TestAvastWhatIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder(errBoom, errBoom)
		if err := retry.Do(r.call); err != nil || r.calls() != 3 {
			t.Errorf("Do() = %v after %d calls, want nil after 3", err, r.calls())
		}
		r = newRecorder(retry.Unrecoverable(errBoom))
		if err := retry.Do(r.call); !errors.Is(err, errBoom) || r.calls() != 1 {
			t.Errorf("Do(Unrecoverable) = %v after %d calls, want %v after 1", err, r.calls(), errBoom)
		}
	})
}

// TestAvastErrorAfterLastAttempt: its own list of every error, retry.Error
// (retry.go:218-222), or the last error with LastErrorOnly(true).
func TestAvastErrorAfterLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		last := errors.New("last")
		err := retry.Do(newRecorder(errBoom, errBoom, last).call, retry.Attempts(3))
		var list retry.Error
		if !errors.As(err, &list) || len(list) != 3 || err.Error() != "All attempts fail:\n#1: boom\n#2: boom\n#3: last" {
			t.Errorf("Do() = %q, want a retry.Error of 3", err)
		}
		err = retry.Do(newRecorder(errBoom, errBoom, last).call, retry.Attempts(3), retry.LastErrorOnly(true))
		if err != last {
			t.Errorf("Do(LastErrorOnly) = %v, want %v", err, last)
		}
	})
}

// SPDX-License-Identifier: MIT

// Package retry calls a function again when it fails, waiting between
// calls with capped exponential backoff and full jitter:
//
//	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
//		return send(ctx, msg)
//	})
//
// [Policy] sets the calls and waits; [Permanent] and [After] mark errors.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Do calls fn(ctx) until it returns nil or Do stops, waiting as [Policy]
// describes. Do panics if ctx or fn is nil.
//
// Do stops after Attempts calls, or at once if fn's error:
//   - matches [ErrPermanent] under [errors.Is], as an error from
//     [Permanent] does;
//   - has a Retryable() bool method (the first [errors.As] finds) that
//     returns false; or
//   - has a RetryAfter() time.Duration method (the first errors.As finds)
//     that returns a hint above MaxDelay.
//
// After such a stop, Do returns fn's error as it is, unless ctx is done.
// Do stops when ctx is done, and Do's error matches ctx.Err(),
// context.Cause(ctx) and fn's last error, if fn was called.
//
// If ctx has a deadline, a wait's range is cut to end before it with time
// for the next call, estimated (in this version) as the slowest so far. If
// no wait fits, or if fn fails after a wait whose range, without a hint, was
// cut to less than half, Do returns at once, before ctx is done, an error
// matching [context.DeadlineExceeded] and fn's error. The stops above come
// first.
func Do(ctx context.Context, p Policy, fn func(context.Context) error) error {
	if ctx == nil {
		panic("retry: nil Context")
	}
	if fn == nil {
		panic("retry: nil func")
	}
	if ctx.Err() != nil {
		return stopped(ctx, nil)
	}
	deadline, hasDeadline := ctx.Deadline()
	var slowest time.Duration // the slowest call so far, timed only for a deadline
	lastCall := false         // set when an unhinted range is cut below half
	var t *time.Timer         // made for the first wait and reused for the rest
	for attempt := 1; ; attempt++ {
		var start time.Time // read only for a deadline: a clock read costs
		if hasDeadline {
			start = time.Now()
		}
		err := fn(ctx)
		if err == nil {
			return nil
		}
		h := hint(err) // after the nil check: errors.As's target allocates
		if errors.Is(err, ErrPermanent) || !retryable(err) || h > p.max() ||
			attempt >= p.attempts() || ctx.Err() != nil {
			return stopped(ctx, err)
		}
		longest := p.max() // the longest wait
		if hasDeadline {
			// The wait and a call as slow as the slowest so far must end
			// before the deadline.
			now := time.Now()
			slowest = max(slowest, now.Sub(start))
			longest = deadline.Add(-slowest - 1).Sub(now)
			if lastCall || longest < max(h, 0) {
				if errors.Is(err, pastDeadline{}) {
					return err // an inner Do's, which says it all already
				}
				return fmt.Errorf("retry: %w; last error: %w", pastDeadline{}, err)
			}
			// Without a hint, a range cut to less than half of [0, c] ends
			// the backoff: shorter waits would make a tight loop.
			c := p.ceiling(attempt)
			lastCall = h <= 0 && longest < c-longest
		}
		wait := p.wait(attempt, h, longest)
		if t == nil {
			t = time.NewTimer(wait)
		} else {
			t.Reset(wait)
		}
		select {
		case <-ctx.Done():
			// Before Go 1.23, a timer that is not stopped stays in the
			// heap until it fires.
			t.Stop()
		case <-t.C:
		}
		// Asked after the timer too: select picks either when both are ready.
		if ctx.Err() != nil {
			return stopped(ctx, err)
		}
	}
}

// DoValue is [Do] for a function that also returns a value. It returns the
// successful call's value, or the zero value and Do's error.
func DoValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error)) (T, error) {
	var v T
	var call func(context.Context) error // nil for a nil fn, so that Do panics
	if fn != nil {
		call = func(ctx context.Context) (err error) {
			v, err = fn(ctx)
			return err
		}
	}
	if err := Do(ctx, p, call); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// retryable reports whether err has no Retryable method, or its first
// returns true.
func retryable(err error) bool {
	var r interface{ Retryable() bool }
	return !errors.As(err, &r) || r.Retryable()
}

// hint returns what err's first RetryAfter method returns, or 0.
func hint(err error) time.Duration {
	var h interface{ RetryAfter() time.Duration }
	if errors.As(err, &h) {
		return h.RetryAfter()
	}
	return 0
}

// pastDeadline is what Do wraps when it gives up before ctx's deadline.
type pastDeadline struct{}

func (pastDeadline) Error() string { return "gave up before the deadline" }
func (pastDeadline) Unwrap() error { return context.DeadlineExceeded }

// stopped returns the error Do returns when it stops with fn's last error,
// nil before the first call: last itself while ctx is not done.
func stopped(ctx context.Context, last error) error {
	err := ctx.Err()
	if err == nil {
		return last
	}
	// Before Go 1.25, Cause returns nil for a done Context of a type of its
	// own over a live parent made by WithCancel. errors.Is rather than ==,
	// which panics on an error type that is not comparable.
	cause := context.Cause(ctx)
	plain := cause == nil || errors.Is(err, cause) || errors.Is(last, cause) // no cause to add
	switch {
	case errors.Is(last, err) && plain:
		return last // an inner Do's error, or ctx.Err() itself
	case last == nil && plain:
		return fmt.Errorf("retry: %w", err)
	case last == nil:
		return fmt.Errorf("retry: %w (cause: %w)", err, cause)
	case plain:
		return fmt.Errorf("retry: %w; last error: %w", err, last)
	}
	return fmt.Errorf("retry: %w (cause: %w); last error: %w", err, cause, last)
}

// SPDX-License-Identifier: MIT

// Package retry calls a function again when it fails, waiting between
// calls with capped exponential backoff and full jitter:
//
//	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
//		return send(ctx, msg)
//	})
//
// [Do] states the rules, [Policy] sets the waits, [Permanent] marks an error
// that stops retries, and [After] carries a server's hint. Retry only what
// is safe to repeat.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Do calls fn(ctx) on the calling goroutine until it returns nil, at most
// Attempts times, waiting between calls as [Policy] describes. Do panics if
// ctx or fn is nil, and never calls fn once ctx is done.
//
// Do returns fn's error unchanged, even if ctx is done, when
//   - it is the last attempt's;
//   - it wraps a [Permanent] marker;
//   - the first Retryable() bool method [errors.As] finds in it returns
//     false; or
//   - the first RetryAfter() time.Duration method errors.As finds in it,
//     such as [After]'s, returns more than Max.
//
// Otherwise, once ctx is done, Do returns an error that matches ctx.Err(),
// context.Cause(ctx) and the last error. If the wait Do draws would reach
// ctx's deadline, Do returns at once an error that matches
// [context.DeadlineExceeded] and the last error.
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
	var t *time.Timer // made for the first wait and reused for the rest
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		h := hint(err) // after the nil check: errors.As's target allocates
		switch {
		case errors.Is(err, errMarked), !retryable(err), h > p.max(), attempt >= p.attempts():
			return err
		case ctx.Err() != nil:
			return stopped(ctx, err)
		}
		wait := p.wait(attempt-1, h)
		// No call could start before the deadline, so return the error now.
		if deadline, ok := ctx.Deadline(); ok && wait >= time.Until(deadline) {
			if errors.Is(err, pastDeadline{}) {
				return err // an inner Do's, which says it all already
			}
			return fmt.Errorf("retry: %w; last error: %w", pastDeadline{}, err)
		}
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
// value of the call that succeeded, or the zero value and Do's error.
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

// pastDeadline is what Do wraps when the next wait would reach ctx's deadline.
type pastDeadline struct{}

func (pastDeadline) Error() string { return "the next wait would reach the context deadline" }
func (pastDeadline) Unwrap() error { return context.DeadlineExceeded }

// stopped returns the error of a Do that ctx ended; last is nil before a call.
func stopped(ctx context.Context, last error) error {
	err := ctx.Err()
	format, args := "retry: %w", []any{err}
	matched := errors.Is(last, err) // whether last matches all Do would add
	// Before Go 1.25, Cause returns nil for a done Context of a type of its
	// own over a live parent made by WithCancel. errors.Is rather than ==,
	// which panics on an error type that is not comparable.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		format, args = format+" (cause: %w)", append(args, cause)
		matched = matched && errors.Is(last, cause)
	}
	switch {
	case last == nil:
		return fmt.Errorf(format, args...)
	case matched:
		return last // an inner Do's error, or ctx.Err() itself
	}
	return fmt.Errorf(format+"; last error: %w", append(args, last)...)
}

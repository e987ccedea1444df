// SPDX-License-Identifier: MIT

// Package retry calls a function again when it fails, waiting between calls
// with capped exponential backoff and full jitter:
//
//	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
//		return send(ctx, msg)
//	})
//
// [Do]'s doc states the rules. [Policy] sets the attempts and waits,
// [Permanent] marks an error no retry can mend, and [After] carries a
// server's hint. A service that calls a dependency at half its capacity or
// more also needs a retry budget in each process, sized for the fleet, as
// in ExampleDo_budget (https://pkg.go.dev/github.com/bfc42b4f/retry#example-Do-Budget).
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var errNilContext, errNilFunc = errors.New("retry: nil Context"), errors.New("retry: nil func")

// Do calls fn until it returns nil, at most Attempts times, waiting between
// calls as [Policy] says. fn runs on the calling goroutine and gets ctx:
// retry only what is safe to repeat. A nil ctx or fn is an error, and fn is
// never called once ctx is done. Do reads fn's error with [errors.Is] and
// [errors.As], and stops and returns it unchanged, even if ctx is done:
//
//   - after the last attempt;
//   - if it wraps a [Permanent] marker, which stays, so enclosing Dos stop too;
//   - if its first Retryable() bool method says false;
//   - if its first RetryAfter() time.Duration method, such as [After]'s,
//     gives a hint above Max.
//
// The one exception: if fn returns retry.Permanent(err) itself, Do stops
// and returns err, so an enclosing Do retries. Otherwise, once ctx is done,
// Do returns an error that matches ctx.Err(), context.Cause(ctx) and fn's
// last error, such as "retry: context canceled (cause: shutting down); last
// error: HTTP 503". If the next wait would reach ctx's deadline, Do returns
// at once, while ctx.Err() is nil, an error that matches
// [context.DeadlineExceeded] and fn's last error, but no cause.
func Do(ctx context.Context, p Policy, fn func(context.Context) error) error {
	switch {
	case ctx == nil:
		return errNilContext
	case fn == nil:
		return errNilFunc
	case ctx.Err() != nil:
		return stopped(ctx, nil)
	}
	var s sleeper
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if m, ok := err.(*permanent); ok {
			return m.err
		}
		h := hint(err) // after the nil check: errors.As's target allocates
		switch {
		// A hint above Max ends Do: no server can park a goroutine past Max.
		case errors.Is(err, errMarked), !retryable(err), h > p.max(), attempt >= p.attempts():
			return err
		case ctx.Err() != nil:
			return stopped(ctx, err)
		}
		wait := p.wait(attempt-1, h)
		// No call could start before the deadline, so return the error now.
		if deadline, ok := ctx.Deadline(); ok && wait >= time.Until(deadline) {
			return wrap(err, "retry: %w; last error: %w", pastDeadline{})
		}
		if !s.sleep(ctx, wait) {
			return stopped(ctx, err)
		}
	}
}

// DoValue is [Do] for a function that returns a value with its error. It
// returns the value of the call that succeeded, or the zero value of T with
// the error Do would have returned.
func DoValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error)) (v T, err error) {
	if fn == nil {
		return v, Do(ctx, p, nil) // the same error as Do for a nil ctx or fn
	}
	err = Do(ctx, p, func(ctx context.Context) (err error) {
		v, err = fn(ctx)
		return err
	})
	if err != nil {
		return *new(T), err
	}
	return v, nil
}

// retryable reports false if err's first Retryable method says false.
func retryable(err error) bool {
	var r interface{ Retryable() bool }
	return !errors.As(err, &r) || r.Retryable()
}

// hint returns what err's first RetryAfter method says, or 0.
func hint(err error) time.Duration {
	var h interface{ RetryAfter() time.Duration }
	if errors.As(err, &h) {
		return h.RetryAfter()
	}
	return 0
}

// A sleeper waits on one timer, made on first use and reused after.
type sleeper struct{ t *time.Timer }

// sleep waits for d or until ctx is done, and reports whether ctx lives.
func (s *sleeper) sleep(ctx context.Context, d time.Duration) bool {
	switch {
	case d <= 0:
	case ctx.Done() == nil:
		time.Sleep(d) // Sleep uses the timer the runtime keeps per goroutine.
	default:
		if s.t == nil {
			s.t = time.NewTimer(d)
		} else {
			s.t.Reset(d)
		}
		select {
		case <-ctx.Done():
			s.t.Stop() // before Go 1.23, a running timer stays in the heap
		case <-s.t.C:
		}
	}
	// Asked after the timer too: select picks either when both are ready.
	return ctx.Err() == nil
}

// pastDeadline is what Do wraps when the next wait would reach ctx's deadline.
type pastDeadline struct{}

func (pastDeadline) Error() string { return "the next wait would reach the context deadline" }
func (pastDeadline) Unwrap() error { return context.DeadlineExceeded }

// stopped returns the error of a Do that ctx ended; last is nil before a call.
func stopped(ctx context.Context, last error) error {
	format, args := "retry: %w", []any{ctx.Err()}
	// errors.Is rather than ==, which panics on an incomparable error type.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(ctx.Err(), cause) {
		format, args = format+" (cause: %w)", append(args, cause)
	}
	if last == nil {
		return fmt.Errorf(format, args...)
	}
	return wrap(last, format+"; last error: %w", args...)
}

// wrap returns fmt.Errorf(format, errs..., last), or last if it matches all errs.
func wrap(last error, format string, errs ...any) error {
	for _, e := range errs {
		if e, _ := e.(error); !errors.Is(last, e) { // e is nil for a ctx that says Err() == nil
			return fmt.Errorf(format, append(errs, last)...)
		}
	}
	return last
}

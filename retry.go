// SPDX-License-Identifier: MIT

// Package retry calls a function again when it fails, waiting between calls
// with capped exponential backoff and full jitter:
//
//	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
//		return send(ctx, msg)
//	})
//
// [Do] states the rules. [Policy] sets the attempts and waits, [Permanent]
// marks an error no retry can mend, and [After] carries a server's hint.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

var errNilContext = errors.New("retry: nil Context")
var errNilFunc = errors.New("retry: nil func")

// Do calls fn until it returns nil, at most p.Attempts times, and returns
// nil or the reason it stopped; a nil ctx or fn is an error, without a call.
// fn runs on the calling goroutine, one call at a time, and gets ctx on
// every call: a per-attempt timeout belongs inside fn, and its
// DeadlineExceeded is retried like any other error. Do does not recover a
// panic in fn. Retry only operations that are safe to repeat.
//
// Do reads fn's error with [errors.Is] and [errors.As], so %w,
// [errors.Join], and Is and As methods count as they do there. Below, Max
// is p.Max after defaults, and "fn's error" is what fn returned last,
// unchanged. No call starts once ctx is done. After a failed call, in order:
//
//   - A [Permanent] marker anywhere in the error stops Do, whatever a
//     Retryable method says. If fn returned the marker itself, as in
//     return retry.Permanent(err), Do returns err; otherwise fn's error.
//   - The first error with a method Retryable() bool decides: false stops
//     Do, which returns fn's error.
//   - After the last attempt Do returns fn's error, even if ctx ended
//     during that call.
//   - Once ctx is done, Do returns an error that matches ctx.Err(),
//     [context.Cause] and fn's error under errors.Is, where comparable, on
//     one line: "retry: context canceled (cause: …); last error: …". A ctx
//     that ends during a wait ends Do at that instant, with that error.
//   - The first error with a method RetryAfter() time.Duration, such as one
//     made by [After], gives a hint h. A hint above Max makes Do return
//     fn's error, so that a server cannot park a goroutine past Max.
//   - The wait is drawn from [0, c], where c = min(Max, Base·2ⁿ) after n+1
//     failed attempts, as [Policy.Delay] draws; after a hint h > 0, from
//     [h, min(Max, h + max(h, c))], so that clients given one hint come
//     back apart, and none sooner than asked.
//   - If the wait would reach ctx's deadline, Do returns at once an error
//     that matches [context.DeadlineExceeded] and fn's error, but no cause,
//     as ctx is not done: "retry: the next wait would pass the context
//     deadline; last error: …". No call could start in time, so the calls
//     are the same, and the error comes sooner, with time left for a
//     fallback. When the time left to the deadline, left, is inside the
//     wait's range [lo, hi], this happens with a chance of (hi−left)÷(hi−lo).
//
// A marker deeper in fn's error, or in a cancel cause, stays in the error Do
// returns and stops an enclosing Do too. A marker fn returned itself comes
// off, so an enclosing Do retries unless its own fn marks the error again.
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
	for n := 0; ; n++ { // n attempts have failed before this one
		err := fn(ctx)
		if m, ok := err.(*permanent); ok {
			return m.err
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errMarked), !retryable(err), n+1 >= positive(p.Attempts, defaultAttempts):
			return err
		case ctx.Err() != nil:
			return stopped(ctx, err)
		}
		wait, ok := p.wait(n, hint(err))
		switch deadline, bounded := ctx.Deadline(); {
		case !ok:
			return err
		case bounded && wait >= time.Until(deadline):
			return fmt.Errorf("retry: %w; last error: %w", pastDeadline{}, err)
		case !s.sleep(ctx, wait):
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
		time.Sleep(d) // no timer of Do's own: Sleep reuses the goroutine's
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

// pastDeadline is what Do wraps when it stops before a wait that would
// reach ctx's deadline.
type pastDeadline struct{}

func (pastDeadline) Error() string { return "the next wait would pass the context deadline" }
func (pastDeadline) Unwrap() error { return context.DeadlineExceeded }

// stopped returns the error of a Do that ctx ended; last is nil before a call.
func stopped(ctx context.Context, last error) error {
	format, args := "retry: %w", []any{ctx.Err()}
	// errors.Is rather than ==, which panics on an incomparable error type.
	if cause := context.Cause(ctx); cause != nil && !errors.Is(ctx.Err(), cause) {
		format, args = format+" (cause: %w)", append(args, cause)
	}
	if last != nil {
		format, args = format+"; last error: %w", append(args, last)
	}
	return fmt.Errorf(format, args...)
}

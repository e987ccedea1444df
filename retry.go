// SPDX-License-Identifier: MIT

// Package retry calls a function again when it fails, waiting between calls
// with capped exponential backoff and full jitter.
//
//	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
//		return send(ctx, msg)
//	})
//
// [Do] calls fn until it returns nil, at most [Policy].Attempts times, and
// returns nil or the reason it stopped. [DoValue] does the same for a
// function that also returns a value. The rules a caller must know:
//
//   - The wait after the (n+1)th failed attempt is drawn uniformly from
//     [0, min(Max, Base·2ⁿ)], its ceiling (see [Policy.Delay]): full jitter,
//     so that clients that failed together do not come back together. There
//     is no wait after the last attempt, which returns fn's error unchanged.
//     The zero [Policy] is valid: 4 attempts, Base 100ms, Max 10s.
//   - Do reads fn's error as [errors.Is] and [errors.As] read it, through
//     %w and [errors.Join]: a [Permanent] marker anywhere in the tree stops
//     Do, and Do takes the marker off what it returns; otherwise the first
//     error in the tree with a method Retryable() bool decides, and false
//     stops Do, which returns fn's error unchanged.
//   - The first error in the tree with a method RetryAfter() time.Duration,
//     such as one made with [After] from an HTTP Retry-After header, gives a
//     hint h: the next wait is drawn from [h, min(Max, h + max(h, c))], where
//     c is the ceiling. A hint above Max makes Do return fn's error at once,
//     so that a hostile server cannot park a goroutine for hours.
//   - A nil pointer in the tree is a leaf whose methods Do does not call, and
//     the errors this package makes print it as <nil>, as fmt does. This
//     covers pointers only: a nil error of a func or map type is called like
//     any other.
//   - No attempt starts once ctx is done, and a cancel during a wait
//     returns at that instant. The error Do returns then matches ctx.Err(),
//     [context.Cause] and the last error fn returned under [errors.Is].
//   - If ctx has a deadline that the drawn wait would reach, Do returns at
//     once, with an error that matches [context.DeadlineExceeded] and the
//     last error, rather than sleep into the deadline (see [Do]).
//   - fn gets ctx on every call, so a per-attempt timeout belongs inside fn;
//     its DeadlineExceeded is retried like any other error while ctx lives.
//   - No error Do returns holds a marker that another Do would see, so an
//     enclosing Do retries its own operation. A panic in fn is not recovered.
//
// Retry only operations that are safe to repeat. Do starts no goroutine and
// leaves no timer running. A first-try success allocates nothing. With a ctx
// that can never be canceled, such as [context.Background], Do waits with
// [time.Sleep], which allocates the goroutine's sleep timer the first time
// that goroutine sleeps, and nothing after: a retry on a goroutine that has
// slept before allocates nothing. With a ctx that can be canceled, Do makes
// one [time.Timer] (3 objects) and reuses it for every wait; it also calls
// ctx.Done(), which makes a context from [context.WithCancel] allocate its
// channel if nothing asked for it before.
package retry

import (
	"cmp"
	"context"
	"errors"
	"time"
)

var (
	errNilContext = errors.New("retry: nil Context")
	errNilFunc    = errors.New("retry: nil func")
)

// Do calls fn until it returns nil, at most p.Attempts times, waiting
// between calls as [Policy.Delay] draws, and returns nil or the reason it
// stopped. Max below is p.Max after defaults: 10s when it is zero or
// negative. After a failed call Do checks, in this order:
//
//   - for an error holding a [Permanent] marker, it returns the error with
//     the marker taken off, as [Permanent] says;
//   - for an error whose first Retryable method returns false, it returns
//     that error, unchanged;
//   - after the last attempt, it returns the error fn returned, unchanged,
//     even if ctx ended during that call;
//   - once ctx is done, it returns an error that matches ctx.Err(),
//     [context.Cause] and the last error fn returned under [errors.Is]
//     (if ctx is done before the first call, fn is never called);
//   - for an error whose first RetryAfter hint is above Max, it returns that
//     error, unchanged: the hint is in fn's error, where the caller can read
//     it, so Max should be at least the longest hint the caller will honour;
//   - when ctx has a deadline that the drawn wait would reach, it returns at
//     once an error that matches [context.DeadlineExceeded] and the last
//     error.
//
// A positive RetryAfter hint h, at most Max, makes the next wait a draw
// from [h, min(Max, h + max(h, c))], where c is the ceiling [Policy.Delay]
// would draw under: the jitter is at least as wide as the hint, so clients
// given the same hint do not come back together, and it is kept inside the
// room the hint leaves below Max, so a hint of exactly Max makes the wait
// Max. The cost: after a hint at or above the ceiling, and below Max/2, a
// client waits 1.5h on average, where the server asked for h.
//
// Do draws the wait before it looks at ctx's deadline, so when the deadline
// falls inside the wait's range [lo, hi], whether Do returns early is
// random: it gives up with a chance of (hi − left) ÷ (hi − lo), where left
// is the time to the deadline, and always when left ≤ lo. The clients that
// go on are spread over the time left as full jitter spreads them, rather
// than crowded into its end. Keep Max well below the deadline.
//
// Do calls fn on the calling goroutine, never two calls at once, and does not
// recover a panic in fn. A nil ctx or fn is reported as an error, without a
// call.
func Do(ctx context.Context, p Policy, fn func(context.Context) error) error {
	switch {
	case ctx == nil:
		return errNilContext
	case fn == nil:
		return errNilFunc
	case ctx.Err() != nil:
		return stopped(ctx, nil)
	}
	err := fn(ctx)
	if err == nil {
		return nil
	}
	return again(ctx, p, fn, err)
}

// again is the part of Do that runs after the first attempt failed with err,
// kept apart so that Do's path to a first-try success stays short.
func again(ctx context.Context, p Policy, fn func(context.Context) error, err error) error {
	attempts := positive(p.Attempts, defaultAttempts)
	var s sleeper
	for n := 0; ; n++ { // n attempts have failed before this one's err
		v := read(err)
		switch {
		case v.marked:
			return unmarked(err)
		case v.final, n+1 >= attempts:
			return err
		case ctx.Err() != nil:
			return stopped(ctx, err)
		}
		wait, ok := p.wait(n, v.hint)
		if !ok {
			return err
		}
		if d, ok := ctx.Deadline(); ok && wait >= time.Until(d) {
			return &stopError{ctx: context.DeadlineExceeded, last: err, early: true}
		}
		if !s.sleep(ctx, wait) {
			return stopped(ctx, err)
		}
		if err = fn(ctx); err == nil {
			return nil
		}
	}
}

// DoValue is [Do] for a function that returns a value with its error. It
// returns the value of the call that succeeded, or the zero value of T with
// the error Do would have returned.
func DoValue[T any](ctx context.Context, p Policy, fn func(context.Context) (T, error)) (T, error) {
	var v T
	if fn == nil {
		return v, Do(ctx, p, nil) // the same error as Do for a nil ctx or fn
	}
	err := Do(ctx, p, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// A sleeper waits on a single timer, made on first use and reused after.
type sleeper struct{ t *time.Timer }

// sleep waits for d or until ctx is done, and reports whether ctx is still
// alive afterwards.
func (s *sleeper) sleep(ctx context.Context, d time.Duration) bool {
	switch {
	case d <= 0:
		return ctx.Err() == nil // ctx may have ended since Do last asked
	case ctx.Done() == nil:
		// A ctx that can never be canceled needs no select, and Sleep uses
		// the goroutine's own timer, which the runtime allocates on the
		// goroutine's first Sleep and reuses after.
		time.Sleep(d)
		return ctx.Err() == nil
	case s.t == nil:
		s.t = time.NewTimer(d)
	default:
		// Reset is only reached after the last value was taken from t.C,
		// which keeps it from delivering a stale value under the timer
		// semantics before Go 1.23 (asynctimerchan=1).
		s.t.Reset(d)
	}
	select {
	case <-ctx.Done():
		s.t.Stop()
		return false
	case <-s.t.C:
		// When the timer and ctx are ready together, select picks either;
		// asking ctx again keeps a canceled ctx from getting one more attempt.
		return ctx.Err() == nil
	}
}

// A stopError is what Do returns when ctx ended it. Like a spent error, it
// hides the markers below it, in a cancel cause among them, from every Do.
type stopError struct {
	ctx   error // ctx.Err(), or DeadlineExceeded for an early stop
	cause error // context.Cause(ctx) if it is not ctx.Err(), or nil
	last  error // the last error fn returned, or nil if fn was not called
	early bool  // Do stopped before a wait that would reach the deadline
}

// stopped returns the error of a Do that ctx ended after fn returned last.
func stopped(ctx context.Context, last error) error {
	// A Context that breaks its contract, done with a nil Err, still gets
	// an error that says what happened rather than a nil dereference.
	e := &stopError{ctx: cmp.Or(ctx.Err(), context.Canceled), last: last}
	// errors.Is rather than ==, which panics on an incomparable error type.
	if c := context.Cause(ctx); !errors.Is(e.ctx, c) {
		e.cause = c
	}
	return e
}

func (e *stopError) Error() string {
	msg := "retry: " + text(e.ctx)
	if e.early {
		msg = "retry: the next wait would pass the context deadline"
	}
	if e.cause != nil {
		msg += " (cause: " + text(e.cause) + ")"
	}
	if e.last != nil {
		msg += "; last error: " + text(e.last)
	}
	return msg
}

func (e *stopError) Unwrap() []error {
	errs := []error{e.ctx}
	for _, err := range []error{e.cause, e.last} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

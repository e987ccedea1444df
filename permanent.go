// SPDX-License-Identifier: MIT

package retry

import (
	"reflect"
	"time"
)

// Permanent wraps err in a marker that stops [Do]. Do finds the marker
// anywhere in the tree of fn's error, as [errors.Is] finds an error: wrapped
// with %w or inside [errors.Join]. Do takes the marker off:
//
//   - when fn returns the marker itself, as in return retry.Permanent(err),
//     Do returns err, unchanged, so that err == io.EOF and the like hold;
//   - when the marker is deeper in fn's error, as in
//     fmt.Errorf("load user 7: %w", retry.Permanent(err)), Do returns fn's
//     whole error, behind a wrapper that keeps its message and everything
//     errors.Is and [errors.As] find in it.
//
// Either way, no error Do returns holds a marker that another Do would see:
// an enclosing Do goes on retrying its own operation, unless its fn marks
// the error again. A marker in a cancel cause, as in
// cancel(retry.Permanent(err)), is only a cause, and stops no Do.
//
// Mark an error where fn returns it, not where it is defined: a sentinel
// such as var errBadID = retry.Permanent(errors.New("bad id")) comes back
// from Do as the error inside the marker, which is not errBadID.
//
// Permanent(nil) is nil, and Permanent of an error that is already one
// returns it unchanged. The marker's message is err's, and its Unwrap method
// returns err.
func Permanent(err error) error {
	switch err.(type) {
	case nil, *permanent:
		return err
	}
	return &permanent{err}
}

type permanent struct{ err error }

func (e *permanent) Error() string { return text(e.err) }
func (e *permanent) Unwrap() error { return e.err }

// After wraps err with a hint that the next attempt should wait at least d,
// as an HTTP Retry-After header or a gRPC pushback asks. Do reads the hint
// as it reads any error's RetryAfter() time.Duration method; see [Do] for
// how the hint shapes the wait, and why a hint above Max stops Do.
//
// After(nil, d) is nil, and with d <= 0 After returns err unchanged: a hint
// of zero or less is no hint. The result's message is err's, and its Unwrap
// method returns err, so [errors.Is] and [errors.As] find in it what they
// find in err. An After around an error that already has a hint overrules
// that hint, as the first error with a RetryAfter method counts.
func After(err error, d time.Duration) error {
	if err == nil || d <= 0 {
		return err
	}
	return &after{err, d}
}

type after struct {
	err error
	d   time.Duration
}

func (e *after) Error() string             { return text(e.err) }
func (e *after) Unwrap() error             { return e.err }
func (e *after) RetryAfter() time.Duration { return e.d }

// A spent error is what Do returns for an error that holds a marker, when
// taking the marker off would mean rebuilding the error. It stands for that
// error but hides the markers below it from every Do.
type spent struct{ err error }

func (e *spent) Error() string { return text(e.err) }
func (e *spent) Unwrap() error { return e.err }

// unmarked returns what Do returns when err, an error fn returned, holds a
// marker: the error inside the marker if err is one, otherwise err itself,
// behind a spent wrapper if a marker is still inside it.
func unmarked(err error) error {
	if p, ok := err.(*permanent); ok {
		if err = p.err; !read(err).marked {
			return err
		}
	}
	return &spent{err}
}

// A verdict is what Do reads from the tree of an error fn returned. The
// Retryable and RetryAfter methods are read as [errors.As] would find them:
// from the first error in the tree that has the method.
type verdict struct {
	marked         bool          // the tree holds a marker that Do may see
	classed, final bool          // an error had a Retryable method, and it said false
	hinted         bool          // an error had a RetryAfter method
	hint           time.Duration // what it returned
}

// read walks the tree of err in the order of [errors.Is]. It does not use
// errors.As, which allocates its target on every call.
func read(err error) verdict {
	var v verdict
	v.walk(err, true)
	return v
}

// walk reads a subtree; marks says whether a Permanent marker found there
// counts, which it does not below an error that Do made.
func (v *verdict) walk(err error, marks bool) {
	// A nil pointer in the tree is a leaf whose methods Do does not call:
	// they could dereference it, and fmt prints such an error as <nil>
	// rather than panic. Only reflect can see a nil pointer of any type; it
	// runs on the failure path alone, and allocates nothing.
	for err != nil && !nilPointer(err) {
		switch err.(type) {
		case *permanent:
			v.marked = v.marked || marks
		case *spent, *stopError:
			marks = false
		}
		if r, ok := err.(interface{ Retryable() bool }); ok && !v.classed {
			v.classed, v.final = true, !r.Retryable()
		}
		if r, ok := err.(interface{ RetryAfter() time.Duration }); ok && !v.hinted {
			v.hinted, v.hint = true, r.RetryAfter()
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, err := range u.Unwrap() {
				v.walk(err, marks)
			}
			return
		default:
			return
		}
	}
}

// nilPointer reports whether err is a nil pointer held in a non-nil error.
func nilPointer(err error) bool {
	v := reflect.ValueOf(err)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// text returns err's message, or "<nil>" for a nil pointer, as fmt prints
// it. Every error the package makes prints the error it holds with text.
func text(err error) string {
	if nilPointer(err) {
		return "<nil>"
	}
	return err.Error()
}

// SPDX-License-Identifier: MIT

package retry

import (
	"reflect"
	"time"
)

// Permanent wraps err in a marker that stops [Do]: when fn returns an error
// that holds the marker anywhere in its tree, wrapped with %w or inside
// [errors.Join], Do returns err, the error given to Permanent, at once. With
// several markers in one tree, the first that [errors.Is] would visit counts.
//
// Do never returns a marker that another Do would see, so a Do that encloses
// another Do keeps retrying its own operation. When err itself holds a marker,
// as in Permanent(fmt.Errorf("load user: %w", err)) where err came from a
// helper that marks its own errors, Do returns err behind a wrapper that has
// err's message, unwraps to err, and hides the markers below it from every
// Do; errors.Is and errors.As see through it as usual.
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

func (e *permanent) Error() string { return e.err.Error() }
func (e *permanent) Unwrap() error { return e.err }

// A spent error is what Do returns for a marker whose error holds markers of
// its own. It stands for that error but hides those markers from Do.
type spent struct{ err error }

func (e *spent) Error() string { return e.err.Error() }
func (e *spent) Unwrap() error { return e.err }

// unmarked returns what Do returns when a marker wrapping err stops it: err
// itself, or err behind a spent wrapper if a marker is still inside it.
func unmarked(err error) error {
	var v verdict
	v.read(err)
	if v.permanent == nil {
		return err
	}
	return &spent{err}
}

// A verdict is what Do reads from the tree of an error fn returned.
type verdict struct {
	permanent error         // what the first Permanent marker wraps
	final     bool          // some error's Retryable method returned false
	hint      time.Duration // the largest RetryAfter in the tree
}

// read walks the tree of err in the order of [errors.Is] and records what it
// finds. It does not use errors.As, which allocates its target on every call.
func (v *verdict) read(err error) { v.walk(err, true) }

// walk is read for a subtree; marks says whether a Permanent marker found
// there counts, which it does not below a spent error.
func (v *verdict) walk(err error, marks bool) {
	// A nil pointer in the tree is a leaf: its methods could dereference it,
	// and a typed nil wrapped by mistake must not panic Do.
	for err != nil && !nilPointer(err) {
		switch e := err.(type) {
		case *permanent:
			if marks && v.permanent == nil {
				v.permanent = e.err
			}
		case *spent:
			marks = false
		}
		if r, ok := err.(interface{ Retryable() bool }); ok && !r.Retryable() {
			v.final = true
		}
		if r, ok := err.(interface{ RetryAfter() time.Duration }); ok {
			v.hint = max(v.hint, r.RetryAfter())
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

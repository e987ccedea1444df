// SPDX-License-Identifier: MIT

package retry

import "time"

// Permanent wraps err in a marker that stops [Do]: when fn returns an error
// that holds the marker anywhere in its tree, wrapped with %w or inside
// [errors.Join], Do returns err, the error given to Permanent, at once. Do
// never returns the marker itself, so a Do that encloses another Do keeps
// retrying its own operation. With several markers in one tree, the first
// that [errors.Is] would visit counts.
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

// A verdict is what Do reads from the tree of an error fn returned.
type verdict struct {
	permanent error         // what the first Permanent marker wraps
	final     bool          // some error's Retryable method returned false
	hint      time.Duration // the largest RetryAfter in the tree
}

// read walks the tree of err in the order of [errors.Is] and records what it
// finds. It does not use errors.As, which allocates its target on every call.
func (v *verdict) read(err error) {
	for err != nil {
		if p, ok := err.(*permanent); ok && v.permanent == nil {
			v.permanent = p.err
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
				v.read(err)
			}
			return
		default:
			return
		}
	}
}

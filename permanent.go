// SPDX-License-Identifier: MIT

package retry

import (
	"errors"
	"fmt"
	"time"
)

// Permanent wraps err in a marker that stops [Do], and every Do that
// encloses it, wherever the marker is in fn's error. Its message and Unwrap
// are err's: compare Do's error with [errors.Is], not ==. Permanent returns
// nil for nil, and a marker unchanged.
func Permanent(err error) error {
	if _, ok := err.(*permanent); ok || err == nil {
		return err
	}
	return &permanent{err}
}

type permanent struct{ err error }

// errMarked is the target errors.Is finds a marker by, with no allocation.
var errMarked = errors.New("retry: permanent")

func (e *permanent) Error() string        { return fmt.Sprint(e.err) }
func (e *permanent) Unwrap() error        { return e.err }
func (e *permanent) Is(target error) bool { return target == errMarked }

// After wraps err with a hint to wait at least d before the next attempt,
// as an HTTP Retry-After header asks. Its message and Unwrap are err's, so
// an outer After overrides a hint inside err. After returns err itself if
// err is nil or d <= 0.
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

func (e *after) Error() string             { return fmt.Sprint(e.err) }
func (e *after) Unwrap() error             { return e.err }
func (e *after) RetryAfter() time.Duration { return e.d }

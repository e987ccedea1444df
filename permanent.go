// SPDX-License-Identifier: MIT

package retry

import (
	"errors"
	"fmt"
	"time"
)

// Permanent wraps err in a marker that stops [Do], wherever it is in fn's
// error. Permanent(nil) is nil, Permanent of a marker returns it, and the
// marker's message and Unwrap are err's. Mark an error where fn returns it,
// as in return retry.Permanent(ErrNotFound), and compare Do's error with the
// error marked, as in errors.Is(err, ErrNotFound).
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
// as an HTTP Retry-After header asks; [Policy] says how long. After(nil, d)
// is nil; with d <= 0, After returns err as it is, to be retried, as for a
// Retry-After date already past. A gRPC pushback below zero asks for no
// retry: return Permanent(err) for it. After says err's message and
// unwraps to err, so an outer After overrules a hint that err holds.
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

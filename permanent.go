// SPDX-License-Identifier: MIT

package retry

import (
	"errors"
	"fmt"
	"time"
)

// ErrPermanent is what an error from [Permanent] matches under
// [errors.Is]. Returning ErrPermanent itself, wrapped or not, also stops
// [Do].
var ErrPermanent = errors.New("retry: permanent")

// Permanent returns err wrapped in a marker that matches [ErrPermanent], so
// that [Do] stops at once, even if the marker sits inside an error whose
// Retryable returns true. Do's error keeps the marker, so an enclosing Do
// stops too. The marker has err's message, Unwrap returns err, and
// Retryable returns false. If err is nil or is itself a marker, Permanent
// returns err.
func Permanent(err error) error {
	if _, ok := err.(*permanent); ok || err == nil {
		return err
	}
	return &permanent{err}
}

type permanent struct{ err error }

func (e *permanent) Error() string        { return fmt.Sprint(e.err) }
func (e *permanent) Unwrap() error        { return e.err }
func (e *permanent) Is(target error) bool { return target == ErrPermanent }
func (e *permanent) Retryable() bool      { return false }

// After returns err wrapped with a hint to wait at least d. The error has
// err's message, Unwrap returns err, and RetryAfter returns d. After returns
// err if err is nil or d <= 0.
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

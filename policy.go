// SPDX-License-Identifier: MIT

package retry

import (
	"math/rand/v2"
	"time"
)

// The values of Policy's fields when they are zero or negative.
const (
	defaultAttempts = 4
	defaultBase     = 100 * time.Millisecond
	defaultMax      = 10 * time.Second
)

// A Policy sets how many times [Do] calls fn and how long it waits. The
// zero Policy is valid; a Policy is safe for concurrent use.
//
// After attempt n fails, Do waits a random time, uniform from 0 to a ceiling
// c = min(MaxDelay, BaseDelay<<(n-1)), computed without overflow: BaseDelay
// after the first failure, doubling after each later one, up to MaxDelay.
//
// If fn's error carries a hint h > 0, the wait is uniform from h to the
// smaller of MaxDelay and h+max(h, c): with h = 1s, c = 400ms and MaxDelay
// 10s, 1s to 2s. A deadline can shorten a wait or end Do early, as [Do]
// describes.
type Policy struct {
	// Attempts is the most calls Do makes. Zero or negative means 4. To
	// retry until ctx is done or its deadline is near, use math.MaxInt.
	Attempts int

	// BaseDelay caps the first wait when there is no hint. Zero or negative
	// means 100ms.
	BaseDelay time.Duration

	// MaxDelay caps every wait; a hint above MaxDelay ends Do at once.
	// Zero or negative means 10s.
	MaxDelay time.Duration
}

// Delay returns a random wait Do could draw after attempt n fails without a
// hint or deadline. An n below 1 means 1.
func (p Policy) Delay(n int) time.Duration {
	return draw(p.ceiling(n))
}

// draw returns a uniform draw from [0, c]. In uint64, MaxInt64+1 fits.
func draw(c time.Duration) time.Duration {
	return time.Duration(rand.Uint64N(uint64(c) + 1))
}

func (p Policy) attempts() int      { return orDefault(p.Attempts, defaultAttempts) }
func (p Policy) max() time.Duration { return orDefault(p.MaxDelay, defaultMax) }

// ceiling returns the ceiling c after attempt n fails, as Policy's doc says.
func (p Policy) ceiling(n int) time.Duration {
	base, limit := orDefault(p.BaseDelay, defaultBase), p.max()
	n = max(n, 1) - 1
	// Compare before shifting: with BaseDelay = 1<<40 + 1 and n = 24, base<<n
	// wraps to 1<<24 (16.7ms). From n = 63 on, limit>>n is 0, so limit is
	// returned.
	if base > limit>>n {
		return limit
	}
	return base << n
}

// wait returns the wait after attempt n failed with hint h, drawn from the
// range Policy's doc gives, cut at longest, which is at least max(h, 0).
func (p Policy) wait(n int, h, longest time.Duration) time.Duration {
	h = max(h, 0) // a hint of 0 or less is no hint
	c := p.ceiling(n)
	if h > 0 {
		// Not a clamp of h+draw to MaxDelay, which would send clients told
		// a hint near MaxDelay back together; h+c <= MaxDelay cannot
		// overflow, as h+h can.
		c = min(max(h, c), p.max()-h)
	}
	return h + draw(min(c, longest-h))
}

// orDefault returns v if it is above zero, and def otherwise.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

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

// A Policy describes how many times [Do] calls fn and how long it waits
// between calls. The zero Policy is valid, and a Policy is safe for
// concurrent use.
//
// After attempt n+1 fails (n from 0), Do waits a random time drawn
// uniformly from [0, c], where c is min(Max, Base<<n); after a hint h > 0,
// from [h, min(Max, h+max(h, c))].
type Policy struct {
	// Attempts is the maximum number of calls to fn; 1 means no retries.
	// Zero or negative means 4.
	Attempts int

	// Base is the ceiling of the first wait. Zero or negative means 100ms.
	Base time.Duration

	// Max is the ceiling of every wait; a hint above Max stops Do. Zero or
	// negative means 10s.
	Max time.Duration
}

// Delay returns a wait drawn as Do draws it after attempt n+1 fails
// without a hint, for a loop of the caller's own. A negative n means 0.
func (p Policy) Delay(n int) time.Duration {
	return draw(p.ceiling(n))
}

// draw returns a uniform draw from [0, c]. In uint64, MaxInt64+1 fits.
func draw(c time.Duration) time.Duration {
	return time.Duration(rand.Uint64N(uint64(c) + 1))
}

func (p Policy) attempts() int      { return orDefault(p.Attempts, defaultAttempts) }
func (p Policy) max() time.Duration { return orDefault(p.Max, defaultMax) }

// ceiling returns the ceiling c after attempt n+1, as Policy's doc defines it.
func (p Policy) ceiling(n int) time.Duration {
	base, limit := orDefault(p.Base, defaultBase), p.max()
	n = max(n, 0)
	// Compare before shifting: with Base = 1<<40 + 1 and n = 24, base<<n
	// wraps to 1<<24 (16.7ms). From n = 63 on, limit>>n is 0, so limit is
	// returned.
	if base > limit>>n {
		return limit
	}
	return base << n
}

// wait returns the wait after attempt n+1 failed with hint h.
func (p Policy) wait(n int, h time.Duration) time.Duration {
	if h <= 0 {
		return p.Delay(n)
	}
	// Not a clamp of h + draw to Max, which would send clients told a hint
	// near Max back together. h + room <= Max cannot overflow, as h + h can.
	room := min(max(h, p.ceiling(n)), p.max()-h)
	return h + draw(room)
}

// orDefault returns v if it is above zero, and def otherwise.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

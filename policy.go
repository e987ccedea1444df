// SPDX-License-Identifier: MIT

package retry

import (
	"cmp"
	"math/rand/v2"
	"time"
)

// The values that zero and negative Policy fields stand for.
const defaultAttempts, defaultBase, defaultMax = 4, 100 * time.Millisecond, 10 * time.Second

// A Policy says how many times [Do] calls fn and how long it waits between
// calls. The zero Policy is valid; each field says what zero means. A
// Policy is a plain value, safe to copy and to share between goroutines.
//
// After failed attempt n+1 (n from 0), Do waits a time drawn uniformly from
// [0, c], where the ceiling c is min(Max, Base·2ⁿ); after a hint h > 0, from
// [h, min(Max, h + max(h, c))], which holds [h, 2h] if h ≤ Max/2.
type Policy struct {
	// Attempts is the most calls to fn, the first one included; 1 means no
	// retry. Zero or negative means 4.
	Attempts int

	// Base is the ceiling of the first wait. Zero or negative means 100ms.
	Base time.Duration

	// Max bounds every wait; a hint above it ends Do. Set it to at least
	// twice the longest hint you will honour. Zero or negative means 10s.
	Max time.Duration
}

// Delay returns a wait drawn as Do draws it after attempt n+1 fails with no
// hint, for a loop of the caller's own, such as a reconnect loop that never
// gives up. A negative n counts as 0. Delay never panics.
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
	base, limit, n := orDefault(p.Base, defaultBase), p.max(), max(n, 0)
	// Compare before shifting: with Base = 2⁴⁰+1ns and n = 24, base<<n wraps
	// to 2²⁴ns (16.7ms). From n = 63 on, limit>>n is 0, so limit is returned.
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
	// near Max back together; h + room <= Max cannot overflow, as h + h can.
	room := min(max(h, p.ceiling(n)), p.max()-h)
	return h + draw(room)
}

// orDefault returns v if it is above zero, and def otherwise.
func orDefault[T int | time.Duration](v, def T) T { return cmp.Or(max(v, 0), def) }

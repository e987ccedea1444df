// SPDX-License-Identifier: MIT

package retry

import (
	"math"
	"math/rand/v2"
	"time"
)

// The values that zero and negative Policy fields stand for.
const (
	defaultAttempts = 4
	defaultBase     = 100 * time.Millisecond
	defaultMax      = 10 * time.Second
)

// A Policy says how many times [Do] calls fn and how long it waits between
// calls. The zero Policy is valid: 4 attempts, with waits drawn from
// [0, 100ms], [0, 200ms] and [0, 400ms].
//
// A Policy is a plain value, safe to copy and to share between goroutines.
type Policy struct {
	// Attempts is the number of calls to fn, the first one included.
	// Zero or negative means 4; 1 means no retry.
	Attempts int

	// Base is the ceiling of the first wait. The ceiling doubles after
	// every failed attempt until it reaches Max.
	// Zero or negative means 100ms.
	Base time.Duration

	// Max bounds every wait, server hints included. A Base above Max is
	// allowed: every ceiling is then Max.
	// Zero or negative means 10s.
	Max time.Duration
}

// Delay returns a wait drawn uniformly from [0, min(Max, Base·2ⁿ)], with the
// defaults applied to zero and negative fields; a negative n counts as 0.
// It is the wait that [Do] takes after attempt n+1 fails (before any server
// hint), for callers that run their own loop, such as a reconnect loop that
// never gives up. Delay never panics and never returns more than Max.
func (p Policy) Delay(n int) time.Duration {
	return draw(p.ceiling(n))
}

// draw returns a duration drawn uniformly from [0, c], for c >= 0.
func draw(c time.Duration) time.Duration {
	if c == math.MaxInt64 {
		// rand.N(c+1) would overflow; Int64 is uniform over [0, MaxInt64].
		return time.Duration(rand.Int64())
	}
	return rand.N(c + 1)
}

// ceiling returns min(Max, Base·2ⁿ), with the defaults applied.
func (p Policy) ceiling(n int) time.Duration {
	base := positive(p.Base, defaultBase)
	limit := positive(p.Max, defaultMax)
	n = max(n, 0)
	// Compare before shifting, because base<<n can wrap: with Base = 2⁴⁰+1ns
	// and n = 24 it wraps to 2²⁴ns (16.7ms), though the true product is far
	// above any Max. Once n reaches 63, limit>>n is 0 and limit is returned.
	if base > limit>>n {
		return limit
	}
	return base << n
}

// wait returns the wait after attempt n+1 failed with a server hint of h.
// A hint of zero or less is ignored, and the wait is Delay(n). Otherwise the
// wait is drawn uniformly from [h, min(Max, h + max(h, c))], where c is
// min(Max, Base·2ⁿ): the jitter is as wide as the hint at least, so that
// clients told the same hint come back apart, and it is drawn inside the
// room that the hint leaves below Max, so a hint of exactly Max leaves none.
// It reports false if h is above Max, which cannot be honoured.
func (p Policy) wait(n int, h time.Duration) (time.Duration, bool) {
	if h <= 0 {
		return p.Delay(n), true
	}
	limit := positive(p.Max, defaultMax)
	if h > limit {
		return 0, false
	}
	// Drawing from [0, room] rather than clamping h + draw to Max keeps the
	// jitter near Max, and h + room cannot overflow, where h + h could for
	// a hint above MaxInt64/2: room is at most limit - h.
	room := min(max(h, p.ceiling(n)), limit-h)
	return h + draw(room), true
}

// positive returns v if it is above zero, and def otherwise.
func positive[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

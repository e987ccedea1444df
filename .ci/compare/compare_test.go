// SPDX-License-Identifier: MIT

// Package compare holds the evidence behind README.md, in a module of its
// own so that the retry module requires nothing. README.md in this
// directory reports what it measures, with the command behind each figure.
//
//   - cenkalti_test.go, avast_test.go, sethvargo_test.go and failsafe_test.go
//     hold one probe for each cell of the comparison table about that
//     library, named after the row it settles: TestCenkaltiDeadlineAware
//     settles the "deadline-aware" cell of cenkalti/backoff. Each asserts
//     what the library does at the version go.mod pins, so a cell that stops
//     being true fails CI.
//   - bench_test.go measures the overhead of each library side by side, and
//     counts allocations.
//   - db_test.go retries serialization failures against a real PostgreSQL,
//     and asserts what the evidence says of it.
//   - fleet_test.go runs a fleet of clients against a service that comes
//     back from an outage, in virtual time and over HTTP on loopback;
//     cmd/fleetplot draws both. hinted_test.go runs fleets that a
//     Retry-After tells to wait.
//   - overload_test.go runs open-loop callers against a dependency that
//     hangs, sheds load, limits its queue or fails slowly in an outage, or
//     fails a share of requests, in virtual time and on loopback, with and
//     without ExampleDo_budget's bucket and the peers' budgets, and with a
//     bucket in each of up to 1,000 processes; cmd/fleetplot draws one of
//     its cells.
//   - deadline_test.go runs jobs with a deadline against a dependency that
//     is down, in virtual time, with Do told the deadline and not told it.
//
// The cells of README.md's tables marked † are read from source, at the
// versions go.mod pins, in the module cache (go env GOMODCACHE), not probed:
// avast's Retrier can be reused (options.go:118-121), but a ctx is one of
// its options (options.go:343), so a ctx per request takes a Retrier per
// request; failsafe's RetryPolicy "is concurrency safe"
// (retrypolicy/retry.go:59); the fn types are cenkalti's Operation[T]
// (retry.go:15), avast's RetryableFunc (retry.go:157), sethvargo's
// RetryFunc (retry.go:22), failsafe's Run (executor.go:43) and
// RunWithExecution (executor.go:49); the total-time limits are cenkalti's
// WithMaxElapsedTime (retry.go:94) and WithMaxDuration (sethvargo
// backoff.go:160, failsafe retrypolicy/retry.go:272); the hooks are
// WithNotify (cenkalti retry.go:56) and OnRetry (avast options.go:284,
// failsafe retrypolicy/retry.go:342); the value variants are Retry[T]
// (cenkalti retry.go:114), NewWithData[T] (avast options.go:126), DoValue
// (sethvargo retry.go:52) and Get (failsafe executor.go:54);
// go-retryablehttp's Client (client.go:404-437) takes a *Request and
// returns an *http.Response (client.go:666); the minimum Go is each
// go.mod's go line.
//
// Run from this directory:
//
//	go test ./...                             # the probes
//	go test -run '^$' -bench . -benchmem      # the overhead table
//	PGURL=... go test -run Database -v        # the database tables
//	go test -run TestFleet -v                 # the fleets
//	go run ./cmd/fleetplot -o fleet.svg       # the fleet plot
//	go test -run Overload -v                  # the overload tables
//	go run ./cmd/fleetplot -figure overload -o overload.svg
//	go test -run TestDeadline -v              # the deadline's jobs
package compare

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

var (
	errBoom = errors.New("boom")
	errStop = errors.New("shutting down")
)

// hourHint is an error that carries a server's hint to wait an hour, in the
// form this package reads.
type hourHint struct{}

func (hourHint) Error() string             { return "retry after 1h" }
func (hourHint) RetryAfter() time.Duration { return time.Hour }

// amd64 skips t unless it runs on amd64: converting an out-of-range float to
// an integer, which some probes rely on, is left by the Go spec to the
// implementation, and the README reports what amd64 does.
func amd64(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the probe settles what amd64 does; this is %s", runtime.GOARCH)
	}
}

// recorder is an operation that fails with the errors of errs in turn and
// then succeeds, and records when it was called.
type recorder struct {
	errs  []error
	start time.Time
	at    []time.Duration
}

func newRecorder(errs ...error) *recorder { return &recorder{errs: errs, start: time.Now()} }

func (r *recorder) call() error {
	r.at = append(r.at, time.Since(r.start))
	if n := len(r.at); n <= len(r.errs) {
		return r.errs[n-1]
	}
	return nil
}

func (r *recorder) calls() int { return len(r.at) }

// waits returns the time between calls.
func (r *recorder) waits() []time.Duration {
	var w []time.Duration
	for i := 1; i < len(r.at); i++ {
		w = append(w, r.at[i]-r.at[i-1])
	}
	return w
}

// fails returns n copies of err.
func fails(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// spread checks that 400 waits look drawn uniformly from [lo, hi]: all
// inside it, and some within a twentieth of its width of either end. For
// uniform draws each end is missed with a chance of 0.95⁴⁰⁰, 1.2e-9, and
// either with 2.5e-9; waits pinned to one value, or drawn from one side
// only, miss an end for sure.
func spread(t *testing.T, what string, waits []time.Duration, lo, hi time.Duration) {
	t.Helper()
	low, top := waits[0], waits[0]
	for _, w := range waits {
		if w < lo || w > hi {
			t.Fatalf("%s = %v, want within [%v, %v]", what, w, lo, hi)
		}
		low, top = min(low, w), max(top, w)
	}
	if edge := (hi - lo) / 20; low > lo+edge || top < hi-edge {
		t.Errorf("%s spans [%v, %v] over %d draws, want near [%v, %v]", what, low, top, len(waits), lo, hi)
	}
}

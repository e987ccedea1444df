// SPDX-License-Identifier: MIT

package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bfc42b4f/retry"
)

// Do calls fn again after each failure, and returns nil once it succeeds.
func ExampleDo() {
	attempt := 0
	err := retry.Do(context.Background(), retry.Policy{}, func(context.Context) error {
		if attempt++; attempt < 3 {
			fmt.Println("attempt", attempt, "failed")
			return errors.New("connection refused")
		}
		return nil
	})
	fmt.Println("err:", err, "after", attempt, "attempts")
	// Output:
	// attempt 1 failed
	// attempt 2 failed
	// err: <nil> after 3 attempts
}

// An error wrapped with Permanent stops Do at the first call; errors.Is
// finds the error marked in Do's error.
func ExampleDo_permanent() {
	errNotFound := errors.New("not found")
	attempts := 0
	err := retry.Do(context.Background(), retry.Policy{}, func(context.Context) error {
		attempts++
		return retry.Permanent(fmt.Errorf("GET /users/7: 404: %w", errNotFound))
	})
	fmt.Println("err:", err, "after", attempts, "attempt")
	fmt.Println("not found:", errors.Is(err, errNotFound))
	// Output:
	// err: GET /users/7: 404: not found after 1 attempt
	// not found: true
}

// A marker stays in the error Do returns, bare or wrapped, so it stops an
// enclosing Do too.
func ExamplePermanent() {
	p := retry.Policy{Attempts: 3, Base: time.Millisecond}
	marked := retry.Permanent(errors.New("bad id"))
	for _, inner := range []error{marked, fmt.Errorf("load user 7: %w", marked)} {
		calls := 0
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			return retry.Do(ctx, p, func(context.Context) error { calls++; return inner })
		})
		fmt.Printf("calls: %d, err: %v\n", calls, err)
	}
	// Output:
	// calls: 1, err: bad id
	// calls: 1, err: load user 7: bad id
}

// After hands Do a server's hint without an error type of the caller's
// own, and Do waits at least the hint.
func ExampleAfter() {
	start, attempt := time.Now(), 0
	err := retry.Do(context.Background(), retry.Policy{}, func(context.Context) error {
		if attempt++; attempt == 1 {
			return retry.After(errors.New("HTTP 503"), 20*time.Millisecond)
		}
		return nil
	})
	fmt.Println("err:", err, "after", attempt, "attempts")
	fmt.Println("waited the hint:", time.Since(start) >= 20*time.Millisecond)
	// Output:
	// err: <nil> after 2 attempts
	// waited the hint: true
}

// A server answers 503 with Retry-After: 1, then 200. fetch hands Do the
// hint with After, and Do waits at least a second. The zero Policy's Max,
// 10s, suits hints up to 5s: Policy's doc says why.
func ExampleDo_retryAfter() {
	var calls atomic.Int32 // the server's handlers run on goroutines of their own
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprint(w, "OK")
	}))
	defer srv.Close()
	ctx, start := context.Background(), time.Now()
	body, err := retry.DoValue(ctx, retry.Policy{}, func(ctx context.Context) ([]byte, error) {
		return fetch(ctx, srv.URL)
	})
	waited := time.Since(start) >= time.Second
	fmt.Printf("%s %v after %d calls, waited the hint: %t\n", body, err, calls.Load(), waited)
	// Output:
	// OK <nil> after 2 calls, waited the hint: true
}

// fetch GETs url once and returns the body of a 200. A 503 is retried after
// the seconds its Retry-After header asks; any other status is Permanent.
func fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, retry.Permanent(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err // a network error or a timeout: retried
	}
	defer resp.Body.Close()
	err = fmt.Errorf("HTTP %d", resp.StatusCode)
	switch wait, _ := time.ParseDuration(resp.Header.Get("Retry-After") + "s"); resp.StatusCode {
	case http.StatusOK:
		return io.ReadAll(resp.Body)
	case http.StatusServiceUnavailable:
		return nil, retry.After(err, wait) // no hint if the header holds none
	}
	return nil, retry.Permanent(err)
}

// Each attempt gets at most 50ms inside fn, and the whole operation a
// deadline of its own. fn tells an attempt's timeout from its two contexts,
// whatever error the callee returns (net/http, a database driver): the
// attempt's context is done and Do's is not. It puts errAttemptTimeout
// before the callee's error with %v, not %w: that error can match
// DeadlineExceeded, which the caller reads as the whole deadline, as Do's
// error matches it when Do stops for that deadline, even before it passes.
// fn reads the body before its cancel runs. The server never answers, so
// every attempt times out.
func ExampleDo_attemptTimeout() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	errAttemptTimeout := errors.New("attempt timed out")
	p := retry.Policy{Attempts: 3}
	for _, whole := range []time.Duration{time.Minute, 20 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), whole)
		_, err := retry.DoValue(ctx, p, func(ctx context.Context) ([]byte, error) {
			attemptCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel() // which ends the body's reads: fetch reads it all first
			body, err := fetch(attemptCtx, srv.URL)
			if err != nil && attemptCtx.Err() != nil && ctx.Err() == nil {
				return nil, fmt.Errorf("%w: %v", errAttemptTimeout, err)
			}
			return body, err
		})
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			fmt.Printf("whole deadline %v: the whole operation ran out of time\n", whole)
		case errors.Is(err, errAttemptTimeout):
			fmt.Printf("whole deadline %v: every attempt timed out\n", whole)
		}
	}
	// Output:
	// whole deadline 1m0s: every attempt timed out
	// whole deadline 20ms: the whole operation ran out of time
}

// DoValue returns the value of the call that succeeded.
func ExampleDoValue() {
	p := retry.Policy{Base: time.Millisecond}
	attempt := 0
	port, err := retry.DoValue(context.Background(), p, func(context.Context) (int, error) {
		if attempt++; attempt == 1 {
			return 0, errors.New("no port free yet")
		}
		return 8080, nil
	})
	fmt.Println(port, err)
	// Output:
	// 8080 <nil>
}

// A loop that never gives up, such as a reconnect loop, owns its loop and
// takes only the schedule from Policy.Delay. The waits are random, so this
// example prints what does not depend on them.
func ExamplePolicy_Delay() {
	p := retry.Policy{Base: time.Millisecond, Max: 50 * time.Millisecond}
	for failures := 0; ; failures++ {
		if failures == 4 { // stands for a connect that succeeds on its 5th try
			fmt.Println("connected after", failures, "failures")
			return
		}
		d := p.Delay(failures) // at most the ceiling, as Policy's doc says
		fmt.Println("wait", failures+1, "within its ceiling:", d <= min(p.Max, p.Base<<failures))
		time.Sleep(d)
	}
	// Output:
	// wait 1 within its ceiling: true
	// wait 2 within its ceiling: true
	// wait 3 within its ceiling: true
	// wait 4 within its ceiling: true
	// connected after 4 failures
}

// Do has no hooks: fn is the hook. fn logs a retry as it starts, with the
// error that caused it and the wait since, so the last attempt is never
// logged as a retry; after Do, the caller logs why it stopped, from what it
// has: the attempts fn counted, fn's own classification, the errors of ctx
// and fn's last error, which Do's error holds too, for the caller to
// return. Three calls stand for a dependency that answers 503 three times,
// 503 then 404, and 429 with a hint past the deadline.
func ExampleDo_observe() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "wait" {
				return slog.Attr{} // they change from run to run: a service keeps them
			}
			return a
		},
	}))
	p := retry.Policy{Attempts: 3, Base: time.Millisecond}
	for i, codes := range [][]int{{503, 503, 503}, {503, 404}, {429}} {
		log := logger.With("call", i+1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		attempts, notRetryable, last, ended := 0, false, error(nil), time.Time{}
		err := retry.Do(ctx, p, func(ctx context.Context) error {
			if attempts++; attempts > 1 {
				log.Info("retry", "attempt", attempts, "after", last, "wait", time.Since(ended))
			}
			switch code := codes[attempts-1]; code { // stands for a call to the dependency
			case 503:
				last = fmt.Errorf("HTTP %d", code)
			case 429:
				last = retry.After(fmt.Errorf("HTTP %d", code), 5*time.Second)
			default:
				notRetryable, last = true, retry.Permanent(fmt.Errorf("HTTP %d", code))
			}
			ended = time.Now()
			return last
		})
		why := "" // fn's own classification first: it can mark the last attempt too
		switch {
		case notRetryable:
			why = "not retryable"
		case attempts == p.Attempts:
			why = "attempts used up"
		case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
			why = "out of time"
		}
		if cancel(); err != nil {
			log.Error("gave up", "attempts", attempts, "why", why, "last", last)
		}
	}
	// Output:
	// level=INFO msg=retry call=1 attempt=2 after="HTTP 503"
	// level=INFO msg=retry call=1 attempt=3 after="HTTP 503"
	// level=ERROR msg="gave up" call=1 attempts=3 why="attempts used up" last="HTTP 503"
	// level=INFO msg=retry call=2 attempt=2 after="HTTP 503"
	// level=ERROR msg="gave up" call=2 attempts=2 why="not retryable" last="HTTP 404"
	// level=ERROR msg="gave up" call=3 attempts=1 why="out of time" last="HTTP 429"
}

type writeError string

func (e writeError) Error() string   { return string(e) }
func (e writeError) Retryable() bool { return e == "lock held" }

// An error can say itself whether it is worth retrying, with a method
// Retryable() bool, as writeError does, without importing this package:
// false stops Do, which returns fn's error unchanged.
func ExampleDo_retryable() {
	attempt := 0
	err := retry.Do(context.Background(), retry.Policy{}, func(context.Context) error {
		attempt++
		return fmt.Errorf("write: %w", []writeError{"lock held", "disk full"}[attempt-1])
	})
	fmt.Println("attempts:", attempt, "err:", err)
	// Output:
	// attempts: 2 err: write: disk full
}

// When ctx is canceled, Do returns an error that keeps the cause of the
// cancel and the last error fn returned.
func ExampleDo_cancel() {
	ctx, cancel := context.WithCancelCause(context.Background())
	errShutdown := errors.New("shutting down")
	errUnavailable := errors.New("HTTP 503")
	err := retry.Do(ctx, retry.Policy{}, func(context.Context) error {
		cancel(errShutdown) // as if a signal came in during the call
		return errUnavailable
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.Canceled), errors.Is(err, errShutdown))
	fmt.Println(errors.Is(err, errUnavailable))
	// Output:
	// retry: context canceled (cause: shutting down); last error: HTTP 503
	// true true
	// true
}

// When the drawn wait would reach ctx's deadline, Do returns at once rather
// than sleep into the deadline, and keeps the last error; ctx.Err() is still
// nil then. The wait after a 5s hint is at least 5s, past a deadline 1s away.
func ExampleDo_deadline() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
		return retry.After(errors.New("HTTP 429 (Retry-After 5s)"), 5*time.Second)
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.DeadlineExceeded), ctx.Err())
	// Output:
	// retry: the next wait would reach the context deadline; last error: HTTP 429 (Retry-After 5s)
	// true <nil>
}

// Retries multiply the load on a dependency that is already down, and with
// callers that keep arriving, that load can keep it down after the cause
// is gone. A retry budget, one per dependency in each process and shared
// by every call to it there, stops the retries: fn records every attempt's
// outcome in it, and when it refuses a retry after a failure, returns
// Permanent at once. bucket keeps gRPC's retry throttling (gRFC A6, after
// the SRE book's per-client retry budget), and charges a failure by what it
// cost the dependency: a refusal it answered at once without doing the work
// (a 503 or 429 from load shedding, a refused connection) costs nothing, so
// retries of refusals go through while the bucket allows retries; a timeout
// or an error after work costs a token. By design it stops paying for
// retries once more than about 9% (0.1 ÷ 1.1) of the attempts that are not
// refusals fail.
//
// A process cannot tell its first failure from an outage, so in an outage
// each of N processes spends its reserve: N × reserve retries in all. A
// dependency that does the work of callers that have left works them off
// with its spare capacity, the requests a second it can serve beyond its
// load, and is back up to N × reserve ÷ spare capacity later than with no
// retry. Size the reserve so that N × reserve is at most the spare
// capacity times the delay you accept: 1,000 processes at 80% of a
// capacity of 1,000 requests a second, accepting 5s, take a reserve of 1,
// as 1,000 × 1 ≤ 200 × 5. A dependency that skips the work of a caller
// that has left, or refuses at once when full, was back within 1.3s of no
// retry at 1,000 processes with a reserve of 4.
//
// Here the dependency fails the first two attempts of each call, 20 calls
// with refusals, then 20 with timeouts.
func ExampleDo_budget() {
	budget := &bucket{reserve: 4} // one per dependency in each process; size it as above
	p := retry.Policy{Base: time.Millisecond}
	errRefused := errors.New("503 service unavailable") // answered at once: no work done
	errTimedOut := errors.New("attempt timed out")
	for _, outage := range []error{errRefused, errTimedOut} {
		attempts, through, refused := 0, 0, 0
		for range 20 {
			n := 0
			err := retry.Do(context.Background(), p, func(ctx context.Context) error {
				var err error // stands for a call to the dependency
				if n++; n <= 2 {
					err = outage
				}
				if !budget.record(err, errors.Is(err, errRefused)) && err != nil {
					return retry.Permanent(fmt.Errorf("%w: %w", errThrottled, err))
				}
				return err
			})
			attempts += n
			switch {
			case err == nil:
				through++
			case errors.Is(err, errThrottled):
				refused++
			}
		}
		fmt.Printf("%v: %d attempts, %d of 20 calls through, %d retries refused\n",
			outage, attempts, through, refused)
	}
	// Output:
	// 503 service unavailable: 60 attempts, 20 of 20 calls through, 0 retries refused
	// attempt timed out: 25 attempts, 2 of 20 calls through, 18 retries refused
}

// A transaction that can fail to serialize is retried whole, with classify
// between it and Do; no driver is imported, and .ci/compare runs the same
// classify against a real PostgreSQL. The Policy is the README's for about
// 40 clients on one row: Base = the clients × the time one holds the row.
func ExampleDo_transaction() {
	p := retry.Policy{Attempts: 10, Base: 100 * time.Millisecond, Max: time.Second}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	runs := [][]error{
		{pgError("40001"), pgError("40P01"), nil}, // a serialization failure, a deadlock, a commit
		{pgError("23505")},                        // a unique violation
		{pgError("57014")},                        // a statement canceled, as ctx ends
	}
	for i, results := range runs {
		tries := 0
		err := retry.Do(ctx, p, func(ctx context.Context) error {
			if tries++; i == 2 { // stands for BEGIN, the statements and COMMIT
				cancel(errors.New("shutting down")) // as a signal would, mid-transaction
			}
			return classify(ctx, results[tries-1])
		})
		fmt.Println("tries:", tries, "err:", err)
	}
	// Output:
	// tries: 3 err: <nil>
	// tries: 1 err: SQLSTATE 23505
	// tries: 1 err: retry: context canceled (cause: shutting down); last error: SQLSTATE 57014
}

// classify returns a serialization failure (SQLSTATE 40001) or a deadlock
// (40P01) as it is, for Do to retry, and every error once ctx is done, for
// Do to report the stop with its cause; it marks every other error
// Permanent. It reads the code with errors.As for a method SQLState()
// string, which pgx's *pgconn.PgError and lib/pq's *pq.Error have.
func classify(ctx context.Context, err error) error {
	var pg interface{ SQLState() string }
	switch {
	case ctx.Err() != nil:
		return err
	case errors.As(err, &pg) && (pg.SQLState() == "40001" || pg.SQLState() == "40P01"):
		return err
	}
	return retry.Permanent(err) // nil for nil: a commit
}

// pgError stands in for a PostgreSQL driver's error, which says its
// SQLSTATE code with a method SQLState() string.
type pgError string

func (e pgError) Error() string    { return "SQLSTATE " + string(e) }
func (e pgError) SQLState() string { return string(e) }

// errThrottled marks an error whose retry a bucket refused.
var errThrottled = errors.New("retry throttled")

// A bucket is a retry budget after gRPC's retry throttling (gRFC A6) that
// charges a failure by what it cost the dependency: a failure that cost it
// work takes a token, a refusal it answered at once without the work takes
// none, and a success gives back a tenth of one. It holds 2·(reserve+1)
// tokens and allows retries while more than half remain, so that a full
// bucket allows reserve retries in a row; reserve 4 is gRPC's example of
// 10 tokens. It counts the tenths of a token spent, so a new bucket is
// full. It is safe for concurrent use.
type bucket struct {
	mu      sync.Mutex
	reserve int // the retries a full bucket allows in a row
	spent   int // tenths of a token, from 0 to 20·(reserve+1)
}

// record counts an attempt's err, nil for a success; refused says that the
// dependency refused the attempt at once, without doing the work. It
// reports whether a retry may follow.
func (b *bucket) record(err error, refused bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	half := 10 * (b.reserve + 1) // in tenths
	switch {
	case err == nil:
		b.spent = max(b.spent-1, 0)
	case !refused:
		b.spent = min(b.spent+10, 2*half)
	}
	return b.spent < half
}

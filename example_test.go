// SPDX-License-Identifier: MIT

package retry_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
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

// An error wrapped with Permanent stops Do at the first call, and Do returns
// the error inside the marker.
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

// A marker that fn returns itself comes off, so an enclosing Do retries its
// own operation; a marker deeper in fn's error stays, and stops it too.
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
	// calls: 3, err: bad id
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

// A server answers 503 with Retry-After: 1, then 200. The README's quick
// start reads the header in get, which retry_test.go holds too, and hands
// Do the hint with After: Do waits a second, as the hint is Max.
func ExampleDo_retryAfter() {
	var calls atomic.Int32 // the server's handlers run on goroutines of their own
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "OK")
	}))
	defer srv.Close()
	p := retry.Policy{Max: time.Second}
	start := time.Now()
	body, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (string, error) {
		return get(ctx, srv.URL)
	})
	fmt.Printf("%q %v after %d calls\n", body, err, calls.Load())
	fmt.Println("waited the hint:", time.Since(start) >= time.Second)
	// Output:
	// "OK" <nil> after 2 calls
	// waited the hint: true
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
		d := p.Delay(failures) // within [0, min(Max, Base·2ⁿ)]
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

// Do has no hooks: fn itself can count the attempts and log each failure.
func ExampleDo_observe() {
	logger := log.New(os.Stdout, "", 0)
	p := retry.Policy{Attempts: 3, Base: time.Millisecond}
	attempts := 0
	err := retry.Do(context.Background(), p, func(context.Context) error {
		attempts++
		logger.Printf("attempt %d failed: %v", attempts, context.DeadlineExceeded)
		return context.DeadlineExceeded
	})
	logger.Printf("gave up after %d attempts: %v", attempts, err)
	// Output:
	// attempt 1 failed: context deadline exceeded
	// attempt 2 failed: context deadline exceeded
	// attempt 3 failed: context deadline exceeded
	// gave up after 3 attempts: context deadline exceeded
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
// than sleep into the deadline, and keeps the last error. A 5s hint draws
// from [5s, 10s], all of it past a deadline 1s away.
func ExampleDo_deadline() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
		return retry.After(errors.New("HTTP 429 (Retry-After 5s)"), 5*time.Second)
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.DeadlineExceeded), ctx.Err())
	// Output:
	// retry: the next wait would pass the context deadline; last error: HTTP 429 (Retry-After 5s)
	// true <nil>
}

// Retries of calls to a dependency that is down multiply the load on it:
// the zero Policy turns each call into 4 attempts. A retry budget shared
// by all calls to the dependency, kept one layer up and consulted inside
// fn, lets the first calls retry and then stops retries, so that each
// further call costs the dependency one attempt. retryBudget, in
// retry_test.go, allows a retry while retries stay under a tenth of the
// calls plus 3: the per-client retry budget of the Google SRE book, close
// to gRPC's retry throttling.
func ExampleDo_budget() {
	budget := &retryBudget{}
	p := retry.Policy{Base: time.Millisecond}
	down, total := errors.New("503 service unavailable"), 0
	for call := 1; call <= 20; call++ {
		attempts := 0
		err := retry.Do(context.Background(), p, func(context.Context) error {
			if !budget.allow(attempts == 0) {
				return retry.Permanent(fmt.Errorf("retry budget spent: %w", down))
			}
			attempts++
			return down
		})
		if total += attempts; call <= 2 || call == 20 {
			fmt.Printf("call %2d, attempts %d: %v\n", call, attempts, err)
		}
	}
	fmt.Println("20 calls cost the dependency", total, "attempts; without the budget, 80")
	// Output:
	// call  1, attempts 4: 503 service unavailable
	// call  2, attempts 1: retry budget spent: 503 service unavailable
	// call 20, attempts 2: retry budget spent: 503 service unavailable
	// 20 calls cost the dependency 25 attempts; without the budget, 80
}

// A transaction that can fail to serialize is retried whole, on a
// serialization failure (SQLSTATE 40001) or a deadlock (40P01) only; every
// other error is Permanent. classify reads the code with errors.As for a
// method SQLState() string, which pgx's *pgconn.PgError and lib/pq's
// *pq.Error have, so no driver is imported; pgError, in retry_test.go,
// stands in for them here, and .ci/compare runs the same classify against
// a real PostgreSQL.
func ExampleDo_transaction() {
	classify := func(err error) error {
		var pg interface{ SQLState() string }
		if errors.As(err, &pg) && (pg.SQLState() == "40001" || pg.SQLState() == "40P01") {
			return err
		}
		return retry.Permanent(err) // nil for nil: a commit
	}
	p := retry.Policy{Attempts: 10, Base: time.Millisecond}
	runs := [][]error{{pgError("40001"), pgError("40P01"), nil}, {pgError("23505")}}
	for _, results := range runs {
		tries := 0
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			tries++ // stands for BEGIN, the transaction's statements and COMMIT
			return classify(results[tries-1])
		})
		fmt.Println("tries:", tries, "err:", err)
	}
	// Output:
	// tries: 3 err: <nil>
	// tries: 1 err: SQLSTATE 23505
}

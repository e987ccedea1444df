// SPDX-License-Identifier: MIT

package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bfc42b4f/retry"
)

// Do calls fn again after each failure, and returns nil once it succeeds.
func ExampleDo() {
	attempt := 0
	err := retry.Do(context.Background(), retry.Policy{Base: time.Millisecond}, func(ctx context.Context) error {
		attempt++
		fmt.Println("attempt", attempt)
		if attempt < 3 {
			return errors.New("connection refused")
		}
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// err: <nil>
}

var errNotFound = errors.New("not found")

// An error wrapped with Permanent stops Do at the first call, and Do returns
// the error that was wrapped, without the marker.
func ExampleDo_permanent() {
	attempt := 0
	err := retry.Do(context.Background(), retry.Policy{Base: time.Millisecond}, func(ctx context.Context) error {
		attempt++
		return retry.Permanent(fmt.Errorf("GET /users/7: 404: %w", errNotFound))
	})
	fmt.Println("attempts:", attempt)
	fmt.Println("err:", err)
	fmt.Println("not found:", errors.Is(err, errNotFound))
	// Output:
	// attempts: 1
	// err: GET /users/7: 404: not found
	// not found: true
}

// errBadID is a sentinel that callers compare with errors.Is. It is not
// marked where it is defined: findUser marks it where it returns it.
var errBadID = errors.New("bad id")

// findUser looks a user up, and marks the errors that no retry can mend.
func findUser(id int) error {
	return retry.Permanent(fmt.Errorf("user %d: %w", id, errBadID))
}

// A marker that fn returns itself comes off, so an enclosing Do retries its
// own operation; a marker deeper in fn's error stays, and stops it too.
func ExamplePermanent() {
	p := retry.Policy{Attempts: 3, Base: time.Millisecond}
	for _, wrap := range []bool{false, true} {
		calls := 0
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			return retry.Do(ctx, p, func(ctx context.Context) error {
				calls++
				if wrap {
					return fmt.Errorf("load user: %w", findUser(7))
				}
				return findUser(7)
			})
		})
		fmt.Printf("calls: %d, err: %v, bad id: %t\n", calls, err, errors.Is(err, errBadID))
	}
	// Output:
	// calls: 3, err: user 7: bad id, bad id: true
	// calls: 1, err: load user: user 7: bad id, bad id: true
}

// After hands Do a server's hint without an error type of the caller's
// own. A hint of exactly Max makes the wait Max; After of nil is nil, and a
// hint of zero or less is no hint.
func ExampleAfter() {
	p := retry.Policy{Attempts: 2, Max: 20 * time.Millisecond}
	start := time.Now()
	attempt := 0
	err := retry.Do(context.Background(), p, func(ctx context.Context) error {
		if attempt++; attempt == 1 {
			return retry.After(errors.New("HTTP 503 (Retry-After 20ms)"), 20*time.Millisecond)
		}
		return nil
	})
	fmt.Println("err:", err, "after", attempt, "attempts")
	fmt.Println("waited the hint:", time.Since(start) >= 20*time.Millisecond)
	errBusy := errors.New("busy")
	fmt.Println(retry.After(nil, time.Second), retry.After(errBusy, 0) == errBusy)
	// Output:
	// err: <nil> after 2 attempts
	// waited the hint: true
	// <nil> true
}

// The README's quick start holds get and retryAfter too, and
// .ci/quickstart.go checks that the two copies stay the same.

// get fetches url once. A status that can get better on its own is
// retried, after at least the wait the server asked for in a Retry-After
// header; any other status is Permanent.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", retry.Permanent(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err // a network error: retried
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	switch code := resp.StatusCode; code {
	case http.StatusOK:
		return string(body), nil
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		wait := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if wait <= 0 {
			return "", fmt.Errorf("HTTP %d", code)
		}
		return "", retry.After(fmt.Errorf("HTTP %d (Retry-After %v)", code, wait), wait)
	default:
		return "", retry.Permanent(fmt.Errorf("HTTP %d", code))
	}
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP-date,
// and returns 0 or less when it holds no wait. Seconds too many for a
// Duration saturate rather than wrap: a hint above Policy.Max stops Do.
func retryAfter(v string, now time.Time) time.Duration {
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		return time.Duration(min(secs, math.MaxInt64/uint64(time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// A real HTTP client against a server that answers 503, then 429 with
// Retry-After: 1, then 200. The 429's hint makes Do wait a second: at least
// the hint, and here at most Max.
func ExampleDo_http() {
	replies := []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusOK}
	var calls atomic.Int32 // the server's handlers run on goroutines of their own
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := replies[min(int(calls.Add(1)), len(replies))-1]
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(code)
		fmt.Fprint(w, http.StatusText(code))
	}))
	defer srv.Close()

	p := retry.Policy{Attempts: 5, Base: time.Millisecond, Max: time.Second}
	start := time.Now()
	body, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (string, error) {
		body, err := get(ctx, srv.URL)
		if err != nil {
			fmt.Println("failed:", err)
		}
		return body, err
	})
	fmt.Printf("%q %v after %d calls\n", body, err, calls.Load())
	fmt.Println("honoured Retry-After:", time.Since(start) >= time.Second)
	// Output:
	// failed: HTTP 503
	// failed: HTTP 429 (Retry-After 1s)
	// "OK" <nil> after 3 calls
	// honoured Retry-After: true
}

// DoValue returns the value of the call that succeeded.
func ExampleDoValue() {
	attempt := 0
	port, err := retry.DoValue(context.Background(), retry.Policy{Base: time.Millisecond}, func(ctx context.Context) (int, error) {
		attempt++
		if attempt == 1 {
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
	connect := func(n int) error {
		if n < 4 {
			return errors.New("connection refused")
		}
		return nil
	}
	for failures := 0; ; failures++ {
		if err := connect(failures); err == nil {
			fmt.Println("connected after", failures, "failures")
			break
		}
		d := p.Delay(failures) // within [0, min(Max, Base·2ⁿ)]
		fmt.Printf("wait %d within its ceiling: %t\n", failures+1, d <= min(p.Max, p.Base<<failures))
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
	attempts := 0
	err := retry.Do(context.Background(), retry.Policy{Attempts: 3, Base: time.Millisecond}, func(ctx context.Context) error {
		attempts++
		err := errors.New("timeout")
		logger.Printf("attempt %d failed: %v", attempts, err)
		return err
	})
	logger.Printf("gave up after %d attempts: %v", attempts, err)
	// Output:
	// attempt 1 failed: timeout
	// attempt 2 failed: timeout
	// attempt 3 failed: timeout
	// gave up after 3 attempts: timeout
}

// tempError is an error that says itself whether it is worth retrying.
type tempError struct {
	msg       string
	temporary bool
}

func (e *tempError) Error() string   { return e.msg }
func (e *tempError) Retryable() bool { return e.temporary }

// An error can classify itself with a Retryable method, without importing
// this package; false stops Do, which returns the error unchanged.
func ExampleDo_retryable() {
	replies := []error{
		&tempError{"lock held by another writer", true},
		&tempError{"disk full", false},
	}
	attempt := 0
	err := retry.Do(context.Background(), retry.Policy{Base: time.Millisecond}, func(ctx context.Context) error {
		attempt++
		return fmt.Errorf("write: %w", replies[attempt-1])
	})
	fmt.Println("attempts:", attempt)
	fmt.Println("err:", err)
	// Output:
	// attempts: 2
	// err: write: disk full
}

// When ctx is canceled, Do returns an error that keeps the cause of the
// cancel and the last error fn returned.
func ExampleDo_cancel() {
	ctx, cancel := context.WithCancelCause(context.Background())
	errShutdown := errors.New("shutting down")
	errUnavailable := errors.New("HTTP 503")
	err := retry.Do(ctx, retry.Policy{Base: time.Millisecond}, func(ctx context.Context) error {
		cancel(errShutdown) // as if a signal came in during the call
		return errUnavailable
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.Canceled), errors.Is(err, errShutdown), errors.Is(err, errUnavailable))
	// Output:
	// retry: context canceled (cause: shutting down); last error: HTTP 503
	// true true true
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

// A retryBudget allows a retry only while retries stay under a tenth of the
// calls made, plus a floor of 3 so that a client that has just started can
// still retry; it is shared by all calls to one dependency. It is the
// per-client retry budget of the Google SRE book, and close to gRPC's retry
// throttling. A real one counts over a sliding window, say the last minute,
// so that an old burst of calls does not fund retries forever.
type retryBudget struct {
	mu             sync.Mutex
	calls, retries int
}

// call records a first attempt.
func (b *retryBudget) call() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
}

// retry reports whether a retry fits in the budget, and spends it if so.
func (b *retryBudget) retry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.retries >= 3+b.calls/10 {
		return false
	}
	b.retries++
	return true
}

// errBudget is what a call returns when the budget refuses a retry.
var errBudget = errors.New("retry budget spent")

// callWithBudget calls dep with retries, consulting budget inside fn before
// every attempt but the first, and returns how often it called dep. A
// refusal stops Do with the last error.
func callWithBudget(ctx context.Context, budget *retryBudget, dep func(context.Context) error) (attempts int, err error) {
	var last error
	err = retry.Do(ctx, retry.Policy{Base: time.Millisecond}, func(ctx context.Context) error {
		if attempts == 0 {
			budget.call()
		} else if !budget.retry() {
			return retry.Permanent(fmt.Errorf("%w: %w", errBudget, last))
		}
		attempts++
		last = dep(ctx)
		return last
	})
	return attempts, err
}

// Retries of calls to a dependency that is down multiply the load on it: the
// zero Policy turns each call into 4 attempts. A budget shared by all calls
// to the dependency, kept one layer up and consulted inside fn, lets the
// first calls retry and then stops retries, so that every further call
// costs the dependency one attempt, not four.
func ExampleDo_budget() {
	down := func(context.Context) error { return errors.New("503 service unavailable") }
	budget := &retryBudget{}
	total := 0
	for call := 1; call <= 20; call++ {
		attempts, err := callWithBudget(context.Background(), budget, down)
		total += attempts
		if call <= 3 || call == 10 || call == 20 {
			fmt.Printf("call %2d, attempts %d: %v\n", call, attempts, err)
		}
	}
	fmt.Printf("20 calls cost the dependency %d attempts; without the budget, %d\n", total, 20*4)
	// Output:
	// call  1, attempts 4: 503 service unavailable
	// call  2, attempts 1: retry budget spent: 503 service unavailable
	// call  3, attempts 1: retry budget spent: 503 service unavailable
	// call 10, attempts 2: retry budget spent: 503 service unavailable
	// call 20, attempts 2: retry budget spent: 503 service unavailable
	// 20 calls cost the dependency 25 attempts; without the budget, 80
}

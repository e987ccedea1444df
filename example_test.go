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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bfc42b4f/retry"
)

// Do calls fn again after each failure, and returns nil once it succeeds.
func ExampleDo() {
	attempt := 0
	err := retry.Do(context.Background(), retry.Policy{}, func(context.Context) error {
		attempt++
		if attempt < 3 {
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

// An error wrapped with Permanent stops Do at the first call, and errors.Is
// still finds errNoUser in Do's error.
func ExampleDo_permanent() {
	errNoUser := errors.New("not found")
	attempts := 0
	err := retry.Do(context.Background(), retry.Policy{}, func(context.Context) error {
		attempts++
		return retry.Permanent(fmt.Errorf("GET /users/7: 404: %w", errNoUser))
	})
	fmt.Println("err:", err, "after", attempts, "attempt")
	fmt.Println("not found:", errors.Is(err, errNoUser))
	// Output:
	// err: GET /users/7: 404: not found after 1 attempt
	// not found: true
}

// Do returns the marker in its error, whether fn returned it bare or
// wrapped, so an outer Do stops at once too.
func ExamplePermanent() {
	p := retry.Policy{Attempts: 3, BaseDelay: time.Millisecond}
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

// After adds a server's hint to an error. Do waits at least the hint, so
// its second attempt succeeds.
func ExampleAfter() {
	// Without the hint, Do would wait a millisecond at most.
	p := retry.Policy{BaseDelay: time.Millisecond}
	var up time.Time // the dependency is down until then
	attempts := 0
	err := retry.Do(context.Background(), p, func(context.Context) error {
		attempts++
		if attempts == 1 {
			up = time.Now().Add(20 * time.Millisecond)
		}
		if wait := time.Until(up); wait > 0 {
			return retry.After(errors.New("HTTP 503"), wait)
		}
		return nil
	})
	fmt.Println("err:", err, "after", attempts, "attempts")
	// Output:
	// err: <nil> after 2 attempts
}

// A server answers 503 with Retry-After: 1 during its first second. fetch
// hands Do the hint, so Do's second call gets the body.
func ExampleDo_retryAfter() {
	var calls atomic.Int32 // the server's handlers run on goroutines of their own
	start := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if time.Since(start) < time.Second {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "OK")
	}))
	defer srv.Close()
	ctx := context.Background()
	body, err := retry.DoValue(ctx, retry.Policy{}, func(ctx context.Context) ([]byte, error) {
		return fetch(ctx, srv.URL)
	})
	fmt.Printf("%s %v after %d calls\n", body, err, calls.Load())
	// Output:
	// OK <nil> after 2 calls
}

// fetch GETs url and returns a 200's body. It returns an error marked
// Permanent for a status that cannot get better on its own.
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
	body, err := io.ReadAll(resp.Body) // read whole, so that the connection is reused
	if err != nil {
		return nil, err
	}
	err = fmt.Errorf("HTTP %d", resp.StatusCode)
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return nil, retry.After(err, retryAfter(resp.Header.Get("Retry-After"), time.Now()))
	}
	return nil, retry.Permanent(err)
}

// retryAfter turns a Retry-After value, seconds or an HTTP-date, into a
// wait; a wait of 0 or less means none.
func retryAfter(v string, now time.Time) time.Duration {
	// If the digits v starts with exceed a uint32, ParseUint returns an error
	// but also secs = 1<<32-1, 136 years, whatever follows. The "|| secs > 0"
	// keeps that wait, above MaxDelay, so Do stops. Other errors leave secs 0.
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil || secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// Each attempt gets 50ms at most, and the whole call a deadline. The server never
// answers; fetchWithin tells an attempt's timeout from the whole call's deadline.
func ExampleDo_attemptTimeout() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()
	p := retry.Policy{Attempts: 3}
	for _, whole := range []time.Duration{time.Minute, 20 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), whole)
		_, err := retry.DoValue(ctx, p, func(ctx context.Context) ([]byte, error) {
			return fetchWithin(ctx, srv.URL, 50*time.Millisecond)
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

var errAttemptTimeout = errors.New("attempt timed out")

// fetchWithin calls fetch with a timeout for the attempt. If that timeout
// ends the attempt, fetchWithin returns errAttemptTimeout with fetch's error
// in %v, not %w, so that only the whole call's deadline matches
// context.DeadlineExceeded.
func fetchWithin(ctx context.Context, url string, timeout time.Duration) ([]byte, error) {
	attemptCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel() // safe: fetch returns bytes, not an open body
	body, err := fetch(attemptCtx, url)
	if err != nil && attemptCtx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %v", errAttemptTimeout, err)
	}
	return body, err
}

// DoValue returns the value of the call that succeeded.
func ExampleDoValue() {
	p := retry.Policy{BaseDelay: time.Millisecond}
	attempt := 0
	port, err := retry.DoValue(context.Background(), p, func(context.Context) (int, error) {
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

// A job queue can store a job's failed attempts with the job and, after a
// failure, set its next run to now plus Delay. Do suits a caller that waits
// for the result.
func ExamplePolicy_Delay() {
	p := retry.Policy{BaseDelay: time.Second, MaxDelay: time.Minute}
	const maxFailures = 10
	type job struct {
		failures int       // failed attempts, stored with the job
		runAt    time.Time // when a worker may take the job again
	}
	j := job{failures: 2}         // the job as a worker takes it from the queue
	err := errors.New("HTTP 503") // stands for running the job once more
	now := time.Now()
	j.failures++
	if j.failures >= maxFailures || errors.Is(err, retry.ErrPermanent) {
		fmt.Println("gave up:", err) // and the worker sets the job aside
		return
	}
	wait := p.Delay(j.failures) // from 0 to BaseDelay<<2, 4s, by Policy's formula
	j.runAt = now.Add(wait)     // and the worker stores j and takes another job
	fmt.Println("attempt", j.failures, "failed:", err)
	fmt.Println("next run within 4s:", j.runAt.Sub(now) <= 4*time.Second)
	// Output:
	// attempt 3 failed: HTTP 503
	// next run within 4s: true
}

// Do has no hooks: fn is the hook. observe logs each retry and Do's error.
func ExampleDo_observe() {
	// Millisecond waits keep the example quick; a service gives observe the
	// Policy it would give Do.
	p := retry.Policy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey:
				return slog.Attr{} // the time varies from run to run; a service logs it
			case "wait":
				// The measured wait varies from run to run; a service logs it.
				return slog.String("wait", "(varies)")
			}
			return a
		},
	}))
	errUnavailable, errTooMany := errors.New("HTTP 503"), errors.New("HTTP 429")
	for _, c := range []struct {
		name string
		errs []error // what fn returns, attempt by attempt
	}{
		{"503s", []error{errUnavailable, errUnavailable, errUnavailable}},
		{"404", []error{errUnavailable, retry.Permanent(errors.New("HTTP 404"))}},
		{"hints", []error{retry.After(errTooMany, time.Millisecond),
			retry.After(errTooMany, time.Minute)}}, // above MaxDelay
		{"cancel", []error{errUnavailable, errUnavailable}}, // canceled during attempt 2
	} {
		ctx, cancel := context.WithCancel(context.Background())
		attempt := 0
		observe(ctx, log.With("case", c.name), p, func(context.Context) error {
			attempt++
			if c.name == "cancel" && attempt == 2 {
				cancel() // as a shutdown would
			}
			return c.errs[attempt-1] // stands for a call to the dependency
		})
		cancel()
	}
	// Output:
	// level=INFO msg=retry case=503s attempt=2 wait=(varies) after="HTTP 503"
	// level=INFO msg=retry case=503s attempt=3 wait=(varies) after="HTTP 503"
	// level=ERROR msg="gave up" case=503s attempts=3 err="HTTP 503"
	// level=INFO msg=retry case=404 attempt=2 wait=(varies) after="HTTP 503"
	// level=ERROR msg="gave up" case=404 attempts=2 err="HTTP 404"
	// level=INFO msg=retry case=hints attempt=2 wait=(varies) hint=1ms max=2ms after="HTTP 429"
	// level=ERROR msg="gave up" case=hints attempts=2 hint=1m0s max=2ms err="HTTP 429"
	// level=INFO msg=retry case=cancel attempt=2 wait=(varies) after="HTTP 503"
	// level=ERROR msg="gave up" case=cancel attempts=2 err="retry: context canceled; last error: HTTP 503"
}

// observe calls Do with fn. Before each retry, observe logs the wait and the
// error that caused it; if Do fails, it logs Do's error. For an error with a
// hint, it logs the hint and MaxDelay too.
func observe(ctx context.Context, log *slog.Logger, p retry.Policy,
	fn func(context.Context) error) error {
	attempts := 0
	var last error    // fn's last error
	var end time.Time // when fn last returned
	limit := p.MaxDelay
	if limit <= 0 {
		limit = 10 * time.Second // as Policy's doc says
	}
	hinted := func() slog.Attr {
		var h interface{ RetryAfter() time.Duration }
		if !errors.As(last, &h) {
			return slog.Attr{} // which a handler leaves out
		}
		return slog.Group("", "hint", h.RetryAfter(), "max", limit)
	}
	err := retry.Do(ctx, p, func(ctx context.Context) error {
		attempts++
		if attempts > 1 {
			log.Info("retry", "attempt", attempts, "wait", time.Since(end), hinted(), "after", last)
		}
		last = fn(ctx)
		end = time.Now()
		return last
	})
	if err != nil {
		log.Error("gave up", "attempts", attempts, hinted(), "err", err)
	}
	return err
}

type writeError string

func (e writeError) Error() string   { return string(e) }
func (e writeError) Retryable() bool { return e == "lock held" }

// An error type can say, with a Retryable() bool method, whether it is
// worth retrying, without importing this package; false stops Do.
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

// Once less than half of an unhinted wait's range fits before the
// deadline, the next call is the last. If no wait fits, as a hint of 5s here, Do gives up at
// once, while ctx.Err() is still nil.
func ExampleDo_deadline() {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	p := retry.Policy{Attempts: 10, BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second}
	calls := 0
	err := retry.Do(ctx, p, func(ctx context.Context) error {
		calls++
		time.Sleep(50 * time.Millisecond) // stands for a call that fails
		return errors.New("HTTP 503")
	})
	fmt.Println(calls, errors.Is(err, context.DeadlineExceeded))

	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
		return retry.After(errors.New("HTTP 429 (Retry-After 5s)"), 5*time.Second)
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, context.DeadlineExceeded), ctx.Err())
	// Output:
	// 2 true
	// retry: gave up before the deadline; last error: HTTP 429 (Retry-After 5s)
	// true <nil>
}

// A retry budget, a bucket per dependency in each process, stops retries
// while many attempts fail; a 404 marked Permanent costs nothing.
func ExampleDo_budget() {
	// A bucket with a reserve of 4 holds 10 tokens. A failure takes one, a
	// success gives back a tenth, and a retry may follow only while over
	// half, 5, remain.
	budget := &bucket{reserve: 4} // one bucket per dependency in each process
	p := retry.Policy{BaseDelay: time.Millisecond}
	// Each call fails its first two attempts and succeeds at the third, if
	// Do gets that far. The failure is a 404 in calls 1 to 20, marked
	// Permanent so that Do makes one attempt, which takes no token; a
	// refused connection, which takes none either, in calls 21 to 40; and a
	// 503 in calls 41 to 60. Calls 41 and 42 each take 2 tokens and give
	// back 0.1, so 3.8 are gone; call 43's two failures leave 10 - 3.8 - 2 =
	// 4.2, so the bucket refuses call 43's third attempt and every later
	// retry.
	for _, failure := range []error{
		retry.Permanent(errNotFound),
		fmt.Errorf("connect: %w", syscall.ECONNREFUSED),
		errServiceUnavailable,
	} {
		attempts, through, refused := 0, 0, 0
		for range 20 {
			n := 0
			err := retry.Do(context.Background(), p, func(ctx context.Context) error {
				n++
				var err error // stands for a call to the dependency
				if n <= 2 {
					err = failure
				}
				return throttle(budget, err)
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
			failure, attempts, through, refused)
	}
	// Output:
	// 404 not found: 20 attempts, 0 of 20 calls through, 0 retries refused
	// connect: connection refused: 60 attempts, 20 of 20 calls through, 0 retries refused
	// 503 service unavailable: 25 attempts, 2 of 20 calls through, 18 retries refused
}

// Do retries a transaction whole, each attempt with its own timeout. A
// COMMIT that was sent and failed other than with SQLSTATE 40001 or 40P01
// is not retried, since it may have taken effect.
func ExampleDo_transaction() {
	// The Policy suits about 40 clients on one row.
	p := retry.Policy{Attempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	// An attempt's timeout covers the wait for a pooled connection, the
	// statements and COMMIT. Make it a few times the longest time the three
	// take together under load, since a timeout that fires during COMMIT
	// leaves the outcome unknown.
	const timeout = 5 * time.Second
	// Each stubTx stands for an attempt's transaction and how it fails.
	for _, txs := range [][]stubTx{
		// A deadlock, the connection lost, a COMMIT that fails to serialize,
		// then a commit.
		{{work: pgError("40P01")}, {work: io.ErrUnexpectedEOF}, {commit: pgError("40001")}, {}},
		{{work: pgError("23505")}}, // a unique violation
		// A row that must exist is missing: an error of the work's own, which
		// it marks Permanent, as a retry would find the row missing again.
		{{work: retry.Permanent(errors.New("account 7: no rows in result set"))}},
		{{commit: io.ErrUnexpectedEOF}}, // the connection lost during COMMIT
	} {
		attempts := 0
		begin := func(context.Context) (stubTx, error) { // stands for pgxpool.Pool's Begin
			attempts++
			return txs[attempts-1], nil
		}
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			return runTx(ctx, timeout, begin, func(ctx context.Context, tx stubTx) error {
				return tx.work // stands for the transaction's statements
			})
		})
		switch {
		case errors.Is(err, errUnknownOutcome):
			fmt.Println("check whether it took effect:", err)
		case err != nil:
			fmt.Println("failed:", err)
		default:
			fmt.Println("committed on attempt", attempts)
		}
	}
	// Output:
	// committed on attempt 4
	// failed: SQLSTATE 23505
	// failed: account 7: no rows in result set
	// check whether it took effect: transaction outcome unknown: unexpected EOF
}

// A txn is a transaction, such as a pgx.Tx.
type txn interface {
	Commit(context.Context) error
	Rollback(context.Context) error
}

// runTx begins a transaction, runs work in it and commits it, within
// timeout. Errors before COMMIT go to classify; work returns
// retry.Permanent(err) for an error of its own, such as pgx.ErrNoRows where
// a row must exist. If a sent COMMIT fails other than with a conflict,
// runTx returns a Permanent error wrapping errUnknownOutcome and the
// COMMIT's error.
func runTx[T txn](ctx context.Context, timeout time.Duration,
	begin func(context.Context) (T, error), work func(context.Context, T) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tx, err := begin(ctx)
	if err != nil {
		return classify(ctx, err)
	}
	defer tx.Rollback(ctx) // which does nothing after a commit
	if err := work(ctx, tx); err != nil {
		return classify(ctx, err)
	}
	err = tx.Commit(ctx)
	// A conflict rolled the transaction back, and a COMMIT never sent
	// committed nothing: pgconn's errors have a SafeToRetry method, which
	// returns true if nothing was sent.
	var unsent interface{ SafeToRetry() bool }
	if err == nil || conflict(err) || errors.As(err, &unsent) && unsent.SafeToRetry() {
		return err
	}
	return retry.Permanent(fmt.Errorf("%w: %w", errUnknownOutcome, err))
}

// errUnknownOutcome marks a COMMIT that may have taken effect: check, or
// make the work idempotent.
var errUnknownOutcome = errors.New("transaction outcome unknown")

// classify returns err for Do to retry, unless the attempt's ctx is live and
// the server raised err with an SQLSTATE that a retry cannot change; then it
// marks err Permanent.
func classify(ctx context.Context, err error) error {
	var pg interface{ SQLState() string } // pgx's and lib/pq's errors have one
	if ctx.Err() != nil || !errors.As(err, &pg) || conflict(err) {
		return err // nothing was committed, and a lost connection has no SQLSTATE
	}
	// Class 08 and 57P01 to 57P03 come from a lost connection, a server
	// shutting down, crashing or starting up; 57P05 and 25P03 from a session
	// idle too long; 53300 from too many connections.
	switch code := pg.SQLState(); {
	case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03",
		code == "57P05", code == "25P03", code == "53300":
		return err
	}
	return retry.Permanent(err)
}

// conflict reports whether err's SQLSTATE is 40001, a serialization
// failure, or 40P01, a deadlock.
func conflict(err error) bool {
	var pg interface{ SQLState() string }
	return errors.As(err, &pg) && (pg.SQLState() == "40001" || pg.SQLState() == "40P01")
}

type stubTx struct{ work, commit error }

func (t stubTx) Commit(context.Context) error   { return t.commit }
func (t stubTx) Rollback(context.Context) error { return nil }

type pgError string

func (e pgError) Error() string    { return "SQLSTATE " + string(e) }
func (e pgError) SQLState() string { return string(e) }

var errServiceUnavailable = errors.New("503 service unavailable")

var errNotFound = errors.New("404 not found")

// errThrottled marks a refused retry. Its Retryable returns false, which
// stops Do, but it is not marked Permanent: a later call may succeed.
var errThrottled = refusal("retry throttled")

type refusal string

func (e refusal) Error() string   { return string(e) }
func (e refusal) Retryable() bool { return false }

// throttle records err in b unless it is marked Permanent or its first
// Retryable returns false. If b refuses the retry, throttle wraps err with
// errThrottled. A refused connection, reaching no server, takes no token;
// every other failure takes one, as it may have cost work.
func throttle(b *bucket, err error) error {
	var r interface{ Retryable() bool }
	if errors.Is(err, retry.ErrPermanent) || errors.As(err, &r) && !r.Retryable() {
		return err // it tells nothing of the dependency's health
	}
	free := errors.Is(err, syscall.ECONNREFUSED)
	if !b.record(err, free) && err != nil {
		return fmt.Errorf("%w: %w", errThrottled, err)
	}
	return err
}

// A bucket is a retry budget modeled on gRPC's retry throttling: a failure
// takes a token, a success returns a tenth of one, and a retry may follow
// while over half its tokens remain.
type bucket struct {
	mu sync.Mutex // a bucket is safe for concurrent use
	// reserve is how many retries in a row a full bucket allows: a bucket
	// holds 2*(reserve+1) tokens. With reserve 4, it holds 10; 4 failures in
	// a row leave 6, and a retry follows each; a fifth leaves 5, and no retry
	// follows it.
	reserve int
	taken   int // tenths of a token taken; 0 means full, as when new
}

// record records err (nil for a success) and reports whether a retry may
// follow.
func (b *bucket) record(err error, free bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	half := 10 * (b.reserve + 1) // half the tokens, in tenths
	switch {
	case err == nil:
		b.taken = max(b.taken-1, 0)
	case !free:
		b.taken = min(b.taken+10, 2*half)
	}
	return b.taken < half
}

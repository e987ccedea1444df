// SPDX-License-Identifier: MIT

package compare

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bfc42b4f/retry"
)

// The tests in this file try what the examples of ../../example_test.go
// and the README tell users to do, with the callees users have. The
// examples' helpers they call stand here, in tx_test.go, or in
// overload_test.go beside their other callers, to the letter, as
// ../quickstart.go checks.

// observe, fetch, retryAfter, errAttemptTimeout and fetchWithin are the
// examples', to the letter, as .ci/quickstart.go checks; retryAfter is the
// quick start's too.

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

// TestObserveLogsWhatDoReturns runs ExampleDo_observe's observe where a
// reason read from the attempts or from ctx goes wrong: four attempts, a
// hint below MaxDelay, a hint above MaxDelay, a cancel, a deadline too near for the
// hint, and one that passes during an attempt. observe must log each retry
// with the wait Do took before it (the waits and fn's calls add up to the
// time Do took) and the error before it, then the attempts fn saw and the
// error Do returned, which must match what Do's doc says it matches; and a
// hint beside MaxDelay wherever the error before carries one.
func TestObserveLogsWhatDoReturns(t *testing.T) {
	err503, err429 := errors.New("HTTP 503"), errors.New("HTTP 429")
	errShutdown := errors.New("shutting down")
	for _, tt := range []struct {
		name    string
		timeout time.Duration // of ctx; 0 for none
		fn      func(attempt int, cancel context.CancelCauseFunc) error
		log     []string // the lines observe logs, with {err} for Do's error
		is      []error  // what Do's error matches
	}{
		{"four attempts", 0, func(int, context.CancelCauseFunc) error {
			return err503
		}, []string{
			`level=INFO msg=retry attempt=2 wait=W after="HTTP 503"`,
			`level=INFO msg=retry attempt=3 wait=W after="HTTP 503"`,
			`level=INFO msg=retry attempt=4 wait=W after="HTTP 503"`,
			`level=ERROR msg="gave up" attempts=4 err={err}`,
		}, []error{err503}},
		{"a hint below MaxDelay", 0, func(attempt int, _ context.CancelCauseFunc) error {
			if attempt == 1 {
				return retry.After(err429, 2*time.Second)
			}
			return nil
		}, []string{
			`level=INFO msg=retry attempt=2 wait=W hint=2s max=10s after="HTTP 429"`,
		}, nil},
		{"a hint above MaxDelay", 0, func(int, context.CancelCauseFunc) error {
			return retry.After(err429, time.Minute)
		}, []string{
			`level=ERROR msg="gave up" attempts=1 hint=1m0s max=10s err={err}`,
		}, []error{err429}},
		{"a cancel", 0, func(attempt int, cancel context.CancelCauseFunc) error {
			if attempt == 2 {
				cancel(errShutdown)
			}
			return err503
		}, []string{
			`level=INFO msg=retry attempt=2 wait=W after="HTTP 503"`,
			`level=ERROR msg="gave up" attempts=2 err={err}`,
		}, []error{err503, context.Canceled, errShutdown}},
		{"a deadline too near for the hint", time.Second, func(int, context.CancelCauseFunc) error {
			return retry.After(err429, 5*time.Second)
		}, []string{
			`level=ERROR msg="gave up" attempts=1 hint=5s max=10s err={err}`,
		}, []error{err429, context.DeadlineExceeded}},
		{"a deadline during an attempt", time.Second, func(int, context.CancelCauseFunc) error {
			time.Sleep(2 * time.Second)
			return err503
		}, []string{
			`level=ERROR msg="gave up" attempts=1 err={err}`,
		}, []error{err503, context.DeadlineExceeded}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var out bytes.Buffer
				var waits time.Duration // the waits observe logged, added up
				log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
					ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
						switch a.Key {
						case slog.TimeKey:
							return slog.Attr{}
						case "wait":
							waits += a.Value.Duration()
							return slog.String("wait", "W")
						}
						return a
					},
				}))
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				if tt.timeout > 0 {
					var stop context.CancelFunc
					ctx, stop = context.WithTimeout(ctx, tt.timeout)
					defer stop()
				}
				start, attempt := time.Now(), 0
				var calls time.Duration // the time fn's calls took
				err := observe(ctx, log, retry.Policy{}, func(context.Context) error {
					attempt++
					defer func(start time.Time) { calls += time.Since(start) }(time.Now())
					return tt.fn(attempt, cancel)
				})
				for _, target := range tt.is {
					if !errors.Is(err, target) {
						t.Errorf("observe() = %v, want an error that matches %v", err, target)
					}
				}
				if tt.is == nil && err != nil {
					t.Errorf("observe() = %v, want nil", err)
				}
				want := ""
				for _, l := range tt.log {
					want += strings.Replace(l, "{err}", fmt.Sprintf("%q", fmt.Sprint(err)), 1) + "\n"
				}
				if got := out.String(); got != want {
					t.Errorf("observe logged\n%s\nwant\n%s", got, want)
				}
				if took := time.Since(start); waits+calls != took {
					t.Errorf("observe logged waits of %v in all, and fn's calls took %v; want them to add up to the %v Do took", waits, calls, took)
				}
			})
		})
	}
}

// TestBudgetRecordsNothingDoWouldNotRetry runs ExampleDo_budget's
// throttle with no outage: 15% of 1,000 calls get a 404, which Do does not
// retry, and 1% of the attempts fail after the work with a 500, which Do
// retries. However the 404 says it is not worth retrying (marked as the
// quick start or the example marks it, a Retryable that reports false, a
// marker under an error whose Retryable reports true), the bucket must
// refuse no retry.
// Fed every attempt, 404s included, it refuses some: the setup tells the
// two apart.
func TestBudgetRecordsNothingDoWouldNotRetry(t *testing.T) {
	everyAttempt := func(b *bucket, err error) error {
		if !b.record(err, false) && err != nil && !errors.Is(err, retry.ErrPermanent) {
			return fmt.Errorf("%w: %w", errThrottled, err)
		}
		return err
	}
	for _, tt := range []struct {
		name     string
		notFound error
		feed     func(*bucket, error) error
		refused  bool // whether the bucket refuses some retries
	}{
		{"marked Permanent", retry.Permanent(errors.New("HTTP 404")), throttle, false},
		{"marked Permanent, as the example marks it", retry.Permanent(errNotFound), throttle, false},
		{"Retryable false", notRetryable("HTTP 404"), throttle, false},
		{"a marker under a Retryable true", retryable{retry.Permanent(errors.New("HTTP 404"))}, throttle, false},
		{"every attempt recorded", retry.Permanent(errors.New("HTTP 404")), everyAttempt, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := mrand.New(mrand.NewPCG(1, 2))
				budget := &bucket{reserve: 4}
				retries, refused := 0, 0
				for range 1_000 {
					missing, n := r.Float64() < 0.15, 0
					err := retry.Do(context.Background(), retry.Policy{BaseDelay: time.Millisecond}, func(ctx context.Context) error {
						n++
						var err error // stands for a call to the dependency
						if missing {
							err = tt.notFound
						} else if r.Float64() < 0.01 {
							err = errServer
						}
						return tt.feed(budget, err)
					})
					retries += n - 1
					if errors.Is(err, errThrottled) {
						refused++
					}
				}
				t.Logf("%d retries made, %d refused", retries, refused)
				if retries == 0 || (refused > 0) != tt.refused {
					t.Errorf("the bucket refused %d retries, %d made; want some refused: %t", refused, retries, tt.refused)
				}
			})
		})
	}
}

type notRetryable string

func (e notRetryable) Error() string   { return string(e) }
func (e notRetryable) Retryable() bool { return false }

type retryable struct{ error }

func (e retryable) Unwrap() error   { return e.error }
func (e retryable) Retryable() bool { return true }

// TestBudgetStopsAnOutageOf503s runs ExampleDo_budget's throttle in an
// outage where every attempt fails with a 503, ten calls at a time in one
// process, with the zero Policy. From the first refused retry on, 100 calls
// must make at most 110 attempts; with no bucket, they make 400.
func TestBudgetStopsAnOutageOf503s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget := &bucket{reserve: 4}
		var mu sync.Mutex
		calls, refusedYet, counted, attempts := 0, false, 0, 0
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for {
					mu.Lock()
					if counted == 100 || calls == 1_000 {
						mu.Unlock()
						return
					}
					calls++
					after := refusedYet
					if after {
						counted++
					}
					mu.Unlock()
					n := 0
					err := retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
						n++
						return throttle(budget, errServiceUnavailable)
					})
					mu.Lock()
					if after {
						attempts += n
					}
					if errors.Is(err, errThrottled) {
						refusedYet = true
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		t.Logf("%d calls in all; from the first refused retry on, %d calls made %d attempts", calls, counted, attempts)
		if counted != 100 || attempts > 110 {
			t.Errorf("from the first refused retry on, %d calls made %d attempts, want 100 calls and at most 110", counted, attempts)
		}
	})
}

// TestBudgetKeepsRefusedJobs runs ExamplePolicy_Delay's job queue, which
// sets a job aside for good when its error matches ErrPermanent, with
// ExampleDo_budget's throttle in the Do of each run: 20 jobs, one worker,
// and a dependency that answers 503 for its first 2s. The bucket refuses
// retries, and every job must still be kept for its next run and done once
// the outage ends. A job is set aside only if its first 10 runs all fall
// in the outage: a chance below 1e-7 a run, as Delay's draws after failures
// 3 to 9 would have to fall within 2s. A refusal marked Permanent sets jobs
// aside: the setup tells the two apart.
func TestBudgetKeepsRefusedJobs(t *testing.T) {
	permanent := func(b *bucket, err error) error {
		if err = throttle(b, err); errors.Is(err, errThrottled) {
			return retry.Permanent(err)
		}
		return err
	}
	for _, tt := range []struct {
		name  string
		feed  func(*bucket, error) error
		aside bool // whether jobs are set aside
	}{
		{"a refusal as throttle returns it", throttle, false},
		{"a refusal marked Permanent", permanent, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := retry.Policy{BaseDelay: time.Second, MaxDelay: time.Minute} // the example's
				const maxFailures = 10
				type job struct {
					failures int
					runAt    time.Time
				}
				up := time.Now().Add(2 * time.Second) // when the outage ends
				budget := &bucket{reserve: 4}
				queue := make([]job, 20) // every job due now
				done, refused, aside := 0, 0, 0
				for len(queue) > 0 {
					slices.SortStableFunc(queue, func(a, b job) int { return a.runAt.Compare(b.runAt) })
					j := queue[0]
					queue = queue[1:]
					time.Sleep(time.Until(j.runAt))
					err := retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
						var err error // stands for a call to the dependency
						if time.Now().Before(up) {
							err = errServiceUnavailable
						}
						return tt.feed(budget, err)
					})
					if err == nil {
						done++
						continue
					}
					if errors.Is(err, errThrottled) {
						refused++
					}
					now := time.Now()
					j.failures++
					if j.failures >= maxFailures || errors.Is(err, retry.ErrPermanent) {
						aside++ // set aside for good
						continue
					}
					j.runAt = now.Add(p.Delay(j.failures))
					queue = append(queue, j)
				}
				t.Logf("%d jobs done, %d set aside; %d runs refused a retry", done, aside, refused)
				if refused == 0 || (aside > 0) != tt.aside {
					t.Errorf("%d runs refused a retry, %d jobs set aside; want some refused, some set aside: %t",
						refused, aside, tt.aside)
				}
			})
		})
	}
}

// TestFetchRetriesTransientStatuses runs ExampleDo_retryAfter's fetch
// through Do, with BaseDelay 1ms, against a server on loopback that fails the
// first request and answers the second with 200. Do must retry 408, 429,
// 500, 502, 503 and 504, the statuses the quick start's get retries, and
// stop at once at the others with an error that matches ErrPermanent. Told
// Retry-After, in seconds or as an HTTP-date, Do must make the second request
// no sooner than the header asks; without the hint it would wait 1ms at most.
func TestFetchRetriesTransientStatuses(t *testing.T) {
	retried := map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true}
	for _, code := range []int{400, 401, 403, 404, 408, 409, 429, 500, 501, 502, 503, 504, 505} {
		name := fmt.Sprintf("a %d is retried", code)
		if !retried[code] {
			name = fmt.Sprintf("a %d is not retried", code)
		}
		t.Run(name, func(t *testing.T) {
			body, at, err := fetchTwice(code, nil)
			switch {
			case retried[code] && (err != nil || string(body) != "OK" || len(at) != 2):
				t.Errorf("Do() = %q, %v after %d requests, want \"OK\", nil after 2", body, err, len(at))
			case !retried[code] && (len(at) != 1 || !errors.Is(err, retry.ErrPermanent) || err.Error() != "HTTP "+strconv.Itoa(code)):
				t.Errorf("Do() = %v after %d requests, want HTTP %d, matching ErrPermanent, after 1", err, len(at), code)
			}
		})
	}
	t.Run("Retry-After in seconds is honored", func(t *testing.T) {
		body, at, err := fetchTwice(http.StatusServiceUnavailable, func(time.Time) string { return "1" })
		if err != nil || string(body) != "OK" || len(at) != 2 {
			t.Fatalf("Do() = %q, %v after %d requests, want \"OK\", nil after 2", body, err, len(at))
		}
		if wait := at[1].Sub(at[0]); wait < time.Second {
			t.Errorf("told Retry-After: 1, Do made the second request %v after the first, want at least 1s", wait)
		}
	})
	t.Run("Retry-After as an HTTP-date is honored", func(t *testing.T) {
		var date time.Time
		body, at, err := fetchTwice(http.StatusTooManyRequests, func(now time.Time) string {
			// An HTTP-date counts whole seconds, so the date is 1s to 2s ahead.
			date = now.Add(2 * time.Second).Truncate(time.Second)
			return date.UTC().Format(http.TimeFormat)
		})
		if err != nil || string(body) != "OK" || len(at) != 2 {
			t.Fatalf("Do() = %q, %v after %d requests, want \"OK\", nil after 2", body, err, len(at))
		}
		if at[1].Before(date) {
			t.Errorf("told Retry-After: %s, Do made the second request at %s, %v early",
				date.UTC().Format(http.TimeFormat), at[1].UTC().Format(time.RFC3339Nano), date.Sub(at[1]))
		}
	})
}

// fetchTwice runs fetch through DoValue, with two attempts at most and BaseDelay
// 1ms, against a server on loopback that answers the first request with
// code, and with the Retry-After that header returns for the time of the
// request unless header is nil, and the second with 200 OK. It returns
// DoValue's results and the times at which the server got the requests.
func fetchTwice(code int, header func(now time.Time) string) (body []byte, at []time.Time, err error) {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if at = append(at, time.Now()); len(at) > 1 {
			fmt.Fprint(w, "OK")
			return
		}
		if header != nil {
			w.Header().Set("Retry-After", header(at[0]))
		}
		w.WriteHeader(code)
	}))
	p := retry.Policy{Attempts: 2, BaseDelay: time.Millisecond}
	body, err = retry.DoValue(context.Background(), p, func(ctx context.Context) ([]byte, error) {
		return fetch(ctx, srv.URL)
	})
	srv.Close() // which waits for the handlers to return
	return body, at, err
}

// TestAttemptTimeoutWithPlainDeadlineExceeded runs ExampleDo_attemptTimeout's
// fetchWithin with every request through http.DefaultClient returning its
// context's plain Err(), as Go 1.22's net/http, pgx and database/sql
// drivers do, rather than its cause: with a whole deadline of a minute,
// Do's error must match errAttemptTimeout and not DeadlineExceeded; with
// one of 20ms, under the attempt's 50ms, the other way round.
func TestAttemptTimeoutWithPlainDeadlineExceeded(t *testing.T) {
	defer func(rt http.RoundTripper) { http.DefaultClient.Transport = rt }(http.DefaultClient.Transport)
	http.DefaultClient.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return nil, r.Context().Err()
	})
	for _, tt := range []struct {
		whole         time.Duration
		attemptsTimed bool
	}{{time.Minute, true}, {20 * time.Millisecond, false}} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.whole)
			defer cancel()
			_, err := retry.DoValue(ctx, retry.Policy{Attempts: 3}, func(ctx context.Context) ([]byte, error) {
				return fetchWithin(ctx, "http://127.0.0.1:1/", 50*time.Millisecond)
			})
			if errors.Is(err, errAttemptTimeout) != tt.attemptsTimed || errors.Is(err, context.DeadlineExceeded) == tt.attemptsTimed {
				t.Errorf("whole deadline %v: Do() = %v; want it to match errAttemptTimeout: %t, DeadlineExceeded: %t",
					tt.whole, err, tt.attemptsTimed, !tt.attemptsTimed)
			}
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestBudgetLetsRefusedConnectionsRetry does what ExampleDo_budget's
// throttle does with a refused connection, through net/http on loopback:
// it records it as free, so the bucket allows its retry however many come,
// and one failure after the work takes a token.
func TestBudgetLetsRefusedConnectionsRetry(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows reports a refused connection with an errno of its own")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/"
	ln.Close() // nothing listens there now
	budget := &bucket{reserve: 4}
	for i := range 20 {
		_, err := http.Get(url)
		if err == nil || throttle(budget, err) != err {
			t.Fatalf("attempt %d: GET = %v, throttle() = %v; want a failure returned as it is", i+1, err, throttle(budget, err))
		}
	}
	if throttle(budget, errServer); budget.taken != 10 {
		t.Errorf("after 20 refused connections and one 500, the bucket took %d tenths of a token, want 10", budget.taken)
	}
}

// TestIdempotencyKeyMadeOnceBeforeDo follows README's advice for a POST,
// on loopback: the server does the work, then loses its first reply, and
// does the work again only for a key it has not seen. With a key made once
// before Do, the work is done once; made inside fn, twice.
func TestIdempotencyKeyMadeOnceBeforeDo(t *testing.T) {
	p := retry.Policy{Attempts: 5, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	for _, before := range []bool{true, false} {
		var mu sync.Mutex
		seen, works, requests := map[string]bool{}, 0, 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if key := r.Header.Get("Idempotency-Key"); !seen[key] {
				seen[key], works = true, works+1
			}
			if requests++; requests == 1 {
				panic(http.ErrAbortHandler) // the work is done, but the reply is lost
			}
		}))
		key := rand.Text() // made once, before Do
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			if !before {
				key = rand.Text()
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("order 7"))
			if err != nil {
				return retry.Permanent(err)
			}
			req.Header.Set("Idempotency-Key", key)
			resp, err := srv.Client().Do(req)
			if err != nil {
				return err
			}
			return resp.Body.Close()
		})
		srv.Close()
		if want := map[bool]int{true: 1, false: 2}[before]; err != nil || works != want {
			t.Errorf("key made before Do: %t: Do() = %v, the work done %d times, want nil and %d", before, err, works, want)
		}
	}
}

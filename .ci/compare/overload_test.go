// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	avast "github.com/avast/retry-go/v5"
	"github.com/bfc42b4f/retry"
	"github.com/cenkalti/backoff/v7"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/hashicorp/go-retryablehttp"
)

var overloadSeries = flag.String("overload.series", "", "a CSV file for the calls through per 100ms window of TestOverload's rows at 80% load, for cmd/fleetplot")

// The overload model: a dependency with one worker that takes serveTime a
// request, so a capacity of 1,000 a second, and an outage from outageAt
// for outageFor; callers whose attempts each time out after perAttempt,
// inside fn.
const (
	serveTime  = time.Millisecond
	outageAt   = 2 * time.Second
	outageFor  = 1500 * time.Millisecond
	perAttempt = 500 * time.Millisecond
	window     = 100 * time.Millisecond
)

var errUnavailable = errors.New("503 service unavailable")

// A dependency has one worker that serves a FIFO queue without a limit,
// serveTime a request, and does the work of a request whose caller has
// given up. During its outage the worker stops, and requests queue.
type dependency struct {
	start      time.Time
	down, up   time.Duration // the outage, from the start
	serveTime  time.Duration
	failRate   float64 // the share of requests that fail at once
	mu         sync.Mutex
	queue      []chan error
	ready      chan struct{} // a request is queued
	attempts   int
	longestLen int
}

func newDependency(down, up, serveTime time.Duration, failRate float64) *dependency {
	return &dependency{start: time.Now(), down: down, up: up, serveTime: serveTime, failRate: failRate,
		ready: make(chan struct{}, 1)}
}

// call queues a request and waits for its reply or for ctx.
func (d *dependency) call(ctx context.Context) error {
	reply := make(chan error, 1) // the worker never waits for a caller that left
	d.mu.Lock()
	d.queue = append(d.queue, reply)
	d.attempts++
	d.longestLen = max(d.longestLen, len(d.queue))
	d.mu.Unlock()
	select {
	case d.ready <- struct{}{}:
	default:
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attempt is one call with its own timeout, as fn makes it.
func (d *dependency) attempt(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, perAttempt)
	defer cancel()
	return d.call(ctx)
}

// serve is the worker: it runs until stop is closed, then answers every
// request still queued with errStopped, so that none waits on it.
func (d *dependency) serve(stop <-chan struct{}) {
	defer d.drop()
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.mu.Unlock()
			select {
			case <-d.ready:
				continue
			case <-stop:
				return
			}
		}
		reply := d.queue[0]
		d.queue = d.queue[1:]
		d.mu.Unlock()
		if now := time.Since(d.start); now >= d.down && now < d.up {
			time.Sleep(d.up - now)
		}
		var err error
		if d.failRate > 0 && rand.Float64() < d.failRate {
			err = errUnavailable // a fast failure: no work
		} else {
			time.Sleep(d.serveTime)
		}
		reply <- err
		select {
		case <-stop:
			return
		default:
		}
	}
}

var errStopped = errors.New("the dependency stopped")

// drop answers every queued request with errStopped.
func (d *dependency) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, reply := range d.queue {
		reply <- errStopped
	}
	d.queue = nil
}

// An overloadStrategy makes one call of a caller, which makes its attempts with
// attempt; new makes a overloadStrategy's state, such as a budget, once per run.
type overloadStrategy struct {
	name string
	new  func() func(ctx context.Context, attempt func(context.Context) error) error
}

// doWith is a overloadStrategy that calls retry.Do with p.
func doWith(p retry.Policy) func() func(context.Context, func(context.Context) error) error {
	return func() func(context.Context, func(context.Context) error) error {
		return func(ctx context.Context, attempt func(context.Context) error) error {
			return retry.Do(ctx, p, attempt)
		}
	}
}

var overloadStrategies = []overloadStrategy{
	{"no retry", func() func(context.Context, func(context.Context) error) error {
		return func(ctx context.Context, attempt func(context.Context) error) error { return attempt(ctx) }
	}},
	{"retry.Do, Policy{}", doWith(retry.Policy{})},
	{"retry.Do, Attempts 2", doWith(retry.Policy{Attempts: 2})},
	{"retry.Do, Base 1s, Max 10s", doWith(retry.Policy{Base: time.Second, Max: 10 * time.Second})},
	{"retry.Do, a 2s deadline a call", func() func(context.Context, func(context.Context) error) error {
		return func(ctx context.Context, attempt func(context.Context) error) error {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return retry.Do(ctx, retry.Policy{}, attempt)
		}
	}},
	{"retry.Do with ExampleDo_budget's bucket", func() func(context.Context, func(context.Context) error) error {
		budget := &bucket{} // one per dependency, shared by every call to it
		return func(ctx context.Context, attempt func(context.Context) error) error {
			return retry.Do(ctx, retry.Policy{}, func(ctx context.Context) error {
				err := attempt(ctx)
				if !budget.record(err) && err != nil {
					return retry.Permanent(fmt.Errorf("%w: %w", errThrottled, err))
				}
				return err
			})
		}
	}},
	{"cenkalti/backoff v7", func() func(context.Context, func(context.Context) error) error {
		return func(ctx context.Context, attempt func(context.Context) error) error {
			b := &backoff.ExponentialBackOff{InitialInterval: 100 * time.Millisecond, RandomizationFactor: 0.5,
				Multiplier: 2, MaxInterval: 10 * time.Second}
			_, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, attempt(ctx) },
				backoff.WithBackOff(b), backoff.WithMaxTries(4))
			return err
		}
	}},
	{"avast/retry-go v5", avastWith(nil)},
	{"avast/retry-go v5 with its throttle", func() func(context.Context, func(context.Context) error) error {
		// One bucket, at the default config, shared by every call: a
		// throttle made per call is a full bucket every time.
		return avastWith(avast.NewFixedTokenBucketThrottle(avast.FixedTokenBucketThrottleConfig{}))()
	}},
	{"failsafe-go", failsafeWith(nil)},
	{"failsafe-go with budget.New()", func() func(context.Context, func(context.Context) error) error {
		return failsafeWith(budget.New())()
	}},
}

// avastWith is an avast/retry-go overloadStrategy, with the throttle m if m
// is not nil: 4 attempts, a first wait of 100ms and a cap of 10s, as close
// to Do's zero Policy as its options allow, with its default jitter. Each
// call builds its Retrier, since the call's ctx is one of its options.
func avastWith(m avast.ThrottleManager) func() func(context.Context, func(context.Context) error) error {
	return func() func(context.Context, func(context.Context) error) error {
		return func(ctx context.Context, attempt func(context.Context) error) error {
			return avast.New(avast.Context(ctx), avast.Attempts(4), avast.Delay(100*time.Millisecond),
				avast.MaxDelay(10*time.Second), avast.WithThrottle(m)).Do(func() error { return attempt(ctx) })
		}
	}
}

// failsafeWith is a failsafe-go overloadStrategy, with a retry budget if b
// is not nil. budget.New() refuses a retry only once at least 3 are in
// flight and they exceed 20% of the executions in flight, checked after the
// wait.
func failsafeWith(b budget.Budget) func() func(context.Context, func(context.Context) error) error {
	return func() func(context.Context, func(context.Context) error) error {
		builder := retrypolicy.NewBuilder[any]().WithBackoff(100*time.Millisecond, 10*time.Second).WithMaxAttempts(4)
		if b != nil {
			builder = builder.WithBudget(b)
		}
		rp := builder.Build() // shared by every call, as failsafe-go allows
		return func(ctx context.Context, attempt func(context.Context) error) error {
			return failsafe.With[any](rp).WithContext(ctx).Run(func() error { return attempt(ctx) })
		}
	}
}

// An overloadRun is what the callers of one overloadStrategy got: per window, the
// calls started (offered) and those of them that succeeded (through).
type overloadRun struct {
	name              string
	offered, through  []int
	attempts, queue   int
	recovery          time.Duration // after the outage's end; -1: none
	calls, successful int
}

// runOverload starts calls at a fixed rate, every interval, for horizon
// after the outage ends (or from the start, with no outage), against a new
// dependency, in virtual time, and waits for them all.
func runOverload(t *testing.T, s overloadStrategy, interval, horizon time.Duration, outage bool, failRate float64) (r overloadRun) {
	down, up := outageAt, outageAt+outageFor
	if !outage {
		down, up = 0, 0
	}
	synctest.Test(t, func(t *testing.T) {
		d := newDependency(down, up, serveTime, failRate)
		stop, served := make(chan struct{}), make(chan struct{})
		go func() { d.serve(stop); close(served) }()
		do := s.new()
		r.offered, r.through = offer(func(ctx context.Context) error { return do(ctx, d.attempt) }, interval, up+horizon, time.Hour)
		close(stop)
		<-served
		d.mu.Lock()
		r.attempts, r.queue = d.attempts, d.longestLen
		d.mu.Unlock()
	})
	r.tally(s.name, up)
	return r
}

// offer starts a call of do every interval until end, and returns the
// calls offered and through in each window once every call has returned;
// a call still running grace after end has its ctx canceled.
func offer(do func(context.Context) error, interval, end, grace time.Duration) (offered, through []int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := int(end / window)
	offered, through = make([]int, n), make([]int, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for at := time.Duration(0); at < end; at += interval {
		if wait := at - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		w := int(at / window)
		offered[w]++
		wg.Add(1)
		go func() {
			defer wg.Done()
			if do(ctx) == nil {
				mu.Lock()
				through[w]++
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		cancel()
		<-done
	}
	return offered, through
}

// tally names r and finds its recovery after up, the outage's end, and its
// calls offered and through in all.
func (r *overloadRun) tally(name string, up time.Duration) {
	r.name, r.recovery = name, -1
	first := int(up / window)
	for w := len(r.offered) - 1; w >= first; w-- {
		if float64(r.through[w]) < 0.9*float64(r.offered[w]) {
			break
		}
		r.recovery = time.Duration(w-first) * window
	}
	for w := range r.offered {
		r.calls += r.offered[w]
		r.successful += r.through[w]
	}
}

// recovered reports whether r recovered within d after the outage's end.
func (r overloadRun) recovered(within time.Duration) bool {
	return r.recovery >= 0 && r.recovery <= within
}

func (r overloadRun) String() string {
	rec := "none"
	if r.recovery >= 0 {
		rec = r.recovery.String()
	}
	return fmt.Sprintf("%-50s recovery %-6s attempts %6d, calls through %5d of %5d, longest queue %6d",
		r.name, rec, r.attempts, r.successful, r.calls, r.queue)
}

// TestOverload runs open-loop callers, new calls at a fixed rate as a
// service's own callers send them, against a dependency with one worker
// and a queue without limit that stops for 1.5s, at 50% and 80% of its
// capacity, in virtual time, with each of overloadStrategies. A row
// recovers at the first 100ms window after the outage from which every
// window's calls get through, 90% of them at least. It asserts directions
// only, as the jitter is random: no retry recovers; retry.Do alone does
// not, within 20s; retry.Do with ExampleDo_budget's bucket recovers within
// no retry's time plus 1s, with at most 1.1 times its attempts; and the
// peers' rows as they were measured: cenkalti/backoff v7, avast/retry-go v5
// and failsafe-go without a budget do not recover, avast's throttle
// recovers as the bucket does, failsafe-go's budget at 50% only.
func TestOverload(t *testing.T) {
	const horizon = 20 * time.Second
	for _, load := range []struct {
		name     string
		interval time.Duration
	}{{"50%", 2 * time.Millisecond}, {"80%", 1250 * time.Microsecond}} {
		t.Run(load.name, func(t *testing.T) {
			runs := map[string]overloadRun{}
			for _, s := range overloadStrategies {
				r := runOverload(t, s, load.interval, horizon, true, 0)
				runs[s.name] = r
				t.Log(r)
			}
			if load.name == "80%" && *overloadSeries != "" {
				if err := writeOverloadSeries(*overloadSeries, runs); err != nil {
					t.Fatal(err)
				}
			}
			// Every row that retries without a budget keeps the dependency
			// down, as does failsafe-go's budget at 80%.
			down := []string{"retry.Do, Policy{}", "retry.Do, Attempts 2", "retry.Do, Base 1s, Max 10s",
				"retry.Do, a 2s deadline a call", "cenkalti/backoff v7", "avast/retry-go v5", "failsafe-go"}
			if load.name == "80%" {
				down = append(down, "failsafe-go with budget.New()")
			}
			none := checkOverload(t, runs, horizon, down,
				[]string{"retry.Do with ExampleDo_budget's bucket", "avast/retry-go v5 with its throttle"})
			// failsafe-go's budget recovers at 50%, but later than no retry.
			if f := runs["failsafe-go with budget.New()"]; load.name == "50%" && (f.recovery < 0 || f.recovery <= none.recovery) {
				t.Errorf("failsafe-go with budget.New(): recovery %v, want one later than no retry's %v", f.recovery, none.recovery)
			}
		})
	}
}

// TestOverloadRealNetwork runs the dependency of TestOverload behind a
// net/http server on loopback, on the real clock: its handler queues the
// request to the one worker, 2ms a request, and waits for the reply,
// ignoring its request's context, so the worker serves callers who left.
// Calls come every 4ms, about half the capacity; the outage is 1s, and the
// horizon 10s after it. Each attempt has a 500ms timeout: inside fn for
// retry.Do, as HTTPClient.Timeout for go-retryablehttp, with its defaults
// otherwise. It asserts the directions of TestOverload, and
// go-retryablehttp's as measured: it does not recover.
func TestOverloadRealNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of about 60s")
	}
	const (
		serve, interval   = 2 * time.Millisecond, 4 * time.Millisecond
		down, up, horizon = 500 * time.Millisecond, 1500 * time.Millisecond, 10 * time.Second
	)
	byName := map[string]overloadStrategy{}
	for _, s := range overloadStrategies {
		byName[s.name] = s
	}
	rows := []overloadStrategy{byName["no retry"], byName["retry.Do, Policy{}"], byName["retry.Do with ExampleDo_budget's bucket"],
		{"go-retryablehttp v0.7.8, HTTPClient.Timeout 500ms", nil}}
	runs := map[string]overloadRun{}
	for _, s := range rows {
		d := newDependency(down, up, serve, 0)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := d.call(context.Background()); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		stop, served := make(chan struct{}), make(chan struct{})
		go func() { d.serve(stop); close(served) }()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
		attempt := func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, perAttempt)
			defer cancel()
			_, err := getOnce(ctx, client, srv.URL)
			return err
		}
		rc := retryablehttp.NewClient() // its defaults, shared by the row's calls
		rc.Logger, rc.HTTPClient.Timeout = nil, perAttempt
		do := func(ctx context.Context) error { return retryablehttpGet(ctx, rc, srv.URL) }
		if s.new != nil {
			call := s.new()
			do = func(ctx context.Context) error { return call(ctx, attempt) }
		}
		var r overloadRun
		d.start = time.Now()
		r.offered, r.through = offer(do, interval, up+horizon, 3*time.Second)
		close(stop) // the worker drops its queue, so no handler waits on it
		<-served
		srv.CloseClientConnections()
		srv.Close()
		client.CloseIdleConnections()
		rc.HTTPClient.CloseIdleConnections()
		d.mu.Lock()
		r.attempts, r.queue = d.attempts, d.longestLen
		d.mu.Unlock()
		r.tally(s.name, up)
		runs[s.name] = r
		t.Log(r)
	}
	checkOverload(t, runs, horizon, []string{"retry.Do, Policy{}", "go-retryablehttp v0.7.8, HTTPClient.Timeout 500ms"},
		[]string{"retry.Do with ExampleDo_budget's bucket"})
}

// checkOverload checks the directions both overload tests assert: no retry
// recovers within a third of the horizon, no row of down recovers, and each
// row of budgets (ExampleDo_budget's bucket, and avast's throttle) recovers
// within no retry's time plus 1s, with at most 1.1 times its attempts. It
// returns no retry's run.
func checkOverload(t *testing.T, runs map[string]overloadRun, horizon time.Duration, down, budgets []string) overloadRun {
	t.Helper()
	none := runs["no retry"]
	if !none.recovered(horizon / 3) {
		t.Fatalf("no retry: recovery %v, want within a third of the %v horizon", none.recovery, horizon)
	}
	for _, name := range down {
		if r := runs[name]; r.recovery >= 0 {
			t.Errorf("%s recovered %v after the outage, want no recovery within %v", name, r.recovery, horizon)
		}
	}
	for _, name := range budgets {
		b := runs[name]
		if !b.recovered(none.recovery + time.Second) {
			t.Errorf("%s: recovery %v, want within no retry's %v plus 1s", name, b.recovery, none.recovery)
		}
		if float64(b.attempts) > 1.1*float64(none.attempts) {
			t.Errorf("%s: %d attempts, want at most 1.1 times no retry's %d", name, b.attempts, none.attempts)
		}
	}
	return none
}

// retryablehttpGet GETs url with c, and returns nil for a 200.
func retryablehttpGet(ctx context.Context, c *retryablehttp.Client, url string) error {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// plotted are the rows cmd/fleetplot draws, in its order.
var plotted = []string{"retry.Do with ExampleDo_budget's bucket", "retry.Do, Policy{}", "no retry", "failsafe-go with budget.New()"}

// writeOverloadSeries writes the calls through per window after the
// outage's end of the plotted rows to a CSV file for cmd/fleetplot: one row
// per window, its start in milliseconds after the outage, then each row's
// calls through; the header says when each recovered.
func writeOverloadSeries(name string, runs map[string]overloadRun) error {
	rows := [][]string{{"ms"}}
	for _, n := range plotted {
		rec := "no recovery in 20s"
		if r := runs[n].recovery; r >= 0 {
			rec = fmt.Sprintf("recovers after %.1fs", r.Seconds())
		}
		rows[0] = append(rows[0], n+": "+rec)
	}
	first := int((outageAt + outageFor) / window)
	for w := first; w < len(runs["no retry"].offered); w++ {
		row := []string{strconv.Itoa(int((time.Duration(w-first) * window) / time.Millisecond))}
		for _, n := range plotted {
			row = append(row, strconv.Itoa(runs[n].through[w]))
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	if err := csv.NewWriter(&b).WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}

// errThrottled, bucket and record are ExampleDo_budget's, to the letter, as
// .ci/quickstart.go checks.

// errThrottled marks an error whose retry a bucket refused.
var errThrottled = errors.New("retry throttled")

// A bucket is a retry budget by gRPC's retry throttling (gRFC A6), with its
// example's numbers: of 10 tokens, a failed attempt that fn would retry takes
// 1 and a success gives back 0.1; retries may follow while more than 5 remain.
// It counts the tenths spent, so its zero value is full. It is concurrency-safe.
type bucket struct {
	mu    sync.Mutex
	spent int // tenths of a token, from 0 to 100
}

// record counts an attempt's err, nil for a success, and says if a retry may follow.
func (b *bucket) record(err error) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.spent = min(b.spent+10, 100)
	} else {
		b.spent = max(b.spent-1, 0)
	}
	return b.spent < 50
}

// TestOverloadRareFailures is the cost of the bucket when failures are
// rare: with no outage, at 50% of the capacity for 200s, 5% of attempts
// fail at once, each on its own. Do alone gets nearly every call through, and so
// does Do with the bucket, within 0.1 points of it, against about 95% with
// no retry: at a failure rate under 0.1 ÷ 1.1 the bucket stays full.
func TestOverloadRareFailures(t *testing.T) {
	share := map[string]float64{}
	for _, s := range overloadStrategies {
		switch s.name {
		case "no retry", "retry.Do, Policy{}", "retry.Do with ExampleDo_budget's bucket":
			r := runOverload(t, s, 2*time.Millisecond, 400*time.Second, false, 0.05)
			share[s.name] = float64(r.successful) / float64(r.calls)
			t.Logf("%-40s %.4f%% of %d calls through, %d attempts", s.name, 100*share[s.name], r.calls, r.attempts)
		}
	}
	// 100,000 calls: no retry's share is 95% ± 0.07 points (one standard
	// deviation); Do's misses a call with a chance of 0.05⁴, 6e-6. The
	// bucket refuses in bursts, when failures happen to bunch up: over
	// 100,000 calls its losses add up to about 0.04 points.
	if none := share["no retry"]; none < 0.945 || none > 0.955 {
		t.Errorf("no retry got %.2f%% of the calls through, want about 95%%", 100*none)
	}
	do, b := share["retry.Do, Policy{}"], share["retry.Do with ExampleDo_budget's bucket"]
	if do < 0.9995 || b < do-0.001 {
		t.Errorf("retry.Do got %.4f%% through and with the bucket %.4f%%, want 99.95%% or more, and the bucket within 0.1 points", 100*do, 100*b)
	}
}

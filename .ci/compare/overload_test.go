// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	avast "github.com/avast/retry-go/v5"
	"github.com/bfc42b4f/retry"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
)

var overloadSeries = flag.String("overload.series", "", "a CSV file for the calls through per 100ms window in the first run of each plotted row, in the TestOverload cell that -run selects, for cmd/fleetplot")

// The overload model: a dependency with one worker that takes serveTime a
// request, so a capacity of 1,000 a second, and an outage or a spike from
// outageAt; callers whose attempts each time out after perAttempt, inside
// fn, and retry with overloadPolicy or as close to it as a peer's options
// allow.
const (
	serveTime  = time.Millisecond
	outageAt   = 2 * time.Second
	perAttempt = 500 * time.Millisecond
	window     = 100 * time.Millisecond
)

var overloadPolicy = retry.Policy{Attempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second}

// errServer is the error of a request that failed after the work.
var errServer = errors.New("500 internal server error")

// A dependency has one worker that serves a FIFO queue, serveTime a
// request, and does the work of a request whose caller has given up. What
// it does while down, from down to up after start, is its kind's:
//
//   - hang: the worker stalls, and requests queue without a limit;
//   - skip: as hang, but the worker skips a request whose caller has left;
//   - shed: it answers errServiceUnavailable at once, doing no work;
//   - limit: the worker stalls; at any time, a request is admitted while
//     fewer than 100 admitted requests are unfinished, callers that left
//     included, and answered errServiceUnavailable at once otherwise. Each refusal
//     adds refusal to a debt the worker pays before its next request,
//     except while it stalls;
//   - slow: a request gets serveTime of work, then errServer.
//
// Up or down, a share failRate of the requests it does the work of are
// answered errServer after the work.
type dependency struct {
	start      time.Time
	kind       string
	down, up   time.Duration // the outage, from the start
	serveTime  time.Duration
	refusal    time.Duration // what a refusal costs a limit dependency
	failRate   float64       // the share of requests answered errServer after the work
	draws      *rand.Rand    // decides which requests fail after the work; the worker's alone
	mu         sync.Mutex
	queue      []*request
	unfinished int           // admitted requests not yet answered
	debt       time.Duration // refusals' cost, not yet paid
	ready      chan struct{} // a request is queued
	attempts   int
	longestLen int
}

// A request is a queued call; d.mu guards left.
type request struct {
	reply chan error // buffered, so the worker never waits for a caller that left
	left  bool       // the caller has given up
}

func newDependency(kind string, down, up, serveTime time.Duration) *dependency {
	// A fixed seed, so that the dependency's failures are the same in every
	// run, and only Do's draws vary.
	return &dependency{start: time.Now(), kind: kind, down: down, up: up, serveTime: serveTime,
		draws: rand.New(rand.NewPCG(1, 2)), ready: make(chan struct{}, 1)}
}

// isDown reports whether the dependency is down; d.mu is held.
func (d *dependency) isDown() bool {
	now := time.Since(d.start)
	return now >= d.down && now < d.up
}

// call queues a request and waits for its reply or for ctx, unless the
// dependency refuses it at once.
func (d *dependency) call(ctx context.Context) error {
	d.mu.Lock()
	d.attempts++
	switch {
	case d.kind == "shed" && d.isDown():
		d.mu.Unlock()
		return errServiceUnavailable
	case d.kind == "limit" && d.unfinished >= 100:
		if !d.isDown() {
			d.debt += d.refusal
		}
		d.mu.Unlock()
		return errServiceUnavailable
	}
	r := &request{reply: make(chan error, 1)}
	d.queue = append(d.queue, r)
	d.unfinished++
	d.longestLen = max(d.longestLen, len(d.queue))
	d.mu.Unlock()
	select {
	case d.ready <- struct{}{}:
	default:
	}
	select {
	case err := <-r.reply:
		return err
	case <-ctx.Done():
		d.mu.Lock()
		r.left = true
		d.mu.Unlock()
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
		r := d.queue[0]
		d.queue = d.queue[1:]
		if now := time.Since(d.start); d.isDown() && (d.kind == "hang" || d.kind == "skip" || d.kind == "limit") {
			d.mu.Unlock()
			time.Sleep(d.up - now)
			d.mu.Lock()
		}
		err, work := error(nil), d.serveTime
		switch {
		case d.kind == "skip" && r.left:
			work = 0
		case d.isDown() && d.kind == "shed":
			err, work = errServiceUnavailable, 0
		case d.isDown() && d.kind == "slow", d.failRate > 0 && d.draws.Float64() < d.failRate:
			err = errServer
		}
		work, d.debt = work+d.debt, 0
		d.mu.Unlock()
		time.Sleep(work)
		r.reply <- err
		d.mu.Lock()
		d.unfinished--
		d.mu.Unlock()
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
	for _, r := range d.queue {
		r.reply <- errStopped
	}
	d.queue = nil
}

// An overloadRow makes one call of a caller, which makes its attempts with
// attempt; new makes a row's state, such as a budget, once per run.
type overloadRow struct {
	name    string
	new     func() func(ctx context.Context, attempt func(context.Context) error) error
	reserve int // the reserve of the row's bucket, ExampleDo_budget's; 0 for none
}

var overloadRows = []overloadRow{
	{name: "none", new: func() func(context.Context, func(context.Context) error) error {
		return func(ctx context.Context, attempt func(context.Context) error) error { return attempt(ctx) }
	}},
	{name: "do", new: func() func(context.Context, func(context.Context) error) error {
		return func(ctx context.Context, attempt func(context.Context) error) error {
			return retry.Do(ctx, overloadPolicy, attempt)
		}
	}},
	bucketRow("bucket", 4, throttle),
	bucketRow("bucket-small", 1, throttle),
	bucketRow("bucket-free", 4, throttleFreeRefusals),
	// avast/retry-go with its throttle: one bucket, at the default config,
	// shared by every call, as a throttle made per call is full every time.
	// Each call builds its Retrier, since the call's ctx is one of its
	// options.
	{name: "avast-throttle", new: func() func(context.Context, func(context.Context) error) error {
		throttle := avast.NewFixedTokenBucketThrottle(avast.FixedTokenBucketThrottleConfig{})
		return func(ctx context.Context, attempt func(context.Context) error) error {
			return avast.New(avast.Context(ctx), avast.Attempts(4), avast.Delay(100*time.Millisecond),
				avast.MaxDelay(2*time.Second), avast.WithThrottle(throttle)).Do(func() error { return attempt(ctx) })
		}
	}},
	// failsafe-go with budget.New(), which refuses a retry only once at
	// least 3 are in flight and they exceed 20% of the executions in
	// flight, checked after the wait. The RetryPolicy is shared by every
	// call, as failsafe-go allows.
	{name: "failsafe-budget", new: func() func(context.Context, func(context.Context) error) error {
		rp := retrypolicy.NewBuilder[any]().WithBackoff(100*time.Millisecond, 2*time.Second).WithMaxAttempts(4).
			WithBudget(budget.New()).Build()
		return func(ctx context.Context, attempt func(context.Context) error) error {
			return failsafe.With[any](rp).WithContext(ctx).Run(func() error { return attempt(ctx) })
		}
	}},
}

// bucketRow returns the row name of Do with ExampleDo_budget's bucket of
// the given reserve, fed through feed, one bucket per process: each call of
// new is a process.
func bucketRow(name string, reserve int, feed func(*bucket, error) error) overloadRow {
	return overloadRow{name: name, reserve: reserve, new: func() func(context.Context, func(context.Context) error) error {
		budget := &bucket{reserve: reserve} // one per dependency in the process
		return func(ctx context.Context, attempt func(context.Context) error) error {
			return retry.Do(ctx, overloadPolicy, func(ctx context.Context) error {
				return feed(budget, attempt(ctx))
			})
		}
	}}
}

// throttleFreeRefusals is throttle changed so that the dependency's own
// refusals, which it answers at once without the work (errServiceUnavailable,
// from shed and limit), are free, as a refused connection is.
func throttleFreeRefusals(b *bucket, err error) error {
	if !errors.Is(err, errServiceUnavailable) {
		return throttle(b, err)
	}
	if !b.record(err, true) {
		return fmt.Errorf("%w: %w", errThrottled, err)
	}
	return err
}

// An overloadCell is a setting of the model: the dependency's kind, the
// outage's length or the spike's, the load in percent of capacity, and
// how long calls go on after the outage or the spike.
type overloadCell struct {
	kind          string
	outage, spike time.Duration // from outageAt
	load          int
	refusal       time.Duration // what a refusal costs a limit dependency
	failRate      float64       // the share of requests answered errServer after the work
	horizon       time.Duration
	runs          int
	assert        float64 // the share of Do's rescues the bucket keeps at least, in a blip
	rows          []string
	procs         int // the processes the calls are dealt to, round-robin; 0 means 1
}

func (c overloadCell) String() string {
	if c.spike > 0 {
		return fmt.Sprintf("%s_spike%v_refusal%v_%d%%", c.kind, c.spike, c.refusal, c.load)
	}
	return fmt.Sprintf("%s_%v_%d%%", c.kind, c.outage, c.load)
}

// An overloadRun is what the callers of one row got in one run: per window,
// the calls started (offered) and those of them that succeeded (through).
type overloadRun struct {
	name              string
	offered, through  []int
	attempts, queue   int
	recovery          time.Duration // after the outage's end; -1: none
	calls, successful int
}

// runOverload starts calls at the cell's rate, against a new dependency,
// in virtual time, until the horizon after the outage or spike ends, and
// waits for them all.
func runOverload(t *testing.T, row overloadRow, c overloadCell) (r overloadRun) {
	up := outageAt + max(c.outage, c.spike)
	interval := func(at time.Duration) time.Duration {
		if c.spike > 0 && at >= outageAt && at < up {
			return serveTime * 2 / 3 // 150% of capacity
		}
		return serveTime * 100 / time.Duration(c.load)
	}
	synctest.Test(t, func(t *testing.T) {
		d := newDependency(c.kind, outageAt, outageAt+c.outage, serveTime)
		d.refusal, d.failRate = c.refusal, c.failRate
		stop, served := make(chan struct{}), make(chan struct{})
		go func() { d.serve(stop); close(served) }()
		procs := make([]func(context.Context, func(context.Context) error) error, max(c.procs, 1))
		for i := range procs {
			procs[i] = row.new()
		}
		do := func(ctx context.Context, call int) error { return procs[call%len(procs)](ctx, d.attempt) }
		r.offered, r.through = offer(do, interval, up+c.horizon, time.Hour)
		close(stop)
		<-served
		d.mu.Lock()
		r.attempts, r.queue = d.attempts, d.longestLen
		d.mu.Unlock()
	})
	r.tally(row.name, up)
	return r
}

// offer starts a call of do after each interval until end, numbered from
// 0, and returns the calls offered and through in each window once every
// call has returned; a call still running grace after end has its ctx
// canceled. The calls start 1ns after the times the intervals give, so
// that in virtual time no attempt's timeout falls at the instant a worker
// that resumes on the interval's grid answers it: the caller's select would
// take either at random, and no retry's figures would vary.
func offer(do func(ctx context.Context, call int) error, interval func(at time.Duration) time.Duration, end, grace time.Duration) (offered, through []int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := int(end / window)
	offered, through = make([]int, n), make([]int, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for at, call := time.Nanosecond, 0; at < end; at, call = at+interval(at), call+1 {
		if wait := at - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		w := int(at / window)
		offered[w]++
		wg.Add(1)
		go func() {
			defer wg.Done()
			if do(ctx, call) == nil {
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

func (r overloadRun) String() string {
	rec := "none"
	if r.recovery >= 0 {
		rec = r.recovery.String()
	}
	return fmt.Sprintf("%-50s recovery %-6s attempts %6d, calls through %5d of %5d, longest queue %6d",
		r.name, rec, r.attempts, r.successful, r.calls, r.queue)
}

// An overloadResult is a row's runs in one cell, in sums and extremes.
type overloadResult struct {
	runs, failed, attempts int
	back                   time.Duration // the latest recovery over the runs; -1: one run never recovered
	spikeThrough           int           // calls through during the spike
}

// back says d, a time until the dependency is back, in seconds, or never.
func back(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func (o overloadResult) meanFailed() float64 { return float64(o.failed) / float64(o.runs) }

func (o *overloadResult) add(r overloadRun, c overloadCell) {
	if o.runs++; o.runs == 1 || o.back >= 0 && (r.recovery < 0 || r.recovery > o.back) {
		o.back = r.recovery
	}
	o.failed += r.calls - r.successful
	o.attempts += r.attempts
	for w := int(outageAt / window); w < int((outageAt+c.spike)/window); w++ {
		o.spikeThrough += r.through[w]
	}
}

// overloadCells are TestOverload's cells: blips of shed and limit
// dependencies, whose measure is the failed calls, and lasting outages of
// hang and slow ones, whose measure is the time until the dependency is
// back; and one limit dependency whose refusals cost a quarter of a
// request, through a lasting spike, whose measure is the goodput.
//
// The runs are sized for the blips' assertions. No retry's failed calls
// are the same in every run; over 40 runs, a bucket with free refusals and
// Do varied by a standard deviation of 8.6 and 4.6 calls at the most, in
// limit 500ms at 80%, where the bucket's mean stood 40 calls from its
// bound. With 4 runs that is 9 standard deviations, a chance of a false
// failure near 1e-19; every other cell is further from its bound. In the
// lasting cells, each bucket's time back was the same in 10 runs.
func overloadCells() []overloadCell {
	var cells []overloadCell
	all := []string{"none", "do", "bucket", "bucket-free", "avast-throttle", "failsafe-budget"}
	for _, load := range []int{50, 80} {
		for _, kind := range []string{"shed", "limit"} {
			for _, blip := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond} {
				c := overloadCell{kind: kind, outage: blip, load: load, refusal: 50 * time.Microsecond,
					horizon: 3 * time.Second, runs: 4, assert: 0.75, rows: all}
				if kind == "limit" {
					c.assert = 0.5
				}
				cells = append(cells, c)
			}
		}
		for _, kind := range []string{"hang", "slow"} {
			cells = append(cells, overloadCell{kind: kind, outage: 2 * time.Second, load: load,
				horizon: 20 * time.Second, runs: 2, rows: all})
		}
	}
	return append(cells, overloadCell{kind: "limit", spike: 5 * time.Second, load: 80, refusal: 250 * time.Microsecond,
		horizon: 3 * time.Second, runs: 1, rows: []string{"none", "bucket", "bucket-free"}})
}

// TestOverload runs open-loop callers, new calls at a fixed rate as a
// service's own callers send them, against the dependency of each cell of
// overloadCells, with each row of overloadRows, in virtual time, one
// parallel subtest a cell. It logs a line per row and cell: the failed
// calls and the attempts of a run, on average, and the latest time after
// the outage's end from which 90% of every 100ms window's calls get
// through ("back"). The bucket runs as copied, where every failure takes
// a token, and through throttleFreeRefusals, where the dependency's
// refusals (a 503 at once, from shed and limit) are free. It asserts what
// checkCell names: no retry's figures exactly, the buckets' bounds, and the
// peers' directions.
func TestOverload(t *testing.T) {
	for _, c := range overloadCells() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			res := map[string]*overloadResult{}
			for _, name := range c.rows {
				res[name] = &overloadResult{}
			}
			series := map[string]overloadRun{}
			for run := range c.runs {
				for _, row := range overloadRows {
					if o := res[row.name]; o != nil {
						r := runOverload(t, row, c)
						o.add(r, c)
						if run == 0 {
							series[row.name] = r
						}
					}
				}
			}
			for _, name := range c.rows {
				o := res[name]
				line := fmt.Sprintf("overload kind=%s outage=%v load=%d%% row=%s failed=%.0f attempts=%d back=%s",
					c.kind, max(c.outage, c.spike), c.load, name, o.meanFailed(), o.attempts/o.runs, back(o.back))
				if c.spike > 0 { // calls through during the spike, per request the worker can serve
					line += fmt.Sprintf(" goodput=%.0f%%", 100*float64(o.spikeThrough)/float64(o.runs)/float64(c.spike/serveTime))
				}
				t.Log(line)
			}
			if *overloadSeries != "" {
				if err := writeOverloadSeries(*overloadSeries, c, series); err != nil {
					t.Fatal(err)
				}
			}
			checkCell(t, c, res)
		})
	}
}

// checkCell asserts TestOverload's claims for the cell c: no retry's
// figures, exactly (exactNoRetry); in a blip, that the bucket with free
// refusals keeps at least the cell's share of the calls Do alone rescues,
// and that the bucket as copied keeps under half, as avast's throttle does;
// in a lasting outage, that each bucket is back within 0.1s (a window) of
// no retry, where Do alone never is; through the spike, that the bucket as
// copied keeps 90% of no retry's goodput at least, where the bucket with
// free refusals keeps under half. And the peers' directions, as measured:
// in a hang, avast's throttle is back within no retry's time plus 1s, and
// failsafe-go's budget is never back at 80% load.
func checkCell(t *testing.T, c overloadCell, res map[string]*overloadResult) {
	t.Helper()
	none, do := res["none"], res["do"]
	if want, ok := exactNoRetry[c.String()]; !ok || none.meanFailed() != float64(want.failed) || none.back != want.back ||
		none.spikeThrough != want.spikeThrough*none.runs {
		t.Errorf("no retry: failed=%.0f back=%s through the spike=%d, want exactly %d, %s and %d",
			none.meanFailed(), back(none.back), none.spikeThrough/none.runs, want.failed, back(want.back), want.spikeThrough)
	}
	kept := func(name string) float64 { return none.meanFailed() - res[name].meanFailed() }
	switch {
	case c.spike > 0:
		if b := res["bucket"]; b.spikeThrough*10 < none.spikeThrough*9 {
			t.Errorf("the bucket: %d calls through in the spike, want 90%% of no retry's %d at least", b.spikeThrough, none.spikeThrough)
		}
		if f := res["bucket-free"]; f.spikeThrough*2 >= none.spikeThrough {
			t.Errorf("the bucket with free refusals: %d calls through in the spike, want under half of no retry's %d, as measured", f.spikeThrough, none.spikeThrough)
		}
	case c.outage < time.Second && none.failed == 0:
		t.Log("no call failed without retries: none to rescue")
	case c.outage < time.Second: // a blip
		rescued := kept("do")
		if k := kept("bucket-free"); k < c.assert*rescued {
			t.Errorf("the bucket with free refusals keeps %.0f of Do's %.0f rescues a run, want %.0f%% at least", k, rescued, 100*c.assert)
		}
		for _, name := range []string{"bucket", "avast-throttle"} {
			if k := kept(name); k >= rescued/2 {
				t.Errorf("%s keeps %.0f of Do's %.0f rescues a run, want under half", name, k, rescued)
			}
		}
	default: // a lasting outage
		for _, name := range []string{"bucket", "bucket-free"} {
			if r := res[name]; r.back < 0 || r.back > none.back+window {
				t.Errorf("%s: back=%s, want within %v of no retry's %s", name, back(r.back), window, back(none.back))
			}
		}
		if r := res["avast-throttle"]; c.kind == "hang" && (r.back < 0 || r.back > none.back+time.Second) {
			t.Errorf("avast's throttle: back=%s, want within no retry's %s plus 1s, as measured", back(r.back), back(none.back))
		}
		if do.back >= 0 {
			t.Errorf("Do alone: back=%s, want never within %v", back(do.back), c.horizon)
		}
		if f := res["failsafe-budget"]; c.kind == "hang" && c.load == 80 && f.back >= 0 {
			t.Errorf("failsafe-go's budget: back=%s, want never within %v, as measured", back(f.back), c.horizon)
		}
	}
}

// exactNoRetry are no retry's failed calls a run, time back and calls
// through a spike in each cell of TestOverload. No clock moves them, as the
// model runs in virtual time, and no draw, as no retry draws no wait and
// the model's own draws are seeded; so they are exact.
var exactNoRetry = map[string]struct {
	failed       int
	back         time.Duration
	spikeThrough int
}{
	"shed_100ms_50%": {50, 0, 0}, "shed_300ms_50%": {150, 0, 0}, "shed_500ms_50%": {250, 0, 0},
	"shed_100ms_80%": {80, 0, 0}, "shed_300ms_80%": {240, 0, 0}, "shed_500ms_80%": {400, 0, 0},
	"limit_100ms_50%": {0, 0, 0}, "limit_300ms_50%": {51, 0, 0}, "limit_500ms_50%": {153, 0, 0},
	"limit_100ms_80%": {0, 0, 0}, "limit_300ms_80%": {141, 0, 0}, "limit_500ms_80%": {306, 0, 0},
	"hang_2s_50%": {1501, time.Second, 0}, "hang_2s_80%": {6004, 5500 * time.Millisecond, 0},
	"slow_2s_50%": {1000, 0, 0}, "slow_2s_80%": {1600, 0, 0},
	"limit_spike5s_refusal250µs_80%": {3202, 0, 4299},
}

// fleetProcs are the fleets of TestOverloadFleet: the processes the calls
// are dealt to, each with buckets of its own.
var fleetProcs = []int{1, 100, 1000}

// fleetCells are TestOverloadFleet's cells: lasting outages of hang, skip,
// limit and slow dependencies, whose measure is the time until the
// dependency is back, and random errors after the work on 1% and 5% of
// requests with no outage, whose measure is the failed calls.
func fleetCells() []overloadCell {
	var cells []overloadCell
	rows := []string{"none", "do", "bucket", "bucket-small"}
	for _, load := range []int{50, 80} {
		for _, kind := range []string{"hang", "skip", "limit", "slow"} {
			cells = append(cells, overloadCell{kind: kind, outage: 2 * time.Second, load: load,
				refusal: 50 * time.Microsecond, horizon: 40 * time.Second, runs: 2, rows: rows})
		}
		for _, percent := range []int{1, 5} {
			cells = append(cells, overloadCell{kind: fmt.Sprintf("rare%d", percent), failRate: float64(percent) / 100,
				load: load, horizon: 40 * time.Second, runs: 2, assert: 0.9, rows: rows})
		}
	}
	return cells
}

// TestOverloadFleet deals TestOverload's calls round-robin to a fleet of
// N processes, each with its own bucket as copied, for each N of
// fleetProcs, one parallel subtest a cell of fleetCells. none and do keep no state between
// calls, so a fleet of them is one process: they run once a run and are
// logged at each N. It logs TestOverload's lines with procs=N, and asserts
// what checkFleetCell names.
func TestOverloadFleet(t *testing.T) {
	for _, c := range fleetCells() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			res := map[int]map[string]*overloadResult{}
			for _, n := range fleetProcs {
				res[n] = map[string]*overloadResult{}
				for _, name := range c.rows {
					res[n][name] = &overloadResult{}
				}
			}
			for range c.runs {
				for _, row := range overloadRows {
					if res[fleetProcs[0]][row.name] == nil {
						continue
					}
					var r overloadRun
					for _, n := range fleetProcs {
						if row.reserve > 0 || n == fleetProcs[0] { // else r serves every N
							cn := c
							cn.procs = n
							r = runOverload(t, row, cn)
						}
						res[n][row.name].add(r, c)
					}
				}
			}
			for _, n := range fleetProcs {
				for _, name := range c.rows {
					o := res[n][name]
					t.Logf("overload kind=%s outage=%v load=%d%% procs=%d row=%s failed=%.0f attempts=%d back=%s",
						c.kind, c.outage, c.load, n, name, o.meanFailed(), o.attempts/o.runs, back(o.back))
				}
			}
			checkFleetCell(t, c, res)
		})
	}
}

// checkFleetCell asserts TestOverloadFleet's bounds for the cell c, with
// res the results of each N and row: no retry's figures, exactly
// (exactFleetNoRetry); Do alone never back after a hang or a slow outage;
// after one, each bucket back within no retry's time plus the sizing rule's
// delay, N × reserve ÷ spare capacity, plus 0.1s (a window); where the
// dependency skips the work of callers that left or refuses at once when
// full, within 1.5s of no retry. With rare failures, each bucket keeps the cell's share of
// the calls Do alone rescues at least, but the reserve of 1 at rare5, which
// is reported.
func checkFleetCell(t *testing.T, c overloadCell, res map[int]map[string]*overloadResult) {
	t.Helper()
	spare := 10 * (100 - c.load) // the requests a second the worker has to spare
	for _, n := range fleetProcs {
		none, do := res[n]["none"], res[n]["do"]
		if want, ok := exactFleetNoRetry[c.String()]; !ok || none.meanFailed() != float64(want.failed) || none.back != want.back {
			t.Errorf("procs=%d no retry: failed=%.0f back=%s, want exactly %d and %s", n, none.meanFailed(), back(none.back), want.failed, back(want.back))
		}
		if (c.kind == "hang" || c.kind == "slow") && do.back >= 0 {
			t.Errorf("procs=%d Do alone: back=%s, want never within %v", n, back(do.back), c.horizon)
		}
		for _, row := range overloadRows {
			b := res[n][row.name]
			if row.reserve == 0 || b == nil {
				continue
			}
			leak := time.Duration(n*row.reserve)*time.Second/time.Duration(spare) + window
			if c.kind == "skip" || c.kind == "limit" {
				leak = 1500 * time.Millisecond
			}
			rescued, kept := none.meanFailed()-do.meanFailed(), none.meanFailed()-b.meanFailed()
			switch name := row.name; {
			case c.failRate == 0 && (b.back < 0 || b.back > none.back+leak):
				t.Errorf("procs=%d %s: back=%s, want within %v of no retry's %s",
					n, name, back(b.back), leak, back(none.back))
			case c.failRate > 0 && kept < c.assert*rescued && (c.kind != "rare5" || row.reserve > 1):
				t.Errorf("procs=%d %s failed %.0f calls a run, no retry %.0f and Do alone %.0f: it keeps %.0f%% of Do's rescues, want %.0f%% at least",
					n, name, b.meanFailed(), none.meanFailed(), do.meanFailed(), 100*kept/rescued, 100*c.assert)
			}
		}
	}
}

// exactFleetNoRetry are no retry's failed calls a run and time back in each
// cell of TestOverloadFleet, exact as exactNoRetry's are.
var exactFleetNoRetry = map[string]struct {
	failed int
	back   time.Duration
}{
	"hang_2s_50%": {1501, time.Second}, "hang_2s_80%": {6004, 5500 * time.Millisecond},
	"skip_2s_50%": {751, 0}, "skip_2s_80%": {1204, 0},
	"limit_2s_50%": {1001, 0}, "limit_2s_80%": {1601, 0},
	"slow_2s_50%": {1000, 0}, "slow_2s_80%": {1600, 0},
	"rare1_0s_50%": {209, 0}, "rare1_0s_80%": {337, 0},
	"rare5_0s_50%": {1086, 39100 * time.Millisecond}, "rare5_0s_80%": {1682, 34700 * time.Millisecond},
}

// plotted are the rows cmd/fleetplot draws, in its order, with the names
// its legend gives them.
var plotted = []struct{ row, name string }{
	{"bucket", "retry.Do with ExampleDo_budget's bucket"}, {"do", "retry.Do alone"},
	{"none", "no retry"}, {"failsafe-budget", "failsafe-go with budget.New()"},
}

// writeOverloadSeries writes the calls through per window after the end of
// c's outage, in the runs of the plotted rows, to a CSV file for
// cmd/fleetplot: one row per window, its start in milliseconds after the
// outage, then each row's calls through; the header says when each is back.
func writeOverloadSeries(name string, c overloadCell, runs map[string]overloadRun) error {
	rows := [][]string{{"ms"}}
	for _, p := range plotted {
		after := fmt.Sprintf("never back in %v", c.horizon)
		if r := runs[p.row].recovery; r >= 0 {
			after = "back after " + back(r)
		}
		rows[0] = append(rows[0], p.name+": "+after)
	}
	first := int((outageAt + c.outage) / window)
	for w := first; w < len(runs["none"].offered); w++ {
		row := []string{strconv.Itoa(int((time.Duration(w-first) * window) / time.Millisecond))}
		for _, p := range plotted {
			row = append(row, strconv.Itoa(runs[p.row].through[w]))
		}
		rows = append(rows, row)
	}
	var b strings.Builder
	if err := csv.NewWriter(&b).WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}

// errServiceUnavailable, errNotFound, errThrottled, refusal, throttle,
// bucket and record are ExampleDo_budget's, to the letter, as
// .ci/quickstart.go checks; the model answers errServiceUnavailable when it
// refuses a request at once.

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

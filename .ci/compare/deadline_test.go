// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bfc42b4f/retry"
)

// deadlineJobs are jobs that each call Do once, with a deadline, all
// started at the same instant in a synctest bubble. Every call of fn asks
// the dependency what it does: how long the call takes and its error, nil
// for a success. The dependency draws from the job's own source, seeded
// with the job's number, so only Do's draws vary from run to run. A call
// honors ctx: one the deadline reaches returns ctx's error at once.
type deadlineJobs struct {
	jobs       int
	policy     retry.Policy
	deadline   time.Duration
	dependency func(r *rand.Rand, at time.Duration) (took time.Duration, err error) // at: the call's start, after the jobs'
}

// A deadlineRun is what the jobs did.
type deadlineRun struct {
	jobs, through int
	calls         int // calls of fn, by all jobs
	lastSecond    int // calls that started in the deadline's last second
	cut           int // jobs whose last call the deadline cut short
}

func (r deadlineRun) String() string {
	return fmt.Sprintf("%.1f%% through, %.2f calls a job, %.2f in the last second, %.1f%% ended by a call cut short",
		r.share(r.through), float64(r.calls)/float64(r.jobs), float64(r.lastSecond)/float64(r.jobs), r.share(r.cut))
}

// share returns n as a percentage of the jobs.
func (r deadlineRun) share(n int) float64 { return 100 * float64(n) / float64(r.jobs) }

// hiddenDeadline is a ctx that is done at its deadline but does not report
// it, so that Do is not told the deadline: the deadline ends a wait, and
// shortens none.
type hiddenDeadline struct{ context.Context }

func (hiddenDeadline) Deadline() (time.Time, bool) { return time.Time{}, false }

// run runs the jobs, each with a ctx that tells Do its deadline if told is
// true, and one that hides it otherwise.
func (j deadlineJobs) run(t *testing.T, told bool) deadlineRun {
	run := deadlineRun{jobs: j.jobs}
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range j.jobs {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(54, uint64(i)))
				ctx, cancel := context.WithTimeout(context.Background(), j.deadline)
				defer cancel()
				if !told {
					ctx = hiddenDeadline{ctx}
				}
				var job deadlineRun
				cut := false
				err := retry.Do(ctx, j.policy, func(ctx context.Context) error {
					at := time.Since(start)
					job.calls++
					if at >= j.deadline-time.Second {
						job.lastSecond++
					}
					took, err := j.dependency(r, at)
					select {
					case <-time.After(took):
						return err
					case <-ctx.Done():
						cut = true
						return ctx.Err()
					}
				})
				mu.Lock()
				defer mu.Unlock()
				run.calls += job.calls
				run.lastSecond += job.lastSecond
				if err == nil {
					run.through++
				}
				if cut {
					run.cut++
				}
			})
		}
		wg.Wait()
	})
	return run
}

// backgroundJobs are README's background jobs, with a 30s deadline each,
// against a dependency that fails every call of 10ms until back, after the
// jobs' start.
func backgroundJobs(jobs int, back time.Duration) deadlineJobs {
	return deadlineJobs{
		jobs:     jobs,
		policy:   retry.Policy{Attempts: 10, BaseDelay: time.Second, MaxDelay: time.Minute},
		deadline: 30 * time.Second,
		dependency: func(_ *rand.Rand, at time.Duration) (time.Duration, error) {
			if at < back {
				return 10 * time.Millisecond, errUnavailable
			}
			return 10 * time.Millisecond, nil
		},
	}
}

// TestDeadlineNoBurst asserts that Do does not burst at a deadline: 5,000
// of README's background jobs against a dependency that never comes back
// make at most 8 calls a job, and at most 0.25 a job that start in the
// deadline's last second. Told the deadline, the jobs made 7.40 calls and
// 0.16 in the last second a job, the medians of 9 runs, with standard
// deviations of 0.49 and 0.44 a job. A job makes at most 10 calls, so by
// Bernstein's inequality the means exceed the bounds with chances below
// 1e-100 and 1e-17.
func TestDeadlineNoBurst(t *testing.T) {
	jobs := backgroundJobs(5000, time.Hour)
	told, hidden := jobs.run(t, true), jobs.run(t, false)
	t.Logf("told the deadline:     %v", told)
	t.Logf("not told the deadline: %v", hidden)
	n := float64(told.jobs)
	if calls, last := float64(told.calls)/n, float64(told.lastSecond)/n; calls > 8 || last > 0.25 {
		t.Errorf("told the deadline, %.2f calls a job and %.2f in its last second; want at most 8 and 0.25", calls, last)
	}
}

// TestDeadlineLateRecovery asserts that Do still catches a late recovery:
// of 5,000 background jobs against a dependency whose calls succeed from
// 20s after the jobs' start, 10s before their deadline, at least 80% get
// through. The jobs are independent, so by Chernoff's bound a share of
// 85.9% (the median of 9 runs) falls to 80% with a chance below 1e-28.
func TestDeadlineLateRecovery(t *testing.T) {
	jobs := backgroundJobs(5000, 20*time.Second)
	told, hidden := jobs.run(t, true), jobs.run(t, false)
	t.Logf("told the deadline:     %v", told)
	t.Logf("not told the deadline: %v", hidden)
	if got := told.share(told.through); got < 80 {
		t.Errorf("told the deadline, %.1f%% of jobs through; want at least 80%%", got)
	}
}

// TestDeadlineHintedRecovery asserts that a hinted wait goes on near a
// deadline: of 1,000 clients with a 2s deadline, told to wait 100ms by
// every failure of a dependency whose calls of 1ms succeed from 1.9s after
// the clients' start, at least 95% get through. By Chernoff's bound, a
// share of 98.8% (the median of 9 runs) falls to 95% with a chance below
// 1e-14.
func TestDeadlineHintedRecovery(t *testing.T) {
	jobs := deadlineJobs{
		jobs:     1000,
		policy:   retry.Policy{Attempts: 20},
		deadline: 2 * time.Second,
		dependency: func(_ *rand.Rand, at time.Duration) (time.Duration, error) {
			if at < 1900*time.Millisecond {
				return time.Millisecond, retry.After(errUnavailable, 100*time.Millisecond)
			}
			return time.Millisecond, nil
		},
	}
	told, hidden := jobs.run(t, true), jobs.run(t, false)
	t.Logf("told the deadline:     %v", told)
	t.Logf("not told the deadline: %v", hidden)
	if got := told.share(told.through); got < 95 {
		t.Errorf("told the deadline, %.1f%% of clients through; want at least 95%%", got)
	}
}

// slowCalls are Do calls with a 100ms deadline, whose calls take 10 to
// 30ms, uniformly, and succeed with a chance of success.
func slowCalls(jobs int, success float64) deadlineJobs {
	return deadlineJobs{
		jobs:     jobs,
		policy:   retry.Policy{Attempts: 10, BaseDelay: 10 * time.Millisecond},
		deadline: 100 * time.Millisecond,
		dependency: func(r *rand.Rand, _ time.Duration) (time.Duration, error) {
			took := 10*time.Millisecond + time.Duration(r.Int64N(int64(20*time.Millisecond)+1))
			if r.Float64() < success {
				return took, nil
			}
			return took, errUnavailable
		},
	}
}

// TestDeadlineFewCallsCut asserts that Do seldom starts a call the deadline
// cuts short, which wastes the dependency's work and returns ctx's error
// rather than fn's: of 10,000 Do calls whose calls always fail, at most 12%
// end with one. By Chernoff's bound, a share of 8.7% (the median of 9 runs)
// rises to 12% with a chance below 1e-26.
func TestDeadlineFewCallsCut(t *testing.T) {
	jobs := slowCalls(10000, 0)
	told, hidden := jobs.run(t, true), jobs.run(t, false)
	t.Logf("told the deadline:     %v", told)
	t.Logf("not told the deadline: %v", hidden)
	if got := told.share(told.cut); got > 12 {
		t.Errorf("told the deadline, %.1f%% of Do calls ended by a call cut short; want at most 12%%", got)
	}
}

// TestDeadlineSlowCallsThrough asserts that Do does not refuse too many
// calls that would have ended in time: of 20,000 Do calls whose calls
// succeed with a chance of 30%, at least 67% succeed. By Chernoff's bound,
// a share of 69.5% (the median of 9 runs) falls to 67% with a chance below
// 1e-12.
func TestDeadlineSlowCallsThrough(t *testing.T) {
	jobs := slowCalls(20000, 0.3)
	told, hidden := jobs.run(t, true), jobs.run(t, false)
	t.Logf("told the deadline:     %v", told)
	t.Logf("not told the deadline: %v", hidden)
	if got := told.share(told.through); got < 67 {
		t.Errorf("told the deadline, %.1f%% of Do calls through; want at least 67%%", got)
	}
}

// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v4"
	"github.com/bfc42b4f/retry"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	sethvargo "github.com/sethvargo/go-retry"
)

var (
	dbClients = flag.Int("db.clients", 40, "clients that each add 1 to the shared row")
	dbTrials  = flag.Int("db.trials", 5, "trials of every strategy, in rotated order")
	dbPause   = flag.Duration("db.pause", 2*time.Millisecond, "pause between the read and the write, standing in for network time")
	dbBase    = flag.Duration("db.base", 5*time.Millisecond, "the Base, or first wait, of every strategy")
	dbCap     = flag.Duration("db.cap", time.Second, "the cap on every strategy's wait")
)

// A strategy runs op until it succeeds, retrying only the errors it marks
// as retryable, with the Base and cap of the flags.
type strategy struct {
	name string
	do   func(ctx context.Context, op func(context.Context) (retryable bool, err error)) error
}

func strategies(base, limit time.Duration) []strategy {
	return []strategy{
		{"retry.Do", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			return retry.Do(ctx, retry.Policy{Attempts: 1 << 20, Base: base, Max: limit}, markPermanent(op, retry.Permanent))
		}},
		{"retry.Do, 2×Base", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			return retry.Do(ctx, retry.Policy{Attempts: 1 << 20, Base: 2 * base, Max: limit}, markPermanent(op, retry.Permanent))
		}},
		{"cenkalti/backoff (±50%)", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			b := &backoff.ExponentialBackOff{InitialInterval: base, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: limit}
			_, err := backoff.Retry(ctx, func() (struct{}, error) {
				return struct{}{}, markPermanent(op, func(err error) error { return backoff.Permanent(err) })(ctx)
			}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(0))
			return err
		}},
		{"avast/retry-go (+0-100ms)", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			return avast.Do(func() error { return markPermanent(op, avast.Unrecoverable)(ctx) },
				avast.Context(ctx), avast.UntilSucceeded(), avast.Delay(base), avast.MaxDelay(limit), avast.LastErrorOnly(true))
		}},
		{"sethvargo/go-retry (±50%)", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			b := sethvargo.WithCappedDuration(limit, sethvargo.WithJitterPercent(50, sethvargo.NewExponential(base)))
			return sethvargo.Do(ctx, b, func(ctx context.Context) error {
				if retryable, err := op(ctx); retryable {
					return sethvargo.RetryableError(err)
				} else {
					return err
				}
			})
		}},
		{"failsafe-go (±50%)", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			var retryable bool
			rp := retrypolicy.NewBuilder[any]().WithBackoff(base, limit).WithJitterFactor(0.5).WithMaxRetries(-1).
				HandleIf(func(_ any, err error) bool { return retryable }).ReturnLastFailure().Build()
			return failsafe.With[any](rp).WithContext(ctx).Run(func() (err error) {
				retryable, err = op(ctx)
				return err
			})
		}},
		{"exponential, no jitter", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			for n := 0; ; n++ {
				retryable, err := op(ctx)
				if !retryable {
					return err
				}
				if err := sleep(ctx, min(limit, base<<min(n, 30))); err != nil {
					return err
				}
			}
		}},
		{"no wait", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			for {
				if retryable, err := op(ctx); !retryable {
					return err
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}},
	}
}

// markPermanent turns op into an fn that returns a retryable error as it is
// and marks any other with permanent.
func markPermanent(op func(context.Context) (bool, error), permanent func(error) error) func(context.Context) error {
	return func(ctx context.Context) error {
		retryable, err := op(ctx)
		if err != nil && !retryable {
			return permanent(err)
		}
		return err
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// dbResult is what one strategy did in one trial.
type dbResult struct {
	attempts int64         // transactions begun, the work the database did
	finish   time.Duration // from the start until the last commit
}

// database returns a pool on PGURL, or skips t.
func database(t *testing.T) *pgxpool.Pool {
	url := os.Getenv("PGURL")
	if url == "" {
		t.Skip("PGURL is not set: the database case was skipped")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = int32(*dbClients)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS retry_counter (id int PRIMARY KEY, n int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return pool
}

// increment adds 1 to the shared row in a SERIALIZABLE read-modify-write
// transaction. It reports a serialization failure (SQLSTATE 40001) as
// retryable, and any other error as not.
func increment(ctx context.Context, pool *pgxpool.Pool, pause time.Duration) (retryable bool, err error) {
	tx, err := pool.BeginTx(ctx, pgxTxSerializable)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.Background())
	var n int
	if err := tx.QueryRow(ctx, `SELECT n FROM retry_counter WHERE id = 1`).Scan(&n); err != nil {
		return serialization(err), err
	}
	time.Sleep(pause)
	if _, err := tx.Exec(ctx, `UPDATE retry_counter SET n = $1 WHERE id = 1`, n+1); err != nil {
		return serialization(err), err
	}
	err = tx.Commit(ctx)
	return serialization(err), err
}

var pgxTxSerializable = pgx.TxOptions{IsoLevel: pgx.Serializable}

func serialization(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

// trial runs clients that each add 1 to a counter set to 0, with s, and
// checks that the counter ends at exactly the number of clients.
func trial(t *testing.T, pool *pgxpool.Pool, s strategy) dbResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := pool.Exec(ctx, `INSERT INTO retry_counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = 0`); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int64
	var last atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range *dbClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.do(ctx, func(ctx context.Context) (bool, error) {
				attempts.Add(1)
				return increment(ctx, pool, *dbPause)
			})
			if err != nil {
				t.Errorf("%s: a client failed: %v", s.name, err)
				return
			}
			for done := int64(time.Since(start)); ; {
				if old := last.Load(); done <= old || last.CompareAndSwap(old, done) {
					break
				}
			}
		}()
	}
	wg.Wait()
	var n int
	if err := pool.QueryRow(ctx, `SELECT n FROM retry_counter WHERE id = 1`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != *dbClients {
		t.Errorf("%s: the counter is %d after %d clients each added 1, want %d: an update was lost or applied twice", s.name, n, *dbClients, *dbClients)
	}
	return dbResult{attempts: attempts.Load(), finish: time.Duration(last.Load())}
}

// runTrials runs every strategy dbTrials times, rotating the order so that
// none always runs first or last, and returns each one's results.
func runTrials(t *testing.T, pool *pgxpool.Pool, ss []strategy) [][]dbResult {
	results := make([][]dbResult, len(ss))
	for trialN := range *dbTrials {
		for i := range ss {
			k := (i + trialN) % len(ss)
			results[k] = append(results[k], trial(t, pool, ss[k]))
		}
	}
	return results
}

// median returns the median of xs, which it sorts.
func median[T int64 | time.Duration](xs []T) T {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// summary returns the median attempts and time to the last commit of rs.
func summary(rs []dbResult) (attempts int64, finish time.Duration) {
	var as []int64
	var fs []time.Duration
	for _, r := range rs {
		as, fs = append(as, r.attempts), append(fs, r.finish)
	}
	return median(as), median(fs)
}

// TestDatabase runs the README's database table: clients contend for one
// row of a real PostgreSQL, and each strategy retries their serialization
// failures with the same Base and cap.
func TestDatabase(t *testing.T) {
	pool := database(t)
	ss := strategies(*dbBase, *dbCap)
	results := runTrials(t, pool, ss)
	t.Logf("%d clients, pause %v, Base %v, cap %v, median of %d trials in rotated order:",
		*dbClients, *dbPause, *dbBase, *dbCap, *dbTrials)
	logTable(t, "strategy", ss, results)
}

// logTable logs the results of each strategy as a Markdown table.
func logTable(t *testing.T, first string, ss []strategy, results [][]dbResult) {
	t.Logf("| %s | attempts | per client | time to the last commit | all trials (attempts / time) |", first)
	t.Logf("| --- | --- | --- | --- | --- |")
	for i, s := range ss {
		attempts, finish := summary(slices.Clone(results[i]))
		t.Logf("| %s | %d | %.1f | %v | %s |", s.name, attempts, float64(attempts)/float64(*dbClients),
			finish.Round(time.Millisecond), trials(results[i]))
	}
}

// TestDatabaseBase runs retry.Do alone at several Bases, for the README's
// "Choosing a Policy".
func TestDatabaseBase(t *testing.T) {
	pool := database(t)
	var ss []strategy
	for _, base := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond} {
		s := strategies(base, *dbCap)[0]
		s.name = base.String()
		ss = append(ss, s)
	}
	results := runTrials(t, pool, ss)
	t.Logf("retry.Do, %d clients, pause %v, Max %v, median of %d trials in rotated order:", *dbClients, *dbPause, *dbCap, *dbTrials)
	logTable(t, "Base", ss, results)
}

func trials(rs []dbResult) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d / %v", r.attempts, r.finish.Round(time.Millisecond))
	}
	return s
}

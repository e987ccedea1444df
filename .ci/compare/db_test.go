// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v5"
	"github.com/bfc42b4f/retry"
	"github.com/cenkalti/backoff/v7"
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
	dbBase    = flag.Duration("db.base", 5*time.Millisecond, "the BaseDelay, or first wait, of every strategy")
	dbCap     = flag.Duration("db.cap", time.Second, "the cap on every strategy's wait")
	dbBases   = flag.String("db.bases", "5ms,10ms,20ms,50ms,100ms,200ms", "the Bases of TestDatabaseBase, comma-separated")
)

// A strategy runs op until it succeeds, retrying only the errors it marks
// as retryable, with the BaseDelay and cap of the flags.
type strategy struct {
	name string
	do   func(ctx context.Context, op func(context.Context) (retryable bool, err error)) error
}

func strategies(base, limit time.Duration) []strategy {
	return []strategy{
		{"retry.Do", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			return retry.Do(ctx, retry.Policy{Attempts: 1 << 20, BaseDelay: base, MaxDelay: limit}, classified(op))
		}},
		{"retry.Do, 2×BaseDelay", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			return retry.Do(ctx, retry.Policy{Attempts: 1 << 20, BaseDelay: 2 * base, MaxDelay: limit}, classified(op))
		}},
		{"cenkalti/backoff (±50%)", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			b := &backoff.ExponentialBackOff{InitialInterval: base, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: limit}
			_, err := backoff.Retry(ctx, func() (struct{}, error) {
				return struct{}{}, markPermanent(op, func(err error) error { return backoff.Permanent(err) })(ctx)
			}, backoff.WithBackOff(b), backoff.WithMaxElapsedTime(0))
			return err
		}},
		{"avast/retry-go (+0-100ms)", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			return avast.New(avast.Context(ctx), avast.UntilSucceeded(), avast.Delay(base), avast.MaxDelay(limit), avast.LastErrorOnly(true)).
				Do(func() error { return markPermanent(op, avast.Unrecoverable)(ctx) })
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

// classified turns op into an fn for retry.Do that returns op's error
// through classify.
func classified(op func(context.Context) (bool, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := op(ctx)
		return classify(ctx, err)
	}
}

// TestDatabaseClassify checks classify on errors that a real PostgreSQL
// returns: a serialization failure, from two SERIALIZABLE transactions
// that update one row, is retried; a unique violation (23505) stops Do at
// once, and errors.As finds pgx's error in what Do returns. It checks too
// that runTx retries an attempt past its timeout and a COMMIT that pgx
// never sent.
func TestDatabaseClassify(t *testing.T) {
	pool := database(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO retry_counter VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET n = 0`); err != nil {
		t.Fatal(err)
	}
	first, err := pool.BeginTx(ctx, pgxTxSerializable)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback(ctx)
	second, err := pool.BeginTx(ctx, pgxTxSerializable)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Rollback(ctx)
	for _, tx := range []pgx.Tx{first, second} {
		var n int
		if err := tx.QueryRow(ctx, `SELECT n FROM retry_counter WHERE id = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := first.Exec(ctx, `UPDATE retry_counter SET n = n + 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_, conflict := second.Exec(ctx, `UPDATE retry_counter SET n = n + 1 WHERE id = 1`)
	_, duplicate := pool.Exec(ctx, `INSERT INTO retry_counter VALUES (1, 0)`)
	for _, tt := range []struct {
		err   error
		state string
		calls int
	}{{conflict, "40001", 3}, {duplicate, "23505", 1}} {
		var pgErr *pgconn.PgError
		if !errors.As(tt.err, &pgErr) || pgErr.Code != tt.state {
			t.Fatalf("the database returned %v, want SQLSTATE %s", tt.err, tt.state)
		}
		calls := 0
		err := retry.Do(ctx, retry.Policy{Attempts: 3, BaseDelay: time.Millisecond}, func(ctx context.Context) error {
			calls++
			return classify(ctx, tt.err)
		})
		if !errors.As(err, &pgErr) || pgErr != tt.err || calls != tt.calls {
			t.Errorf("Do(classify(SQLSTATE %s)) = %v after %d calls, want pgx's error after %d", tt.state, err, calls, tt.calls)
		}
	}
	// Once ctx is done, classify marks nothing, so Do reports the stop.
	stop, cancel := context.WithCancelCause(ctx)
	shutdown := errors.New("shutting down")
	err = retry.Do(stop, retry.Policy{}, func(ctx context.Context) error {
		cancel(shutdown)
		return classify(ctx, duplicate)
	})
	if !errors.Is(err, shutdown) || !errors.Is(err, duplicate) {
		t.Errorf("Do(classify(SQLSTATE 23505)) with ctx canceled = %v, want the cause %v and the database's error", err, shutdown)
	}
	// An attempt that outlasts its own timeout is retried, whatever pgx
	// returns for it, as runTx hands classify the attempt's ctx.
	var timedOut error
	calls := 0
	err = retry.Do(ctx, retry.Policy{Attempts: 3, BaseDelay: time.Millisecond}, func(ctx context.Context) error {
		return runTx(ctx, time.Second, pool.Begin, func(ctx context.Context, tx pgx.Tx) error {
			calls++
			_, err := tx.Exec(ctx, `SELECT pg_sleep($1)`, map[bool]float64{true: 10, false: 0}[calls == 1])
			if calls == 1 {
				timedOut = err
			}
			return err
		})
	})
	if err != nil || calls != 2 || timedOut == nil {
		t.Errorf("Do(runTx) with a first attempt past its timeout (%v) = %v after %d calls, want nil after 2", timedOut, err, calls)
	}
	t.Logf("pgx's error for an attempt past its timeout: %v", timedOut)
	// A COMMIT on a connection closed before it was sent is retried, as
	// pgx's error says that nothing was sent.
	var unsent error
	calls = 0
	err = retry.Do(ctx, retry.Policy{Attempts: 3, BaseDelay: time.Millisecond}, func(ctx context.Context) error {
		err := runTx(ctx, time.Second, pool.Begin, func(ctx context.Context, tx pgx.Tx) error {
			if calls++; calls == 1 {
				return tx.Conn().Close(ctx)
			}
			return nil
		})
		if calls == 1 {
			unsent = err
		}
		return err
	})
	if err != nil || calls != 2 || unsent == nil {
		t.Errorf("Do(runTx) with a first COMMIT on a closed connection (%v) = %v after %d calls, want nil after 2", unsent, err, calls)
	}
	t.Logf("pgx's error for a COMMIT on a closed connection: %v", unsent)
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
	failed   int64         // clients that gave up on a serialization failure
	most     int64         // the most attempts one client made
	spent    time.Duration // the time of every attempt, added up
	clients  []int64       // each client's attempts, negative if it gave up
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
	// Open every connection now, so that the first trial's clients do not
	// queue for connections the others find open, which spread them apart.
	var conns []*pgxpool.Conn
	for range cfg.MaxConns {
		c, err := pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
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
	var attempts, last, failed, most, spent atomic.Int64
	clients := make([]int64, *dbClients)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine int64
			err := s.do(ctx, func(ctx context.Context) (bool, error) {
				attempts.Add(1)
				mine++
				began := time.Now()
				defer func() { spent.Add(int64(time.Since(began))) }()
				return increment(ctx, pool, *dbPause)
			})
			raise(&most, mine)
			clients[i] = mine
			if err != nil {
				clients[i] = -mine
				// A client that gave up on a serialization failure is
				// counted; the tests say which strategies may give up.
				if failed.Add(1); !serialization(err) {
					t.Errorf("%s: a client failed: %v", s.name, err)
				}
				return
			}
			raise(&last, int64(time.Since(start)))
		}()
	}
	wg.Wait()
	var n int
	if err := pool.QueryRow(ctx, `SELECT n FROM retry_counter WHERE id = 1`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := *dbClients - int(failed.Load()); n != want {
		t.Errorf("%s: the counter is %d after %d clients each added 1, want %d: an update was lost or applied twice", s.name, n, want, want)
	}
	return dbResult{attempts: attempts.Load(), finish: time.Duration(last.Load()), failed: failed.Load(), most: most.Load(),
		spent: time.Duration(spent.Load()), clients: clients}
}

// raise sets a to v if v is larger.
func raise(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
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

// summary returns the medians of rs: attempts, time to the last commit,
// clients that gave up, the most attempts of one client, and, in spent,
// the mean time of an attempt.
func summary(rs []dbResult) dbResult {
	var as, gs, ms []int64
	var fs, ts []time.Duration
	for _, r := range rs {
		as, fs, gs, ms = append(as, r.attempts), append(fs, r.finish), append(gs, r.failed), append(ms, r.most)
		ts = append(ts, r.spent/time.Duration(max(r.attempts, 1)))
	}
	return dbResult{attempts: median(as), finish: median(fs), failed: median(gs), most: median(ms), spent: median(ts)}
}

// TestDatabase runs the evidence document's database table: clients contend
// for one row of a real PostgreSQL, and each strategy retries their
// serialization failures with the same BaseDelay and cap. Each client adds 1 to
// the row in a SERIALIZABLE read-modify-write transaction, with a pause of
// -db.pause (2ms) between the read and the write standing in for network
// time; every trial checks that the counter ends at the number of commits.
// Each peer runs its exponential backoff with the jitter its README
// offers: ±50% for cenkalti/backoff (its default), sethvargo/go-retry
// (WithJitterPercent(50)) and failsafe-go (WithJitterFactor(0.5)), and
// avast/retry-go's default, a draw from [0, 100ms) added to every wait.
// retry.Do runs at twice the BaseDelay too, since a full-jitter draw averages
// half its ceiling where a ±50% draw averages the whole interval. Time to
// the last commit varies by a factor of two between trials of one
// strategy. It asserts, on the medians, what a busy machine did not flip:
// retry.Do's last commit at most a third as late as the un-jittered loop's,
// and the loop that does not wait at 1.25 times retry.Do's attempts at
// least. How Do's attempts compare with the un-jittered loop's is logged,
// not asserted: under load the loop made as few as 1.05 times Do's.
func TestDatabase(t *testing.T) {
	pool := database(t)
	ss := strategies(*dbBase, *dbCap)
	results := runTrials(t, pool, ss)
	t.Logf("%d clients, pause %v, BaseDelay %v, cap %v, median of %d trials in rotated order:",
		*dbClients, *dbPause, *dbBase, *dbCap, *dbTrials)
	med := logTable(t, "strategy", ss, results)
	noGiveUp(t, ss, results)
	do, lockstep, eager := med["retry.Do"], med["exponential, no jitter"], med["no wait"]
	if do.finish*3 > lockstep.finish {
		t.Errorf("retry.Do's last commit came after %v, want at most a third of the un-jittered loop's %v", do.finish, lockstep.finish)
	}
	if eager.attempts*4 < do.attempts*5 {
		t.Errorf("the loop that does not wait made %d attempts, want 1.25 times retry.Do's %d at least", eager.attempts, do.attempts)
	}
}

// logTable logs the results of each strategy as a Markdown table, and
// returns each one's medians by name.
func logTable(t *testing.T, first string, ss []strategy, results [][]dbResult) map[string]dbResult {
	med := map[string]dbResult{}
	t.Logf("| %s | attempts | per commit | most by one client | time to the last commit | gave up | mean attempt | all trials (attempts / time) |", first)
	t.Logf("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for i, s := range ss {
		m := summary(results[i])
		med[s.name] = m
		commits := float64(int64(*dbClients) - m.failed)
		t.Logf("| %s | %d | %.1f | %d | %v | %d | %v | %s |", s.name, m.attempts, float64(m.attempts)/commits,
			m.most, m.finish.Round(time.Millisecond), m.failed, m.spent.Round(10*time.Microsecond), trials(results[i]))
	}
	return med
}

// TestDatabaseBase runs retry.Do alone at each BaseDelay of -db.bases, with
// unlimited attempts and the cap of -db.cap as MaxDelay, beside the README's
// Policy for a transaction, the zero Policy and the peers' defaults: the
// sweep behind the README's advice to set BaseDelay to about N × t, where N
// clients contend for the row and an attempt holds it for t. Run it at
// several -db.clients: the BaseDelay that does the least work grows with the
// number of clients that collide. Its table gives, for each, the most
// attempts one client made, how many gave up, and the mean time of an
// attempt.
//
// It asserts that no client of a BaseDelay gave up, and, with 40 clients or
// more, that BaseDelay 100ms made at least a quarter fewer attempts than BaseDelay
// 10ms (medians), when -db.bases holds both. It asserts too that no client
// gave up under the README's Policy, which stops after 10 attempts. That
// fails falsely with a chance of about 1e-4 a run of 3 trials, as
// logFailures estimates it from 5 runs beside the evidence README's load:
// of the clients' first to fourth attempts, 95, 65, 49 and 26% failed, and
// 8 of the 55 from the fifth on, 15%, so that a client fails ten in a row
// with a chance of about 0.95 × 0.65 × 0.49 × 0.26 × 0.15⁶, 9.0e-7, and one
// of a run's 120 clients with 120 times that.
func TestDatabaseBase(t *testing.T) {
	pool := database(t)
	var ss []strategy
	for _, b := range strings.Split(*dbBases, ",") {
		base, err := time.ParseDuration(b)
		if err != nil {
			t.Fatalf("-db.bases: %v", err)
		}
		s := strategies(base, *dbCap)[0]
		s.name = "BaseDelay " + base.String()
		ss = append(ss, s)
	}
	ss = append(ss, strategy{"retry.Do, the README's Policy", func(ctx context.Context, op func(context.Context) (bool, error)) error {
		return retry.Do(ctx, transaction, classified(op))
	}})
	finish := len(ss) // the strategies that no client may give up on
	ss = append(ss, defaults()...)
	results := runTrials(t, pool, ss)
	t.Logf("%d clients, pause %v, MaxDelay %v, median of %d trials in rotated order:", *dbClients, *dbPause, *dbCap, *dbTrials)
	med := logTable(t, "strategy", ss, results)
	logFailures(t, ss[finish-1].name, results[finish-1])
	noGiveUp(t, ss[:finish], results)
	short, long := med["BaseDelay 10ms"], med["BaseDelay 100ms"]
	if *dbClients >= 40 && short.attempts > 0 && long.attempts > 0 && long.attempts*4 > short.attempts*3 {
		t.Errorf("%d clients: BaseDelay 100ms made %d attempts, want a quarter fewer than BaseDelay 10ms's %d at least", *dbClients, long.attempts, short.attempts)
	}
}

// noGiveUp checks that no client of ss gave up.
func noGiveUp(t *testing.T, ss []strategy, results [][]dbResult) {
	for i, s := range ss {
		for _, r := range results[i] {
			if r.failed != 0 {
				t.Errorf("%s: %d clients gave up in a trial, want none", s.name, r.failed)
			}
		}
	}
}

// logFailures logs, over every trial of rs, how many of the clients' k-th
// attempts failed, of those made, and the chance that a client fails ten
// in a row: the rates of the first four times, for the fifth to the tenth,
// the rate of all the attempts from the fifth on, as if each failed
// independently at that rate. From the fifth on, the waits before an
// attempt are at their longest and fewer clients remain, so the rate falls
// with each attempt rather than rising.
func logFailures(t *testing.T, name string, rs []dbResult) {
	var made, failed [11]int64
	for _, r := range rs {
		for _, a := range r.clients {
			n := min(abs(a), 10)
			for k := int64(1); k <= n; k++ {
				made[k]++
				if k < n || a < 0 {
					failed[k]++
				}
			}
		}
	}
	var line string
	chance, late, lateFailed := 1.0, int64(0), int64(0)
	for k := 1; k <= 10 && made[k] > 0; k++ {
		line += fmt.Sprintf(" %d: %d/%d", k, failed[k], made[k])
		if k < 5 {
			chance *= float64(failed[k]) / float64(made[k])
		} else {
			late, lateFailed = late+made[k], lateFailed+failed[k]
		}
	}
	t.Logf("%s, failed of the attempts made, by attempt:%s", name, line)
	if late > 0 {
		q := float64(lateFailed) / float64(late)
		t.Logf("%s: attempts from the fifth on failed at a rate of %.3f; ten failures in a row, about %.1g a client",
			name, q, chance*math.Pow(q, 6))
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// transaction is the Policy that README.md's "Choosing a Policy" gives for a
// database transaction.
var transaction = retry.Policy{Attempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}

// defaults returns the strategies that take each library's defaults, which
// may give up: the zero Policy after 4 attempts, avast/retry-go after 10,
// cenkalti/backoff after 15 minutes.
func defaults() []strategy {
	return []strategy{
		{"retry.Do, zero Policy", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			return retry.Do(ctx, retry.Policy{}, classified(op))
		}},
		{"cenkalti/backoff, defaults", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			_, err := backoff.Retry(ctx, func() (struct{}, error) {
				return struct{}{}, markPermanent(op, func(err error) error { return backoff.Permanent(err) })(ctx)
			})
			return err
		}},
		{"avast/retry-go, defaults", func(ctx context.Context, op func(context.Context) (bool, error)) error {
			return avast.New(avast.Context(ctx), avast.LastErrorOnly(true)).
				Do(func() error { return markPermanent(op, avast.Unrecoverable)(ctx) })
		}},
	}
}

func trials(rs []dbResult) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d / %v", r.attempts, r.finish.Round(time.Millisecond))
		if r.failed > 0 {
			s += fmt.Sprintf(" / %d gave up", r.failed)
		}
	}
	return s
}

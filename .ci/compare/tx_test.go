// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bfc42b4f/retry"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// txn, runTx, errUnknownOutcome, classify and conflict are
// ExampleDo_transaction's, to the letter, as .ci/quickstart.go checks.

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

// TestRunTxRetriesWhatTheServerRolledBack runs ExampleDo_transaction's
// runTx with a first attempt that fails, in its statements or at COMMIT,
// and a second that commits. A statement that outlasts the attempt's
// timeout is retried, whatever it returns then: ctx's error, pgx's wrap of
// it or the server's 57014 (a statement canceled); an end of Do's own ctx
// stops Do with Do's error. A statement that loses its connection, or that
// a restart ends (57P01), is retried; a unique violation (23505) is not,
// nor pgx.ErrNoRows that the work marks Permanent where a row must exist. A COMMIT that fails to serialize,
// or that was never sent, is retried; one that outlasts the attempt's
// timeout, or loses its connection once sent, is not, and Do's error
// matches errUnknownOutcome.
func TestRunTxRetriesWhatTheServerRolledBack(t *testing.T) {
	canceled := &pgconn.PgError{Code: "57014", Message: "canceling statement due to user request"}
	serialization := &pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"}
	shutdown := &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}
	duplicate := &pgconn.PgError{Code: "23505", Message: "duplicate key value violates unique constraint"}
	outlast := func(err func(context.Context) error) func(context.Context) error {
		return func(ctx context.Context) error {
			<-ctx.Done() // a statement or COMMIT that outlasts the attempt's timeout
			return err(ctx)
		}
	}
	fails := func(err error) func(context.Context) error {
		return func(context.Context) error { return err }
	}
	for _, tt := range []struct {
		name         string
		whole        time.Duration               // Do's deadline
		work, commit func(context.Context) error // the first attempt's; nil for none
		calls        int
		is           error // what Do's error matches; nil for a commit
	}{
		{"a statement past the attempt's timeout, ctx's error", time.Minute, outlast(context.Cause), nil, 2, nil},
		{"a statement past the attempt's timeout, pgx's wrap", time.Minute, outlast(func(ctx context.Context) error {
			return fmt.Errorf("timeout: %w", ctx.Err())
		}), nil, 2, nil},
		{"a statement past the attempt's timeout, 57014", time.Minute, outlast(fails(canceled)), nil, 2, nil},
		{"a statement past Do's deadline", 50 * time.Millisecond, outlast(context.Cause), nil, 1, context.DeadlineExceeded},
		{"a statement that loses its connection", time.Minute, fails(io.ErrUnexpectedEOF), nil, 2, nil},
		{"a statement that a restart ends, 57P01", time.Minute, fails(shutdown), nil, 2, nil},
		{"a statement that breaks a unique constraint, 23505", time.Minute, fails(duplicate), nil, 1, duplicate},
		{"a row that must exist missing, which the work marks Permanent", time.Minute,
			fails(retry.Permanent(fmt.Errorf("account 7: %w", pgx.ErrNoRows))), nil, 1, pgx.ErrNoRows},
		{"a COMMIT that fails to serialize", time.Minute, nil, fails(serialization), 2, nil},
		{"a COMMIT never sent", time.Minute, nil, fails(sendError{unsent: true}), 2, nil},
		{"a COMMIT past the attempt's timeout", time.Minute, nil, outlast(context.Cause), 1, errUnknownOutcome},
		{"a COMMIT that loses its connection", time.Minute, nil, fails(io.ErrUnexpectedEOF), 1, errUnknownOutcome},
		{"a COMMIT sent, then its connection lost", time.Minute, nil, fails(sendError{unsent: false}), 1, errUnknownOutcome},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), tt.whole)
				defer cancel()
				calls := 0
				begin := func(context.Context) (*stubTx, error) {
					calls++
					if calls > 1 {
						return &stubTx{}, nil
					}
					return &stubTx{commit: tt.commit}, nil
				}
				p := retry.Policy{Attempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
				err := retry.Do(ctx, p, func(ctx context.Context) error {
					return runTx(ctx, 100*time.Millisecond, begin, func(ctx context.Context, _ *stubTx) error {
						if calls > 1 || tt.work == nil {
							return nil
						}
						return tt.work(ctx)
					})
				})
				if calls != tt.calls || (tt.is == nil) != (err == nil) || tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("Do() = %v after %d calls, want an error matching %v after %d", err, calls, tt.is, tt.calls)
				}
			})
		})
	}
}

// A sendError stands for pgconn's errors, whose SafeToRetry method returns
// true if nothing was sent to the server.
type sendError struct{ unsent bool }

func (e sendError) Error() string     { return "conn closed" }
func (e sendError) SafeToRetry() bool { return e.unsent }

// A stubTx is a transaction whose COMMIT calls commit, if not nil.
type stubTx struct{ commit func(context.Context) error }

func (t *stubTx) Commit(ctx context.Context) error {
	if t.commit == nil {
		return nil
	}
	return t.commit(ctx)
}

func (t *stubTx) Rollback(context.Context) error { return nil }

// The settings of TestDatabaseTransactionAppliedOnce.
const (
	txClients      = 20
	txOpsPerClient = 20
	txTimeout      = time.Second                      // each attempt's, as runTx takes it
	txSlowCommit   = txTimeout + 500*time.Millisecond // how long a slow operation's COMMIT takes
	txSlowEvery    = 100                              // one operation in txSlowEvery is slow
)

// TestDatabaseTransactionAppliedOnce runs ExampleDo_transaction's pattern,
// with its Policy, on a real PostgreSQL: 20 clients each make 20
// operations, each one a call of Do whose transaction, through runTx, adds
// 1 to a counter row that every client shares and inserts a record of the
// operation, in SERIALIZABLE isolation, with attempts of 1s. A deferred
// constraint trigger makes the COMMIT of one operation in 100 sleep 1.5s,
// and ignores the cancel pgx sends when the attempt times out, as a COMMIT
// waiting for a standby does: so those COMMITs always time out, and the
// server commits them all the same. With the earlier runTx, which retried
// a COMMIT that timed out, each was applied several times.
// No operation may be applied twice, every call that returned nil must have
// been applied once, every call that returned an error not matching
// errUnknownOutcome must not have been applied, the counter must equal the
// records, and at least one call must end with errUnknownOutcome. It logs
// how many did, and how many of those were applied.
func TestDatabaseTransactionAppliedOnce(t *testing.T) {
	url := os.Getenv("PGURL")
	if url == "" {
		t.Skip("PGURL is not set: the database case was skipped")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = txClients
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	setup := fmt.Sprintf(`
DROP TABLE IF EXISTS retry_tx_counter, retry_tx_ops;
CREATE TABLE retry_tx_counter (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO retry_tx_counter VALUES (1, 0);
-- No key: an operation applied twice leaves two records.
CREATE TABLE retry_tx_ops (op int NOT NULL);
CREATE OR REPLACE FUNCTION retry_tx_slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.op %% %d = 0 THEN
		PERFORM pg_sleep(%g);
	END IF;
	RETURN NULL;
EXCEPTION WHEN query_canceled THEN
	RETURN NULL; -- and COMMIT goes on
END $$;
CREATE CONSTRAINT TRIGGER retry_tx_slow AFTER INSERT ON retry_tx_ops
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION retry_tx_slow();`,
		txSlowEvery, txSlowCommit.Seconds())
	if _, err := pool.Exec(ctx, setup); err != nil {
		t.Fatal(err)
	}
	begin := func(ctx context.Context) (pgx.Tx, error) {
		return pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	}
	p := retry.Policy{Attempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second} // the example's
	results := make([]error, txClients*txOpsPerClient+1)                                      // by operation, from 1
	var wg sync.WaitGroup
	for c := range txClients {
		wg.Go(func() {
			for i := range txOpsPerClient {
				op := c*txOpsPerClient + i + 1
				results[op] = retry.Do(ctx, p, func(ctx context.Context) error {
					return runTx(ctx, txTimeout, begin, func(ctx context.Context, tx pgx.Tx) error {
						if _, err := tx.Exec(ctx, `UPDATE retry_tx_counter SET n = n + 1 WHERE id = 1`); err != nil {
							return err
						}
						_, err := tx.Exec(ctx, `INSERT INTO retry_tx_ops VALUES ($1)`, op)
						return err
					})
				})
			}
		})
	}
	wg.Wait()
	// A COMMIT the client gave up on may still be running on the server.
	time.Sleep(txSlowCommit)

	applied := map[int]int{}
	rows, err := pool.Query(ctx, `SELECT op, count(*) FROM retry_tx_ops GROUP BY op`)
	if err != nil {
		t.Fatal(err)
	}
	records := 0
	for rows.Next() {
		var op, n int
		if err := rows.Scan(&op, &n); err != nil {
			t.Fatal(err)
		}
		applied[op], records = n, records+n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var counter int
	if err := pool.QueryRow(ctx, `SELECT n FROM retry_tx_counter WHERE id = 1`).Scan(&counter); err != nil {
		t.Fatal(err)
	}
	var committed, unknown, unknownApplied int
	failed := map[string]int{} // by error message
	for op := 1; op < len(results); op++ {
		err, n := results[op], applied[op]
		switch {
		case n > 1:
			t.Errorf("operation %d was applied %d times; Do returned %v", op, n, err)
		case err == nil:
			committed++
			if n != 1 {
				t.Errorf("operation %d: Do returned nil, but it was applied %d times, want once", op, n)
			}
		case errors.Is(err, errUnknownOutcome):
			unknown++
			unknownApplied += n
		default:
			failed[err.Error()]++
			if n != 0 {
				t.Errorf("operation %d: Do returned %v, but it was applied, want not", op, err)
			}
		}
	}
	t.Logf("%d operations: %d returned nil, %d an unknown outcome (%d of them applied), and %d another error: %v",
		len(results)-1, committed, unknown, unknownApplied, len(results)-1-committed-unknown, failed)
	if counter != records {
		t.Errorf("the counter is %d and there are %d records, want them equal", counter, records)
	}
	if unknown == 0 {
		t.Errorf("no call ended with an unknown outcome, want some: one COMMIT in %d outlasts the attempt's timeout", txSlowEvery)
	}
}

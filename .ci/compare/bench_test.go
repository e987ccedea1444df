// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v5"
	"github.com/bfc42b4f/retry"
	"github.com/cenkalti/backoff/v7"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	sethvargo "github.com/sethvargo/go-retry"
)

// A library is one way to call an operation with retries, built the way the
// library's README shows, with waits of 1ns so that its own cost shows.
type library struct {
	name string
	// setup says what each call builds, for the README's table.
	setup string
	// do calls op through the library n times, one call after another, and
	// returns the first error. The loop is in each library's do, not in the
	// benchmark, so that the benchmark's loop calls the library directly, as
	// users do, rather than through this table.
	do func(ctx context.Context, n int, op func(context.Context) error) error
}

// requestKey is the key of the value a request-like ctx carries.
type requestKey struct{}

// requestContext returns a ctx like the one net/http hands a handler: one
// that can be canceled and carries a value.
func requestContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	return context.WithValue(ctx, requestKey{}, "request-id"), cancel
}

// failsafePolicy is built once: a failsafe RetryPolicy is safe to share.
var failsafePolicy = retrypolicy.NewBuilder[any]().WithBackoff(1, 1).WithMaxRetries(4).Build()

// avastRetriers are built once for each ctx and reused, as avast's README
// advises for calls made often: a ctx is one of a Retrier's options, so a
// server that gets a ctx per request builds one per request
// (TestAllocationsFirstTrySuccess counts that too).
var avastRetriers = map[context.Context]*avast.Retrier{}

func avastRetrier(ctx context.Context) *avast.Retrier {
	r, ok := avastRetriers[ctx]
	if !ok {
		r = avast.New(avast.Context(ctx), avast.Attempts(5), avast.Delay(1), avast.MaxJitter(1))
		avastRetriers[ctx] = r
	}
	return r
}

var libraries = []library{
	{"this package", "a Policy value, nothing built", func(ctx context.Context, n int, op func(context.Context) error) error {
		for range n {
			if err := retry.Do(ctx, retry.Policy{Attempts: 5, BaseDelay: 1, MaxDelay: 1}, op); err != nil {
				return err
			}
		}
		return nil
	}},
	{"cenkalti/backoff v7", "an ExponentialBackOff and 2 options per call", func(ctx context.Context, n int, op func(context.Context) error) error {
		for range n {
			b := &backoff.ExponentialBackOff{InitialInterval: 1, RandomizationFactor: 0.5, Multiplier: 1.5, MaxInterval: 1}
			_, err := backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, op(ctx) },
				backoff.WithBackOff(b), backoff.WithMaxTries(5))
			if err != nil {
				return err
			}
		}
		return nil
	}},
	{"avast/retry-go v5", "a Retrier with 4 options built once per ctx", func(ctx context.Context, n int, op func(context.Context) error) error {
		r := avastRetrier(ctx)
		for range n {
			if err := r.Do(func() error { return op(ctx) }); err != nil {
				return err
			}
		}
		return nil
	}},
	{"sethvargo/go-retry", "an Exponential backoff and a WithMaxRetries per call", func(ctx context.Context, n int, op func(context.Context) error) error {
		for range n {
			err := sethvargo.Do(ctx, sethvargo.WithMaxRetries(4, sethvargo.NewExponential(1)), func(ctx context.Context) error {
				if err := op(ctx); err != nil {
					return sethvargo.RetryableError(err)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}},
	{"failsafe-go", "a RetryPolicy built once, an executor per call", func(ctx context.Context, n int, op func(context.Context) error) error {
		for range n {
			if err := failsafe.With[any](failsafePolicy).WithContext(ctx).Run(func() error { return op(ctx) }); err != nil {
				return err
			}
		}
		return nil
	}},
}

// succeed is the operation of a first try, and the baseline's: the compiler
// does not inline it, so that a direct call of it costs what a call of a
// user's function costs.
//
//go:noinline
func succeed(context.Context) error { return nil }

// failTwice returns an operation that fails twice, then succeeds, over and
// over.
func failTwice() func(context.Context) error {
	calls := 0
	return func(context.Context) error {
		if calls++; calls%3 != 0 {
			return errBoom
		}
		return nil
	}
}

// contexts are the two contexts the benchmarks run with: one that can never
// be canceled, and a request-like one.
func contexts(b *testing.B) []struct {
	name string
	ctx  context.Context
} {
	request, cancel := requestContext()
	b.Cleanup(cancel)
	return []struct {
		name string
		ctx  context.Context
	}{{"background", context.Background()}, {"request", request}}
}

// BenchmarkFirstTry measures a call that succeeds at once: first a direct
// call of fn, the baseline, then each library.
func BenchmarkFirstTry(b *testing.B) {
	for _, ctx := range contexts(b) {
		b.Run(ctx.name+"/direct call of fn", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := succeed(ctx.ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, lib := range libraries {
			b.Run(ctx.name+"/"+lib.name, func(b *testing.B) {
				b.ReportAllocs()
				if err := lib.do(ctx.ctx, b.N, succeed); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkTwoFailures measures a call that fails twice, then succeeds, with
// waits of at most 1ns.
func BenchmarkTwoFailures(b *testing.B) {
	for _, ctx := range contexts(b) {
		for _, lib := range libraries {
			b.Run(ctx.name+"/"+lib.name, func(b *testing.B) {
				b.ReportAllocs()
				if err := lib.do(ctx.ctx, b.N, failTwice()); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkHTTPFirstTry measures a GET that succeeds at once through a
// plain http.Client and through go-retryablehttp around it, both with a
// stub RoundTripper, so that what retryablehttp adds shows: it retries an
// http.Request, not a function, so it has no place in the table above.
func BenchmarkHTTPFirstTry(b *testing.B) {
	plain, c := httpClients()
	ctx := context.Background()
	for _, bb := range []struct {
		name string
		get  func() (int, error)
	}{
		{"http.Client", func() (int, error) { return plainGet(ctx, plain) }},
		{"go-retryablehttp", func() (int, error) { return get(ctx, c) }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if code, err := bb.get(); code != 200 || err != nil {
					b.Fatal(code, err)
				}
			}
		})
	}
}

// TestAllocationsFirstTrySuccess settles the "allocations, first-try
// success" row: what each library allocates for a call that succeeds at
// once with context.Background(), built as its README shows (the setups
// above); then with a part built once that the setups build per call, and
// avast's Retrier built per call, as a ctx per request needs.
func TestAllocationsFirstTrySuccess(t *testing.T) {
	want := map[string]float64{
		"this package":        0,
		"cenkalti/backoff v7": 4,
		"avast/retry-go v5":   0,
		"sethvargo/go-retry":  3,
		"failsafe-go":         18,
	}
	for _, lib := range libraries {
		if n := testing.AllocsPerRun(100, func() { lib.do(context.Background(), 1, succeed) }); n != want[lib.name] {
			t.Errorf("%s (%s): %v allocations, want %v", lib.name, lib.setup, n, want[lib.name])
		}
	}
	ctx := context.Background()
	once := []struct {
		name string
		do   func()
		want float64
	}{
		{"avast/retry-go v5, a Retrier with 4 options per call, as for a ctx per request", func() {
			avast.New(avast.Context(ctx), avast.Attempts(5), avast.Delay(1), avast.MaxJitter(1)).Do(func() error { return nil })
		}, 4},
		{"cenkalti/backoff v7, no options", func() {
			backoff.Retry(ctx, func() (struct{}, error) { return struct{}{}, nil })
		}, 3},
		{"sethvargo/go-retry, a bare NewConstant built once", func() {
			sethvargo.Do(ctx, constant, succeed)
		}, 0},
		{"failsafe-go, a RetryPolicy and executor built once", func() {
			failsafeExecutor.Run(func() error { return nil })
		}, 14},
	}
	for _, o := range once {
		if n := testing.AllocsPerRun(100, o.do); n != o.want {
			t.Errorf("%s: %v allocations, want %v", o.name, n, o.want)
		}
	}
}

// TestAllocationsTwoFailures settles the "two failures" allocations: what
// each library allocates for a call that fails twice, then succeeds, with
// context.Background() and with a request ctx, built as its README shows.
func TestAllocationsTwoFailures(t *testing.T) {
	want := map[string]float64{
		"this package":        7,
		"cenkalti/backoff v7": 11,
		"avast/retry-go v5":   8,
		"sethvargo/go-retry":  13,
		"failsafe-go":         30,
	}
	request, cancel := requestContext()
	defer cancel()
	for name, ctx := range map[string]context.Context{"background": context.Background(), "request": request} {
		for _, lib := range libraries {
			op := failTwice()
			if n := testing.AllocsPerRun(100, func() { lib.do(ctx, 1, op) }); n != want[lib.name] {
				t.Errorf("%s (%s), %s ctx: %v allocations, want %v", lib.name, lib.setup, name, n, want[lib.name])
			}
		}
	}
}

var (
	constant         = sethvargo.NewConstant(time.Nanosecond)
	failsafeExecutor = failsafe.With[any](failsafePolicy)
)

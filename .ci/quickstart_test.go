// SPDX-License-Identifier: MIT

//go:build quickstart

// The tests of the README's quick start. .ci/quickstart.go puts this file
// beside the README's Go block, as main_test.go of a new module, and runs
// it with -tags quickstart: get and retryAfter are written only in
// README.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bfc42b4f/retry"
)

// TestRetryAfter checks the Retry-After parser.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		v    string
		want time.Duration
	}{
		{"delta-seconds", "120", 2 * time.Minute},
		{"zero seconds", "0", 0},
		{"the longest delta ParseUint returns", "4294967295", 4294967295 * time.Second},
		{"a longer delta saturates", "4294967296", 4294967295 * time.Second},
		{"a delta past uint64 saturates too", "99999999999999999999", 4294967295 * time.Second},
		{"digits past a uint32 saturate, whatever follows", "4294967296x", 4294967295 * time.Second},
		{"digits within a uint32, then more, are not a wait", "120x", 0},
		{"a negative delta is not a wait", "-1", 0},
		{"a signed delta is not delta-seconds", "+5", 0},
		{"an HTTP-date ahead", "Mon, 30 Nov 2026 12:00:30 GMT", 30 * time.Second},
		{"an HTTP-date past", "Mon, 30 Nov 2026 11:59:30 GMT", -30 * time.Second},
		{"an RFC 850 date ahead", "Monday, 30-Nov-26 12:01:00 GMT", time.Minute},
		{"garbage", "soon", 0},
		{"no header", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.v, now); got != tt.want {
				t.Errorf("retryAfter(%q) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

// TestGetRetriesTransientStatuses checks which HTTP statuses get retries,
// against a real server on loopback.
func TestGetRetriesTransientStatuses(t *testing.T) {
	retried := map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true}
	for _, code := range []int{400, 401, 403, 404, 408, 409, 429, 500, 501, 502, 503, 504, 505, 511} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.WriteHeader(code)
			}))
			defer srv.Close()
			p := retry.Policy{Attempts: 2, BaseDelay: time.Millisecond}
			_, err := retry.DoValue(context.Background(), p, func(ctx context.Context) (string, error) {
				return get(ctx, srv.URL)
			})
			want := int32(1)
			if retried[code] {
				want = 2
			}
			if calls.Load() != want || err == nil || err.Error() != "HTTP "+strconv.Itoa(code) {
				t.Errorf("Do() = %v after %d calls, want HTTP %d after %d", err, calls.Load(), code, want)
			}
		})
	}
	t.Run("an absurd Retry-After stops Do at once", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Retry-After", "9999999999")
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer srv.Close()
		_, err := retry.DoValue(context.Background(), retry.Policy{BaseDelay: time.Millisecond}, func(ctx context.Context) (string, error) {
			return get(ctx, srv.URL)
		})
		want := "HTTP 503 (Retry-After 1193046h28m15s)"
		if calls.Load() != 1 || err == nil || err.Error() != want {
			t.Errorf("Do() = %v after %d calls, want %q after 1", err, calls.Load(), want)
		}
	})
	t.Run("an HTTP-date is honoured", func(t *testing.T) {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
				w.WriteHeader(http.StatusTooManyRequests)
			}
		}))
		defer srv.Close()
		start := time.Now()
		// An HTTP-date counts whole seconds: 2s ahead is a hint in (1s, 2s].
		_, err := retry.DoValue(context.Background(), retry.Policy{BaseDelay: time.Millisecond}, func(ctx context.Context) (string, error) {
			return get(ctx, srv.URL)
		})
		if elapsed := time.Since(start); err != nil || calls.Load() != 2 || elapsed < time.Second {
			t.Errorf("Do() = %v after %d calls and %v, want nil after 2 and at least 1s", err, calls.Load(), elapsed)
		}
	})
}

// TestMain runs the quick start's main in place of the tests when
// QUICKSTART_URL is set, so that a test can run the program as pasted.
func TestMain(m *testing.M) {
	if url := os.Getenv("QUICKSTART_URL"); url != "" {
		os.Args = []string{"quickstart", url}
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// program runs the quick start's main against a server with handler h, and
// returns what it printed, its error, and how many requests the server got.
func program(h func(call int32, w http.ResponseWriter)) (stdout, stderr string, calls int32, err error) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(n.Add(1), w) }))
	defer srv.Close()
	var out, errOut bytes.Buffer
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "QUICKSTART_URL="+srv.URL)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), n.Load(), err
}

// TestProgramWaitsAsTheREADMESays: against a server that answers 503 with
// Retry-After: 1 twice, then 200, the program prints the body after two
// waits of 1 to 2s each: 2s to 4s in all, and 8s as a bound generous enough
// for a loaded machine.
func TestProgramWaitsAsTheREADMESays(t *testing.T) {
	start := time.Now()
	stdout, stderr, calls, err := program(func(call int32, w http.ResponseWriter) {
		if call <= 2 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello")
	})
	if elapsed := time.Since(start); err != nil || stdout != "hello\n" || calls != 3 || elapsed < 2*time.Second || elapsed > 8*time.Second {
		t.Errorf("the program printed %q and %q, exit %v, after %d calls and %v; want %q, exit 0, after 3 calls and 2s to 4s",
			stdout, stderr, err, calls, elapsed, "hello\n")
	}
}

// TestProgramGivesUpOnNotFound: against a server that answers 404, the
// program gives up after one call and says why.
func TestProgramGivesUpOnNotFound(t *testing.T) {
	stdout, stderr, calls, err := program(func(_ int32, w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) })
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || stdout != "" || stderr != "HTTP 404\n" || calls != 1 {
		t.Errorf("the program printed %q and %q, exit %v, after %d calls; want %q on stderr, exit 1, after 1 call",
			stdout, stderr, err, calls, "HTTP 404\n")
	}
}

// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// TestOverloadRealNetwork runs the hang dependency of TestOverload behind
// a net/http server on loopback, on the real clock: its handler queues the
// request to the one worker, 2ms a request, and waits for the reply,
// ignoring its request's context, so the worker serves callers who left.
// Calls come every 4ms, about half the capacity; the outage is 1s, and the
// horizon 10s after it. Each attempt has a 500ms timeout: inside fn for
// retry.Do, as HTTPClient.Timeout for go-retryablehttp, with its defaults
// otherwise. It asserts what a machine without CPU to spare cannot flip:
// Do alone makes at least twice as many attempts as there are calls and
// is never back within the horizon, where the bucket makes at most 1.1
// times as many. When each recovers is logged, not asserted: under load the
// worker's 2ms sleeps overshoot, and in one of five busy runs no retry was
// never back within the horizon. How soon the bucket is back after no retry
// is TestOverload's claim, in virtual time.
func TestOverloadRealNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of about 60s")
	}
	const (
		serve, interval   = 2 * time.Millisecond, 4 * time.Millisecond
		down, up, horizon = 500 * time.Millisecond, 1500 * time.Millisecond, 10 * time.Second
	)
	const peer = "go-retryablehttp v0.7.8, HTTPClient.Timeout 500ms"
	rows := append(overloadRows[:3:3], overloadRow{name: peer})
	runs := map[string]overloadRun{}
	for _, row := range rows {
		d := newDependency("hang", down, up, serve)
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
		do := func(ctx context.Context, _ int) error { return retryablehttpGet(ctx, rc, srv.URL) }
		if row.new != nil {
			call := row.new()
			do = func(ctx context.Context, _ int) error { return call(ctx, attempt) }
		}
		var r overloadRun
		d.start = time.Now()
		every := func(time.Duration) time.Duration { return interval }
		r.offered, r.through = offer(do, every, up+horizon, 3*time.Second)
		close(stop) // the worker drops its queue, so no handler waits on it
		<-served
		srv.CloseClientConnections()
		srv.Close()
		client.CloseIdleConnections()
		rc.HTTPClient.CloseIdleConnections()
		d.mu.Lock()
		r.attempts, r.queue = d.attempts, d.longestLen
		d.mu.Unlock()
		r.tally(row.name, up)
		runs[row.name] = r
		t.Log(r)
	}
	calls := runs["none"].calls
	if do := runs["do"]; do.recovery >= 0 || do.attempts < 2*calls {
		t.Errorf("Do alone: back=%s with %d attempts for %d calls, want never within the %v horizon, with twice as many attempts at least",
			back(do.recovery), do.attempts, calls, horizon)
	}
	if b := runs["bucket"]; float64(b.attempts) > 1.1*float64(calls) {
		t.Errorf("the bucket: %d attempts for %d calls, want 1.1 times as many at most", b.attempts, calls)
	}
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

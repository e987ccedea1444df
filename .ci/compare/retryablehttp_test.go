// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// hashicorp/go-retryablehttp v0.7.8. Source: client.go in the module
// cache, at the lines named in each probe. It retries an http.Request, not
// a function, so the probes hand its Client a stub RoundTripper: no
// network, and in a synctest bubble, exact virtual time.

// A stubReply is what a stubTransport answers one request with.
type stubReply struct {
	code       int
	retryAfter string
	err        error
}

// A stubTransport answers the requests it gets with its replies in turn,
// the last one over and over, and counts them. before, if set, runs first.
type stubTransport struct {
	replies []stubReply
	calls   int
	before  func()
}

func (s *stubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := s.replies[min(s.calls, len(s.replies)-1)]
	s.calls++
	if s.before != nil {
		s.before()
	}
	if r.err != nil {
		return nil, r.err
	}
	return stubResponse(r.code, r.retryAfter), nil
}

func stubResponse(code int, retryAfter string) *http.Response {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &http.Response{StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Header: h, Body: http.NoBody}
}

// stubClient returns a Client at its defaults, silent, that sends through
// a stubTransport with the given replies.
func stubClient(replies ...stubReply) (*retryablehttp.Client, *stubTransport) {
	st := &stubTransport{replies: replies}
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.HTTPClient = &http.Client{Transport: st}
	return c, st
}

// get sends a GET to http://stub/ with c, and returns the response's
// status, or 0 with no response, and the error.
func get(ctx context.Context, c *retryablehttp.Client) (int, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, "http://stub/", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if resp == nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, err
}

// TestRetryablehttpFullJitter: no, DefaultBackoff waits exactly min·2ⁿ,
// capped at max (client.go:560-565): every wait of a Client at its
// defaults after a 500 is 1s, 2s, 4s, 8s.
func TestRetryablehttpFullJitter(t *testing.T) {
	for n := range 8 {
		want := min(30*time.Second, time.Second<<n)
		for range 100 {
			if d := retryablehttp.DefaultBackoff(time.Second, 30*time.Second, n, nil); d != want {
				t.Fatalf("DefaultBackoff(1s, 30s, %d, nil) = %v, want %v every time", n, d, want)
			}
		}
	}
	synctest.Test(t, func(t *testing.T) {
		c, st := stubClient(stubReply{code: 500})
		start := time.Now()
		if code, err := get(context.Background(), c); code != 0 || err == nil || st.calls != 5 {
			t.Fatalf("Do() = %d, %v after %d requests, want no response and an error after 5", code, err, st.calls)
		}
		if elapsed := time.Since(start); elapsed != 15*time.Second {
			t.Errorf("Do gave up after %v, want exactly 1s + 2s + 4s + 8s = 15s", elapsed)
		}
	})
}

// TestRetryablehttpNoWaitAboveTheCap: no, a Retry-After on a 429 or a 503
// is waited whole, past RetryWaitMax (client.go:551-558): Retry-After:
// 86400 waits 24h. On any other status the header is ignored.
func TestRetryablehttpNoWaitAboveTheCap(t *testing.T) {
	tests := []struct {
		code int
		want time.Duration
	}{
		{http.StatusTooManyRequests, 24 * time.Hour},
		{http.StatusServiceUnavailable, 24 * time.Hour},
		{http.StatusInternalServerError, time.Second},
	}
	for _, tt := range tests {
		if d := retryablehttp.DefaultBackoff(time.Second, 30*time.Second, 0, stubResponse(tt.code, "86400")); d != tt.want {
			t.Errorf("DefaultBackoff(1s, 30s, 0, %d with Retry-After: 86400) = %v, want %v", tt.code, d, tt.want)
		}
	}
	if d := retryablehttp.DefaultBackoff(time.Second, 30*time.Second, 10, nil); d != 30*time.Second {
		t.Errorf("DefaultBackoff(1s, 30s, 10, nil) = %v, want the cap, 30s", d)
	}
}

// TestRetryablehttpOverflowSafety: no, a Retry-After in seconds is
// multiplied by time.Second unchecked (client.go:584-588): from
// 9,223,372,037 to 18,446,744,073 seconds it wraps to a negative wait, on
// which the timer fires at once, and above that to an arbitrary positive
// one: 20,000,000,000 seconds waits about 49 years. The exponential part
// saturates at max (client.go:562).
func TestRetryablehttpOverflowSafety(t *testing.T) {
	wait := func(retryAfter string) time.Duration {
		return retryablehttp.DefaultBackoff(time.Second, 30*time.Second, 0, stubResponse(503, retryAfter))
	}
	if d := wait("9223372036"); d != 9223372036*time.Second {
		t.Errorf("Retry-After: 9223372036 waits %v, want 9223372036s, the most that fits", d)
	}
	for _, v := range []string{"9223372037", "18446744073"} {
		if d := wait(v); d >= 0 {
			t.Errorf("Retry-After: %s waits %v, want a negative wait", v, d)
		}
	}
	years := func(d time.Duration) float64 { return d.Hours() / 24 / 365.25 }
	if d := wait("20000000000"); years(d) < 49 || years(d) > 49.3 {
		t.Errorf("Retry-After: 20000000000 waits %v (%.1f years), want about 49 years", d, years(d))
	}
	if d := retryablehttp.DefaultBackoff(time.Second, 30*time.Second, 2000, nil); d != 30*time.Second {
		t.Errorf("DefaultBackoff(1s, 30s, 2000, nil) = %v, want the cap, 30s", d)
	}
	synctest.Test(t, func(t *testing.T) {
		c, st := stubClient(stubReply{code: 503, retryAfter: "9223372037"}, stubReply{code: 200})
		start := time.Now()
		if code, err := get(context.Background(), c); code != 200 || err != nil || st.calls != 2 || time.Since(start) != 0 {
			t.Errorf("Do() = %d, %v after %d requests and %v, want 200 after 2, at once", code, err, st.calls, time.Since(start))
		}
	})
}

// TestRetryablehttpZeroValue: NewClient makes 4 retries, 5 requests in
// all, with waits of 1s·2ⁿ up to 30s (client.go:49-51, 440-452); a zero
// Client has no CheckRetry, and its Do panics.
func TestRetryablehttpZeroValue(t *testing.T) {
	c := retryablehttp.NewClient()
	if c.RetryMax != 4 || c.RetryWaitMin != time.Second || c.RetryWaitMax != 30*time.Second {
		t.Errorf("NewClient() has RetryMax %d, waits %v to %v; want 4, 1s to 30s", c.RetryMax, c.RetryWaitMin, c.RetryWaitMax)
	}
	if c.CheckRetry == nil || c.Backoff == nil || c.Logger == nil {
		t.Errorf("NewClient() has no CheckRetry, Backoff or Logger, want DefaultRetryPolicy, DefaultBackoff and a logger")
	}
	zero := &retryablehttp.Client{HTTPClient: &http.Client{Transport: &stubTransport{replies: []stubReply{{code: 200}}}}}
	if !panics(func() { get(context.Background(), zero) }) {
		t.Errorf("a zero Client's Do returned, want a panic on its nil CheckRetry")
	}
}

// TestRetryablehttpPolicyState: a Client keeps no count from one request
// to the next (Do counts its attempts in locals, client.go:685-691, 771),
// so one Client serves every request: two requests through one Client,
// each answered 500, 500, then 200, each wait 1s and then 2s.
func TestRetryablehttpPolicyState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, st := stubClient(stubReply{code: 500}, stubReply{code: 500}, stubReply{code: 200})
		for i := range 2 {
			st.calls = 0 // the stub answers 500, 500, 200 again
			start := time.Now()
			if code, err := get(context.Background(), c); code != 200 || err != nil || st.calls != 3 {
				t.Fatalf("request %d: Do() = %d, %v after %d requests, want 200 after 3", i+1, code, err, st.calls)
			}
			if elapsed := time.Since(start); elapsed != 3*time.Second {
				t.Errorf("request %d: Do took %v, want 1s + 2s = 3s", i+1, elapsed)
			}
		}
	})
}

// TestRetryablehttpCtxCheckedBeforeFirstCall: no, Do has no check of its
// own (client.go:689-719): with a canceled ctx it hands the request to its
// http.Client, whose RoundTripper gets it; net/http's own Transport then
// sends nothing.
func TestRetryablehttpCtxCheckedBeforeFirstCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, st := stubClient(stubReply{code: 200})
	if code, err := get(ctx, c); st.calls != 1 || code != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("Do() with a canceled ctx = %d, %v after %d requests, want no response and canceled after 1", code, err, st.calls)
	}
}

// TestRetryablehttpWhatIsRetried: DefaultRetryPolicy (client.go:472-541)
// retries every transport error but too many redirects, an unsupported
// scheme, an invalid header and an untrusted certificate; and the statuses
// 429, 0 and 5xx but 501. It does not retry a 408.
func TestRetryablehttpWhatIsRetried(t *testing.T) {
	retried := map[int]bool{0: true, 429: true, 500: true, 502: true, 503: true, 504: true, 505: true, 599: true, 999: true}
	for _, code := range []int{0, 200, 301, 400, 404, 408, 409, 429, 500, 501, 502, 503, 504, 505, 599, 999} {
		got, _ := retryablehttp.DefaultRetryPolicy(context.Background(), stubResponse(code, ""), nil)
		if got != retried[code] {
			t.Errorf("DefaultRetryPolicy(%d) = %t, want %t", code, got, retried[code])
		}
	}
	urlErr := func(err error) error { return &url.Error{Op: "Get", URL: "http://stub/", Err: err} }
	errs := []struct {
		err   error
		retry bool
	}{
		{errors.New("connection refused"), true},
		{urlErr(errors.New("connection reset by peer")), true},
		{urlErr(errors.New("stopped after 10 redirects")), false},
		{urlErr(errors.New(`unsupported protocol scheme "ftp"`)), false},
		{urlErr(errors.New("net/http: invalid header field name")), false},
		{urlErr(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), false},
		// Only a tls.CertificateVerificationError counts (cert_error_go120.go).
		{urlErr(x509.UnknownAuthorityError{}), true},
	}
	for _, e := range errs {
		if got, _ := retryablehttp.DefaultRetryPolicy(context.Background(), nil, e.err); got != e.retry {
			t.Errorf("DefaultRetryPolicy(%v) = %t, want %t", e.err, got, e.retry)
		}
	}
}

// TestRetryablehttpErrorAfterLastAttempt: "GET url giving up after N
// attempt(s)", without the status or the response, whose body is drained
// and closed (client.go:830-839).
func TestRetryablehttpErrorAfterLastAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := stubClient(stubReply{code: 503})
		code, err := get(context.Background(), c)
		if want := "GET http://stub/ giving up after 5 attempt(s)"; code != 0 || err == nil || err.Error() != want {
			t.Errorf("Do() = %d, %v, want no response and %q", code, err, want)
		}
	})
}

// TestRetryablehttpCancelKeepsCauseAndLastError: ctx.Err() only. A cancel
// during a wait returns ctx.Err(), without the cause, the last response or
// its error (client.go:785-789); one during an attempt returns "giving up
// after 1 attempt(s): context canceled" (client.go:472-476, 841).
func TestRetryablehttpCancelKeepsCauseAndLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(500*time.Millisecond, func() { cancel(errStop) })
		c, _ := stubClient(stubReply{code: 503})
		if code, err := get(ctx, c); code != 0 || err != context.Canceled {
			t.Errorf("Do() canceled during a wait = %d, %v, want no response and context.Canceled itself", code, err)
		}
	})
	ctx, cancel := context.WithCancelCause(context.Background())
	c, st := stubClient(stubReply{err: errors.New("connection reset by peer")})
	st.before = func() { cancel(errStop) }
	code, err := get(ctx, c)
	if want := "GET http://stub/ giving up after 1 attempt(s): context canceled"; code != 0 || err == nil || err.Error() != want || errors.Is(err, errStop) {
		t.Errorf("Do() canceled during an attempt = %d, %v, want no response and %q", code, err, want)
	}
}

// TestRetryablehttpDeadlineAware: no, it sleeps into the deadline
// (client.go:784-791): with 1.5s left and a second wait of 2s, Do returns
// ctx.Err() at the deadline.
func TestRetryablehttpDeadlineAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		c, st := stubClient(stubReply{code: 500})
		start := time.Now()
		if _, err := get(ctx, c); err != context.DeadlineExceeded || st.calls != 2 || time.Since(start) != 1500*time.Millisecond {
			t.Errorf("Do() = %v after %d requests and %v, want DeadlineExceeded after 2, at the deadline", err, st.calls, time.Since(start))
		}
	})
}

// TestRetryablehttpServerHints: Retry-After on a 429 or a 503, in seconds
// or as an RFC 1123 date, replaces the backoff exactly, without jitter
// (client.go:551-601): Retry-After: 1 waits 1s on every client.
func TestRetryablehttpServerHints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for range 20 {
			c, st := stubClient(stubReply{code: 429, retryAfter: "1"}, stubReply{code: 200})
			start := time.Now()
			if code, err := get(context.Background(), c); code != 200 || err != nil || st.calls != 2 || time.Since(start) != time.Second {
				t.Fatalf("Do() = %d, %v after %d requests and %v, want 200 after 2 and exactly 1s", code, err, st.calls, time.Since(start))
			}
		}
	})
	date := time.Now().Add(time.Hour).UTC().Format(time.RFC1123)
	if d := retryablehttp.DefaultBackoff(time.Second, 30*time.Second, 0, stubResponse(503, date)); d <= 59*time.Minute || d > time.Hour {
		t.Errorf("Retry-After: %s (an hour ahead) waits %v, want about 1h", date, d)
	}
}

// TestRetryablehttpAllocations: a first-try success through a Client at
// its defaults allocates 1 object more than a plain http.Client sending the
// same request through the same stub RoundTripper, which allocates 11
// (BenchmarkHTTPFirstTry in bench_test.go measures the time).
func TestRetryablehttpAllocations(t *testing.T) {
	plain, c := httpClients()
	ctx := context.Background()
	direct := testing.AllocsPerRun(100, func() { plainGet(ctx, plain) })
	retried := testing.AllocsPerRun(100, func() { get(ctx, c) })
	if direct != 11 || retried != 12 {
		t.Errorf("a first-try success allocates %v objects through http.Client alone and %v through retryablehttp, want 11 and 12", direct, retried)
	}
}

// httpClients returns a plain http.Client and a retryablehttp Client at its
// defaults around it, both sending through one stub that answers 200.
func httpClients() (*http.Client, *retryablehttp.Client) {
	plain := &http.Client{Transport: &stubTransport{replies: []stubReply{{code: 200}}}}
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.HTTPClient = plain
	return plain, c
}

// plainGet sends a GET to http://stub/ with a plain http.Client.
func plainGet(ctx context.Context, c *http.Client) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://stub/", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bfc42b4f/retry"
	"github.com/cenkalti/backoff/v7"
	"github.com/hashicorp/go-retryablehttp"
)

var (
	hintedClients  = flag.Int("hinted.clients", 300, "clients in each fleet of TestHintedFleet")
	hintedOutage   = flag.Duration("hinted.outage", time.Second, "how long the server of TestHintedFleet turns every request away")
	hintedCapacity = flag.Int("hinted.capacity", 25, "requests the server admits per window after the outage")
	hintedWindow   = flag.Duration("hinted.window", 10*time.Millisecond, "the window the capacity counts in")
	hintedHint     = flag.Int("hinted.hint", 1, "the Retry-After the server sends, in seconds")
	hintedForms    = flag.String("hinted.forms", "seconds,date", "the forms of Retry-After to run: seconds, date (an HTTP-date), or both")
	hintedSeries   = flag.String("hinted.series", "", "a CSV file for the requests per window of TestHintedFleet's fleets, in seconds form, for cmd/fleetplot")
)

// hintedAttempts is what each client of the hinted fleet may make: the
// default of go-retryablehttp, 1 call and RetryMax 4 retries.
const hintedAttempts = 5

// A throttled server is a recovering one that answers a request it turns
// away with 503 or 429, in turn, and a Retry-After.
type throttled struct {
	*recovering
	hint time.Duration
	date bool // send Retry-After as an HTTP-date
}

func (s *throttled) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ok, n := s.admit(), s.calls
	s.mu.Unlock()
	if ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	if s.date {
		// An HTTP-date counts whole seconds: the next whole second after
		// now + hint, so that no client is told to wait less than the hint.
		at := time.Now().Add(s.hint).Truncate(time.Second).Add(time.Second)
		w.Header().Set("Retry-After", at.UTC().Format(http.TimeFormat))
	} else {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.hint/time.Second)))
	}
	w.WriteHeader([]int{http.StatusServiceUnavailable, http.StatusTooManyRequests}[n%2])
}

// A hintedClient GETs url until it succeeds, as one retry strategy does,
// and returns nil once it got a 200.
type hintedClient struct {
	name string
	get  func(ctx context.Context, client *http.Client, url string) error
}

// headerWait reads a Retry-After header, in seconds or as an HTTP-date.
func headerWait(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if secs, err := strconv.Atoi(v); err == nil {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// getOnce GETs url once, and returns nil for a 200, or the status and the
// wait its Retry-After asks for.
func getOnce(ctx context.Context, client *http.Client, url string) (wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == http.StatusOK {
		return 0, nil
	}
	return headerWait(resp.Header), fmt.Errorf("HTTP %d", resp.StatusCode)
}

var hintedStrategies = []hintedClient{
	{"retry.Do with retry.After", func(ctx context.Context, client *http.Client, url string) error {
		p := retry.Policy{Attempts: hintedAttempts, BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second}
		return retry.Do(ctx, p, func(ctx context.Context) error {
			wait, err := getOnce(ctx, client, url)
			return retry.After(err, wait)
		})
	}},
	{"go-retryablehttp, defaults", func(ctx context.Context, _ *http.Client, url string) error {
		c := retryablehttp.NewClient() // its own pooled http.Client, as by default
		c.Logger = nil
		c.RetryMax = hintedAttempts - 1
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}},
	{"cenkalti/backoff, RetryAfter", func(ctx context.Context, client *http.Client, url string) error {
		_, err := backoff.Retry(ctx, func() (struct{}, error) {
			wait, err := getOnce(ctx, client, url)
			if err != nil && wait > 0 {
				return struct{}{}, backoff.RetryAfter(wait, err)
			}
			return struct{}{}, err
		}, backoff.WithMaxTries(hintedAttempts))
		return err
	}},
	{"a loop that waits the hint exactly", func(ctx context.Context, client *http.Client, url string) error {
		for n := 1; ; n++ {
			wait, err := getOnce(ctx, client, url)
			if err == nil || n == hintedAttempts {
				return err
			}
			time.Sleep(wait)
		}
	}},
}

// hintedFleet is what one fleet did to a throttled server.
type hintedFleet struct {
	name                        string
	through                     int // clients that got a 200
	requests, after, turnedAway int
	peak                        int
	lastOK                      time.Duration // after the outage
	perWindow                   []int
}

// runHintedFleet starts the clients of one fleet against a new throttled
// server on loopback, all at once, and reports what the server saw.
func runHintedFleet(t *testing.T, c hintedClient, date bool) hintedFleet {
	s := &throttled{recovering: newRecovering(*hintedOutage, *hintedWindow, *hintedCapacity),
		hint: time.Duration(*hintedHint) * time.Second, date: date}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *hintedClients}}
	defer client.CloseIdleConnections()
	// Every client is done within attempts × (the hint + 1s for an
	// HTTP-date + the jitter), and the whole fleet within this bound.
	ctx, cancel := context.WithTimeout(context.Background(), *hintedOutage+hintedAttempts*3*s.hint+10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	through := 0
	s.start = time.Now()
	for range *hintedClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.get(ctx, client, srv.URL); err == nil {
				mu.Lock()
				through++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Errorf("%s: the fleet was not done within %v", c.name, context.Cause(ctx))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := hintedFleet{name: c.name, through: through, requests: s.calls, after: s.after,
		turnedAway: s.after, lastOK: s.lastOK - s.outage}
	for w, n := range s.perSlot {
		f.turnedAway -= s.accepted[w]
		f.peak = max(f.peak, n)
		for len(f.perWindow) <= w {
			f.perWindow = append(f.perWindow, 0)
		}
		f.perWindow[w] = n
	}
	return f
}

// TestHintedFleet runs fleets of clients that a server's Retry-After tells
// to wait, against a real HTTP server on loopback that turns every request
// away for an outage, with 503 or 429 in turn, and then admits a capacity
// per window and turns the rest away the same way: retry.Do with
// retry.After, go-retryablehttp at its defaults (RetryMax 4),
// cenkalti/backoff with RetryAfter, and a loop that waits the hint exactly.
// Each runs with the hint in seconds and as an HTTP-date, the next whole
// second after now + the hint, so that no client is told to wait less. Its
// table gives, per fleet, the clients through, the requests a client made,
// those after the outage, the peak per window, those turned away and the
// last success. It asserts what a stall of the real clock cannot flip:
// every client of retry.Do gets through, with at most a tenth as many
// requests turned away after the outage as it has clients, and every fleet
// that waits the hint exactly peaks above the capacity. A stall piles the
// requests due during it into one window, so Do's peak is reported, not
// asserted.
func TestHintedFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of about 40s")
	}
	forms := strings.Split(*hintedForms, ",")
	for _, form := range forms {
		if form != "seconds" && form != "date" {
			t.Fatalf("-hinted.forms = %q, want seconds, date or both", *hintedForms)
		}
		t.Run(form, func(t *testing.T) {
			var fleets []hintedFleet
			for _, c := range hintedStrategies {
				fleets = append(fleets, runHintedFleet(t, c, form == "date"))
			}
			t.Logf("%d clients, Retry-After %ds as %s, an outage of %v, then %d requests per %v",
				*hintedClients, *hintedHint, form, *hintedOutage, *hintedCapacity, *hintedWindow)
			for _, f := range fleets {
				t.Logf("%-36s through %3d/%d, requests a client %.2f, after the outage %4d, peak %3d per window, turned away %4d, last success at %v",
					f.name, f.through, *hintedClients, float64(f.requests)/float64(*hintedClients),
					f.after, f.peak, f.turnedAway, f.lastOK.Round(10*time.Millisecond))
			}
			if form == "seconds" && *hintedSeries != "" {
				if err := writeHintedSeries(*hintedSeries, fleets); err != nil {
					t.Fatal(err)
				}
			}
			if do := fleets[0]; do.through < *hintedClients || do.turnedAway*10 > *hintedClients {
				t.Errorf("%s: %d of %d clients through, %d requests turned away after the outage; want all through, and at most %d turned away",
					do.name, do.through, *hintedClients, do.turnedAway, *hintedClients/10)
			}
			for _, f := range fleets[1:] {
				if f.peak <= *hintedCapacity {
					t.Errorf("%s peaked at %d requests per window, want above the capacity of %d", f.name, f.peak, *hintedCapacity)
				}
			}
		})
	}
}

// writeHintedSeries writes the requests per window of each fleet to a CSV
// file: one row per window, its start in milliseconds after the outage,
// then each fleet's requests; the header names each fleet, and how many
// of its clients got through.
func writeHintedSeries(name string, fleets []hintedFleet) error {
	rows := [][]string{{"ms"}}
	for _, f := range fleets {
		rows[0] = append(rows[0], fmt.Sprintf("%s: %d of %d through", f.name, f.through, *hintedClients))
		for len(rows) <= len(f.perWindow) {
			rows = append(rows, []string{strconv.Itoa(int(*hintedWindow/time.Millisecond) * (len(rows) - 1))})
		}
	}
	for i := range rows[1:] {
		for _, f := range fleets {
			n := 0
			if i < len(f.perWindow) {
				n = f.perWindow[i]
			}
			rows[i+1] = append(rows[i+1], strconv.Itoa(n))
		}
	}
	var b strings.Builder
	if err := csv.NewWriter(&b).WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}

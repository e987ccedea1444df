// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bfc42b4f/retry"
)

// recovering is an HTTP handler that answers 503 to every call during an
// outage, then 200 to at most capacity calls in each slot of time, and 503
// to the rest.
type recovering struct {
	outage, slot time.Duration
	capacity     int

	mu       sync.Mutex
	start    time.Time
	calls    int
	after    int
	perSlot  map[int]int
	accepted map[int]int
	lastOK   time.Duration
}

func (s *recovering) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ok := s.admit()
	s.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// admit counts a call and reports whether it is accepted.
func (s *recovering) admit() bool {
	s.calls++
	now := time.Since(s.start)
	if now < s.outage {
		return false
	}
	s.after++
	slot := int((now - s.outage) / s.slot)
	s.perSlot[slot]++
	if s.accepted[slot] == s.capacity {
		return false
	}
	s.accepted[slot]++
	s.lastOK = max(s.lastOK, now)
	return true
}

// fleet is what a fleet of clients did to a recovering server.
type fleet struct {
	through            int // clients that succeeded
	calls, after, peak int
	drain              time.Duration
	perSlot            []int // calls in each slot after the outage
}

// runFleetRealNetwork starts clients that each call do with an fn that GETs
// from one recovering server on loopback, all at once, on the real clock.
func runFleetRealNetwork(t *testing.T, clients int, do func(fn func(context.Context) error) error) fleet {
	s := &recovering{outage: 2 * time.Second, slot: 10 * time.Millisecond, capacity: 50,
		perSlot: map[int]int{}, accepted: map[int]int{}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	get := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return retry.Permanent(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET: %s", resp.Status)
		}
		return nil
	}
	s.start = time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	through := 0
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if do(get) == nil {
				mu.Lock()
				through++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	f := fleet{through: through, calls: s.calls, after: s.after, drain: s.lastOK - s.outage}
	for slot, n := range s.perSlot {
		f.peak = max(f.peak, n)
		for len(f.perSlot) <= slot {
			f.perSlot = append(f.perSlot, 0)
		}
		f.perSlot[slot] = n
	}
	return f
}

var fleetSeries = flag.String("fleet.series", "", "a CSV file for the calls per 10ms slot of TestFleetRealNetwork's two fleets, for cmd/fleetplot")

// TestFleetRealNetwork runs the retry module's TestFleet on the real clock
// against an HTTP server on loopback: 1,000 clients, a 2s outage, then at
// most 50 calls per 10ms. It runs Do, and a loop that waits exactly
// min(Max, Base·2ⁿ), whose clients start in lockstep, and logs what each
// fleet did to the server. It asserts only that every client of each fleet
// gets through. Scheduling decides the rest: a stall piles the calls due
// during it into one slot, and a busy machine spreads the loop's waves, so
// on a machine without CPU to spare the two fleets look alike. That full
// jitter keeps the fleet under the capacity, with fewer calls and a sooner
// drain than the loop's, is TestFleet's claim, in virtual time.
func TestFleetRealNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of about 15s")
	}
	const clients = 1000
	p := retry.Policy{Attempts: 1000, Base: 10 * time.Millisecond, Max: 2 * time.Second}
	jittered := runFleetRealNetwork(t, clients, func(fn func(context.Context) error) error {
		return retry.Do(context.Background(), p, fn)
	})
	baseline := runFleetRealNetwork(t, clients, func(fn func(context.Context) error) error {
		for n := 0; ; n++ {
			err := fn(context.Background())
			if err == nil || n+1 == p.Attempts {
				return err
			}
			time.Sleep(min(p.Max, p.Base<<min(n, 20)))
		}
	})
	if *fleetSeries != "" {
		if err := writeSeries(*fleetSeries, jittered.perSlot, baseline.perSlot); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		name string
		fleet
	}{{"full jitter (Do)", jittered}, {"no jitter", baseline}} {
		t.Logf("%-16s calls %5d, after recovery %5d, peak per 10ms slot %4d, drained %v after recovery",
			r.name, r.calls, r.after, r.peak, r.drain.Round(10*time.Millisecond))
		if r.through != clients {
			t.Errorf("%s: %d of %d clients got through, want all", r.name, r.through, clients)
		}
	}
}

// writeSeries writes the calls per 10ms slot of two fleets to a CSV file,
// in the form of the retry module's TestFleet: one row per slot, its start
// in milliseconds after the outage, then the calls of each fleet.
func writeSeries(name string, jittered, baseline []int) error {
	var b strings.Builder
	b.WriteString("ms,full jitter,no jitter\n")
	for i := range max(len(jittered), len(baseline)) {
		at := func(s []int) int {
			if i < len(s) {
				return s[i]
			}
			return 0
		}
		fmt.Fprintf(&b, "%d,%d,%d\n", 10*i, at(jittered), at(baseline))
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}

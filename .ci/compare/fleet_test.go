// SPDX-License-Identifier: MIT

package compare

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/bfc42b4f/retry"
)

// The fleet: 1,000 clients start at the same instant against a service that
// rejects every call during an outage of 2s, then accepts at most 50 calls in
// each slot of 10ms and rejects the rest at once. TestFleetVirtualTime runs
// it in virtual time, calling the service directly; TestFleetRealNetwork on
// the real clock, over HTTP on loopback.
const fleetClients = 1000

var fleetPolicy = retry.Policy{Attempts: 1000, BaseDelay: 10 * time.Millisecond, MaxDelay: 2 * time.Second}

// The clients of the two fleets: retry.Do, and a loop that waits exactly the
// ceiling of Do's draw, min(MaxDelay, BaseDelay<<(n-1)) after attempt n fails, so that
// its clients stay in lockstep.
var (
	jitteredClient fleetClient = func(fn func(context.Context) error) error {
		return retry.Do(context.Background(), fleetPolicy, fn)
	}
	lockstepClient fleetClient = func(fn func(context.Context) error) error {
		for n := 1; ; n++ {
			if err := fn(context.Background()); err == nil || n == fleetPolicy.Attempts {
				return err
			}
			time.Sleep(min(fleetPolicy.MaxDelay, fleetPolicy.BaseDelay<<min(n-1, 20)))
		}
	}
)

// recovering is the fleet's service. It answers 503 to every call during an
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

func newRecovering(outage, slot time.Duration, capacity int) *recovering {
	return &recovering{outage: outage, slot: slot, capacity: capacity,
		perSlot: map[int]int{}, accepted: map[int]int{}, start: time.Now()}
}

var errUnavailable = errors.New("503 service unavailable")

// call is the service called directly, as the virtual-time fleet calls it.
func (s *recovering) call(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.admit() {
		return errUnavailable
	}
	return nil
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

// admit counts a call and reports whether it is accepted; s.mu is held.
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

// fleet is what a fleet of clients did to a recovering service.
type fleet struct {
	through            int // clients that succeeded
	calls, after, peak int
	drain              time.Duration // from the end of the outage to the last success
	perSlot            []int         // calls in each slot after the outage
}

func (f fleet) String() string {
	return fmt.Sprintf("%d clients through, calls %d, after recovery %d, peak per slot %d, drained %v after recovery",
		f.through, f.calls, f.after, f.peak, f.drain.Round(time.Millisecond))
}

// A fleetClient calls fn until it succeeds or gives up, and returns its
// last error.
type fleetClient func(fn func(context.Context) error) error

// runFleet starts clients that each run client with fn, all at once, and
// returns what they did to s once they have all returned.
func runFleet(s *recovering, clients int, client fleetClient, fn func(context.Context) error) fleet {
	var wg sync.WaitGroup
	var mu sync.Mutex
	through := 0
	for range clients {
		wg.Go(func() {
			if client(fn) == nil {
				mu.Lock()
				through++
				mu.Unlock()
			}
		})
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

var (
	fleetSeries        = flag.String("fleet.series", "", "a CSV file for the calls per 10ms slot of TestFleetRealNetwork's two fleets, for cmd/fleetplot")
	virtualFleetSeries = flag.String("fleet.virtual.series", "", "a CSV file for the calls per 10ms slot of TestFleetVirtualTime's two fleets, for cmd/fleetplot")
)

// runFleetVirtualTime runs the fleet of client against the service in
// virtual time, in a synctest bubble.
func runFleetVirtualTime(t *testing.T, client fleetClient) (f fleet) {
	synctest.Test(t, func(t *testing.T) {
		s := newRecovering(2*time.Second, 10*time.Millisecond, 50)
		f = runFleet(s, fleetClients, client, s.call)
	})
	return f
}

// TestFleetVirtualTime runs the fleet in virtual time. The lockstep loop
// draws nothing and reads no clock but the bubble's, so what it does is
// exact: every client fails 8 times in the outage and comes back with the
// others, 1,000 calls in one slot, then 950, 900, and so on, 10,500 calls
// after recovery, the last success 38.55s after it. Do's draws vary, so for
// Do the test asserts bounds that follow from full jitter: each client's
// first call after recovery falls at a random point of a wait of up to MaxDelay,
// so the peak stays under the capacity, every client gets through with that
// one call (1,000 calls after recovery), and the fleet drains within MaxDelay of
// recovery.
func TestFleetVirtualTime(t *testing.T) {
	jittered := runFleetVirtualTime(t, jitteredClient)
	baseline := runFleetVirtualTime(t, lockstepClient)
	if *virtualFleetSeries != "" {
		if err := writeSeries(*virtualFleetSeries, jittered.perSlot, baseline.perSlot); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("full jitter (Do): %v", jittered)
	t.Logf("no jitter:        %v", baseline)
	want := fleet{through: fleetClients, calls: 18_500, after: 10_500, peak: fleetClients, drain: 38_550 * time.Millisecond}
	if got := baseline; got.through != want.through || got.calls != want.calls || got.after != want.after ||
		got.peak != want.peak || got.drain != want.drain {
		t.Errorf("the lockstep loop's fleet: %v; want %v", got, want)
	}
	if jittered.through != fleetClients || jittered.after != fleetClients || jittered.peak >= 50 || jittered.drain >= fleetPolicy.MaxDelay {
		t.Errorf("Do's fleet: %v; want every client through with %d calls after recovery, a peak below the capacity of 50 and a drain within MaxDelay, %v",
			jittered, fleetClients, fleetPolicy.MaxDelay)
	}
}

// runFleetRealNetwork runs the fleet of client against the service behind
// an HTTP server on loopback, on the real clock.
func runFleetRealNetwork(client fleetClient) fleet {
	s := newRecovering(2*time.Second, 10*time.Millisecond, 50)
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: fleetClients}}
	defer c.CloseIdleConnections()
	get := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return retry.Permanent(err)
		}
		resp, err := c.Do(req)
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
	return runFleet(s, fleetClients, client, get)
}

// TestFleetRealNetwork runs the fleet on the real clock against an HTTP
// server on loopback, and logs what each fleet did to the server. It
// asserts only that every client of each fleet gets through. Scheduling
// decides the rest: a stall piles the calls due during it into one slot,
// and a busy machine spreads the loop's waves, so on a machine without CPU
// to spare the two fleets look alike. The comparison is
// TestFleetVirtualTime's.
func TestFleetRealNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("a run of about 15s")
	}
	jittered := runFleetRealNetwork(jitteredClient)
	baseline := runFleetRealNetwork(lockstepClient)
	if *fleetSeries != "" {
		if err := writeSeries(*fleetSeries, jittered.perSlot, baseline.perSlot); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []struct {
		name string
		fleet
	}{{"full jitter (Do)", jittered}, {"no jitter", baseline}} {
		t.Logf("%-16s %v", r.name+":", r.fleet)
		if r.through != fleetClients {
			t.Errorf("%s: %d of %d clients got through, want all", r.name, r.through, fleetClients)
		}
	}
}

// writeSeries writes the calls per 10ms slot of two fleets to a CSV file:
// one row per slot, its start in milliseconds after the outage, then the
// calls of each fleet.
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

package client

import (
	"sync"
	"time"
)

// Latency-based fault avoidance (RocketMQ's MQFaultStrategy): after each send the
// producer notes how long its broker took; a broker that answered slowly, or failed, is
// passed over by the round-robin queue choice for a while, so a struggling broker of a
// multi-broker topic stops slowing every send down. The table is RocketMQ's: an answer
// after 550 ms avoids the broker for 30 s, after 1 s for 60 s, after 2 s for 120 s, after
// 3 s for 180 s, after 15 s for 600 s; a failure (no answer, or a broker error worth
// retrying) counts as 3 s (RocketMQ counts it as 30 s, which takes a broker out for ten
// minutes after one timeout). Sends with a queue selector (ordered messages) go where
// the selector says regardless. When every broker is avoided, the round robin uses them
// all, as if nothing were avoided.

// faultSteps maps a send latency (at least) to how long its broker is avoided.
var faultSteps = [...]struct{ latency, avoid time.Duration }{
	{15 * time.Second, 600 * time.Second},
	{3 * time.Second, 180 * time.Second},
	{2 * time.Second, 120 * time.Second},
	{time.Second, 60 * time.Second},
	{550 * time.Millisecond, 30 * time.Second},
}

// failureLatency is the latency a failed send counts as.
const failureLatency = 3 * time.Second

// faultTable remembers, per broker name, until when it is avoided.
type faultTable struct {
	now   func() time.Time
	mu    sync.Mutex
	until map[string]time.Time
}

func newFaultTable(now func() time.Time) *faultTable {
	return &faultTable{now: now, until: make(map[string]time.Time)}
}

// update records a send to broker that took latency (failed: it failed).
func (f *faultTable) update(broker string, latency time.Duration, failed bool) {
	if f == nil {
		return
	}
	if failed {
		latency = max(latency, failureLatency)
	}
	var avoid time.Duration
	for _, s := range faultSteps {
		if latency >= s.latency {
			avoid = s.avoid
			break
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if avoid == 0 {
		delete(f.until, broker) // a good answer ends the avoidance at once
		return
	}
	f.until[broker] = f.now().Add(avoid)
}

// available reports whether broker is not being avoided.
func (f *faultTable) available(broker string) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	until, ok := f.until[broker]
	if !ok {
		return true
	}
	if !f.now().Before(until) {
		delete(f.until, broker)
		return true
	}
	return false
}

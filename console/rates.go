package console

import (
	"sync"
	"time"
)

// maxRateTopics bounds the topics whose rate the console tracks.
const maxRateTopics = 4096

// minRateSpan is the shortest span a rate is computed over: two page views closer than
// that keep the older sample.
const minRateSpan = time.Second

// rates turns successive message totals of a topic (seen on page views) into messages
// per second: the console keeps the last total of at most max topics and computes no
// rate for a topic until it has seen it twice. It is safe for concurrent use.
type rates struct {
	mu      sync.Mutex
	samples map[string]sample
	max     int
	now     func() time.Time
}

// sample is a topic's total at a time.
type sample struct {
	total   int64
	at      time.Time
	rate    float64 // since the sample before, when hasRate
	hasRate bool
}

func newRates(maxTopics int, now func() time.Time) *rates {
	return &rates{samples: map[string]sample{}, max: maxTopics, now: now}
}

// observe records topic's total now and returns the rate since the previous sample, if
// there is one; a view within minRateSpan of the previous sample gets the rate that
// sample had, and records nothing.
func (r *rates) observe(topic string, total int64) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	prev, ok := r.samples[topic]
	if ok && now.Sub(prev.at) < minRateSpan {
		return prev.rate, prev.hasRate
	}
	if !ok && len(r.samples) >= r.max {
		clear(r.samples) // a bound, not a cache policy: rates restart from the next view
	}
	s := sample{total: total, at: now}
	if ok && total >= prev.total {
		s.rate, s.hasRate = float64(total-prev.total)/now.Sub(prev.at).Seconds(), true
	}
	r.samples[topic] = s
	return s.rate, s.hasRate
}

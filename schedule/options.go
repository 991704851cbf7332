package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/delaylevel"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/store"
)

// DefaultLevelString is RocketMQ's messageDelayLevel: delay level n (1-based) waits the
// n-th duration.
const DefaultLevelString = delaylevel.Default

// MaxLevels bounds the number of delay levels (one queue and one goroutine each).
const MaxLevels = delaylevel.MaxLevels

// Store is what the service needs from the message store; *store.Store implements it.
// The store must be opened (recovered) before New, and shut down after Shutdown.
type Store interface {
	// Queues puts the delivered messages and reads the level and timer queues.
	store.Queues
	// WaitDispatched blocks until every record below phy is in the consume queues (with
	// store.FlushSync that also means durable) or ctx ends. Progress is persisted only
	// for deliveries the store has dispatched, so a crash cannot keep a cursor past a
	// delivered message the commit log lost.
	WaitDispatched(ctx context.Context, phy int64) error
}

// Options configures a Service. Start from DefaultOptions and set Dir and Store.
type Options struct {
	// Dir is the store root; progress files live in Dir/config (RocketMQ's layout).
	Dir string
	// FS is the file system of the progress files (mmap.OSFS{} by default).
	FS mmap.FS
	// Store is the message store holding the schedule and timer queues.
	Store Store
	// Levels are the delays of the levels 1..len(Levels) (DefaultLevelString). The
	// store's Options.TagsCode must be TagsCoder(Levels).
	Levels []time.Duration
	// MaxTimerDelay is the farthest a timer message may be scheduled into the future
	// (7 days); Rewrite rejects later delivery times with ErrTimerTooFar.
	MaxTimerDelay time.Duration
	// FlushInterval is how often progress is persisted (1 s). After a crash, at most the
	// deliveries of about one interval are repeated.
	FlushInterval time.Duration
	// Logger receives delivery failures, dropped messages and persistence errors.
	Logger zerolog.Logger
	// Clock returns the current time (time.Now). Delivery decisions, the delivery-time
	// computation of Rewrite and every wait are based on it; after stepping a test clock,
	// call Service.Wake.
	Clock func() time.Time
}

// DefaultOptions returns the defaults on the real file system. Dir and Store must be set.
func DefaultOptions() Options {
	return Options{
		FS: mmap.OSFS{},
		Levels: []time.Duration{
			time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
			time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute,
			6 * time.Minute, 7 * time.Minute, 8 * time.Minute, 9 * time.Minute,
			10 * time.Minute, 20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
		},
		MaxTimerDelay: 7 * 24 * time.Hour,
		FlushInterval: time.Second,
		Logger:        zerolog.Nop(),
		Clock:         time.Now,
	}
}

// Validate reports every invalid option, joined.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("schedule: "+format, args...))
	}
	if o.Dir == "" {
		bad("Dir must be set")
	}
	if o.FS == nil {
		bad("FS must be set")
	}
	if o.Store == nil {
		bad("Store must be set")
	}
	if len(o.Levels) == 0 || len(o.Levels) > MaxLevels {
		bad("Levels has %d entries, want 1..%d", len(o.Levels), MaxLevels)
	}
	for i, d := range o.Levels {
		if d < time.Millisecond {
			bad("Levels[%d] = %v, want at least 1ms", i, d)
		}
	}
	if o.MaxTimerDelay < time.Millisecond {
		bad("MaxTimerDelay = %v, want at least 1ms", o.MaxTimerDelay)
	}
	if o.FlushInterval <= 0 {
		bad("FlushInterval = %v, want > 0", o.FlushInterval)
	}
	if o.Clock == nil {
		bad("Clock must be set")
	}
	return errors.Join(errs...)
}

// ParseLevels parses a space-separated list of delays such as DefaultLevelString. Each
// entry is a positive integer followed by a unit: ms, s, m, h or d.
func ParseLevels(s string) ([]time.Duration, error) {
	levels, err := delaylevel.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	return levels, nil
}

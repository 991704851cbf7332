package groupconf

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/internal/logging"
	"github.com/ferrymq/ferry/internal/mmap"
)

// Errors returned by this package. Each is wrapped with details; test with
// errors.Is.
var (
	// ErrInvalidOptions is wrapped by Options.Validate and Open.
	ErrInvalidOptions = errors.New("groupconf: invalid options")
	// ErrInvalidConfig reports a group config that breaks the rules.
	ErrInvalidConfig = errors.New("groupconf: invalid subscription group config")
	// ErrNotFound reports a group that does not exist and may not be
	// auto-created (the broker answers SUBSCRIPTION_GROUP_NOT_EXIST).
	ErrNotFound = errors.New("groupconf: subscription group does not exist")
	// ErrCorrupt reports that neither subscriptionGroup.json nor its .bak copy
	// could be decoded.
	ErrCorrupt = errors.New("groupconf: corrupt subscription group file")
)

// Options configures a Manager.
type Options struct {
	// Dir is the store root; the table is kept in
	// Dir/config/subscriptionGroup.json.
	Dir string
	// FS is the file system (mmap.OSFS{} in production, a MemFS in tests).
	FS mmap.FS
	// Logger receives load warnings.
	Logger zerolog.Logger
	// Now is the clock used for data version timestamps.
	Now func() time.Time
	// AutoCreateSubscriptionGroup lets FindOrCreate create a missing group
	// with DefaultConfig (RocketMQ autoCreateSubscriptionGroup, default true).
	AutoCreateSubscriptionGroup bool
	// RetryMaxTimes is the retryMaxTimes of a group FindOrCreate creates: how many
	// times its messages are redelivered before they go to the dead-letter queue
	// (RocketMQ's default 16; the broker's maxReconsumeTimes setting).
	RetryMaxTimes int32
}

// DefaultOptions returns the RocketMQ defaults on the real file system. Dir
// must still be set.
func DefaultOptions() Options {
	return Options{
		FS:                          mmap.OSFS{},
		Logger:                      logging.Nop(),
		Now:                         time.Now,
		AutoCreateSubscriptionGroup: true,
		RetryMaxTimes:               16,
	}
}

// Validate reports the first problem with o; the error wraps
// ErrInvalidOptions.
func (o *Options) Validate() error {
	if err := metafile.CheckLocation(o.Dir, o.FS, ErrInvalidOptions); err != nil {
		return err
	}
	if o.Now == nil {
		return fmt.Errorf("%w: Now is nil", ErrInvalidOptions)
	}
	if o.RetryMaxTimes < 0 {
		return fmt.Errorf("%w: RetryMaxTimes %d is negative", ErrInvalidOptions, o.RetryMaxTimes)
	}
	return nil
}

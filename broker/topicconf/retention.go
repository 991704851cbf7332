package topicconf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/protocol"
)

// Retention attributes: how long and how much of a topic's messages consumers may still
// read. Both are enforced by raising the consume queues' minimum offsets (the store's
// retention pass); the commit log keeps its broker-wide cleanup (fileReservedTime), so
// these only ever shorten what consumers see, they never keep data longer.
const (
	// AttrRetentionTime drops a message from the topic's queues once it has been stored
	// this long: a Go duration from 1m to 8760h (a year), with "d" allowed for days
	// (7d).
	AttrRetentionTime = "retentionTime"
	// AttrRetentionBytes bounds each queue of the topic to this many bytes of stored
	// records (the oldest are dropped first): a byte size with an optional KiB, MiB, GiB
	// or TiB suffix (10GiB), from 1KiB.
	AttrRetentionBytes = "retentionBytes"
)

// Bounds of the retention attributes.
const (
	MinRetentionTime  = time.Minute
	MaxRetentionTime  = 365 * 24 * time.Hour
	MinRetentionBytes = 1 << 10
)

// Retention returns a topic's retention limits; zero means no limit (no attribute, or a
// value that does not parse, which only a hand-edited file has).
func Retention(cfg *protocol.TopicConfig) (maxAge time.Duration, maxBytes int64) {
	if v, ok := cfg.Attributes[AttrRetentionTime]; ok {
		if d, err := parseRetentionTime(v); err == nil {
			maxAge = d
		}
	}
	if v, ok := cfg.Attributes[AttrRetentionBytes]; ok {
		if n, err := ParseByteSize(v); err == nil && n >= MinRetentionBytes {
			maxBytes = n
		}
	}
	return maxAge, maxBytes
}

// parseRetentionTime parses and bounds an AttrRetentionTime value.
func parseRetentionTime(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, perr := strconv.ParseInt(days, 10, 64)
		d, err = time.Duration(n)*24*time.Hour, perr
		if perr == nil && (n < 0 || n > int64(MaxRetentionTime/(24*time.Hour))) {
			return 0, fmt.Errorf("%d days is outside %v..%v", n, MinRetentionTime, MaxRetentionTime)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 24h or 7d", v)
	}
	if d < MinRetentionTime || d > MaxRetentionTime {
		return 0, fmt.Errorf("%v is outside %v..%v", d, MinRetentionTime, MaxRetentionTime)
	}
	return d, nil
}

// byteUnits are the suffixes ParseByteSize accepts, longest first within a prefix.
var byteUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// ParseByteSize parses a byte count with an optional binary suffix: 1048576, 512KiB,
// 10MiB, 10GiB, 1TiB (or B). Decimal suffixes (KB, GB) are refused rather than guessed.
func ParseByteSize(v string) (int64, error) {
	num, shift := v, uint(0)
	for _, u := range byteUnits {
		if s, ok := strings.CutSuffix(v, u.suffix); ok {
			num, shift = s, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a byte size such as 10GiB, 512MiB or 1048576", v)
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q is too large", v)
	}
	return n << shift, nil
}

// checkRetentionBytes validates an AttrRetentionBytes value.
func checkRetentionBytes(v string) error {
	n, err := ParseByteSize(v)
	if err != nil {
		return err
	}
	if n < MinRetentionBytes {
		return fmt.Errorf("%d bytes is below the minimum of 1KiB", n)
	}
	return nil
}

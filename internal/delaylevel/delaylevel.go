// Package delaylevel parses RocketMQ delay-level lists such as
// "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h", for the configuration loader
// and the schedule service alike.
package delaylevel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Default is RocketMQ's messageDelayLevel, the one place Ferry spells it: level n
// (1-based) waits the n-th duration.
const Default = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

// MaxLevels bounds the number of levels in a list.
const MaxLevels = 1000

// maxDelay bounds one level.
const maxDelay = 365 * 24 * time.Hour

// Parse parses a whitespace-separated list of delays. Each entry is a positive integer
// followed by a unit: ms, s, m, h or d; at most 365 days and MaxLevels entries.
func Parse(s string) ([]time.Duration, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, errors.New("no delay levels")
	}
	if len(fields) > MaxLevels {
		return nil, fmt.Errorf("%d delay levels, at most %d", len(fields), MaxLevels)
	}
	out := make([]time.Duration, len(fields))
	for i, f := range fields {
		d, err := parseOne(f)
		if err != nil {
			return nil, fmt.Errorf("delay level %d %q: %w", i+1, f, err)
		}
		out[i] = d
	}
	return out, nil
}

// parseOne parses one entry of a level list.
func parseOne(f string) (time.Duration, error) {
	digits := 0
	for digits < len(f) && f[digits] >= '0' && f[digits] <= '9' {
		digits++
	}
	if digits == 0 {
		return 0, errors.New("want a positive integer and a unit (ms, s, m, h, d)")
	}
	n, err := strconv.ParseInt(f[:digits], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad number: %w", err)
	}
	var unit time.Duration
	switch f[digits:] {
	case "ms":
		unit = time.Millisecond
	case "s":
		unit = time.Second
	case "m":
		unit = time.Minute
	case "h":
		unit = time.Hour
	case "d":
		unit = 24 * time.Hour
	default:
		return 0, fmt.Errorf("unknown unit %q (want ms, s, m, h or d)", f[digits:])
	}
	if n <= 0 {
		return 0, errors.New("a delay must be positive")
	}
	if n > int64(maxDelay/unit) {
		return 0, errors.New("a delay must be at most 365d")
	}
	return time.Duration(n) * unit, nil
}

package launch

import (
	"errors"
	"math"
	"math/bits"
)

// errMemoryUnknown reports that the machine's physical memory could not be read.
var errMemoryUnknown = errors.New("launch: physical memory size unknown on this system")

// inMemoryMaxBytes is ratio percent (0–100) of total bytes of memory: the distance behind
// the commit log's end up to which a pulled record counts as in memory (RocketMQ's
// accessMessageInMemoryMaxRatio × physical memory).
func inMemoryMaxBytes(ratio int, total uint64) int64 {
	hi, lo := bits.Mul64(total, uint64(min(max(ratio, 0), 100)))
	b, _ := bits.Div64(hi, lo, 100) // hi < 100: no overflow
	if b > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(b)
}

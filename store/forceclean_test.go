package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Forced cleaning deletes unexpired segments (their messages are lost) only when it is
// on: DiskForceCleanRatio 1 turns it off, however full the disk is — even completely.
func TestForceCleanRatioOneDisablesForcedCleaning(t *testing.T) {
	for _, tc := range []struct {
		force   float64
		deletes bool
	}{{1e-3, true}, {1, false}} {
		mem := mmap.NewMemFS()
		mem.SetCapacity(64 << 20) // the store uses a few hundred KiB: more than 0.1 %
		o := testOptions(mem, "/store")
		o.DiskMaxUsedRatio, o.DiskForceCleanRatio, o.DiskFullRatio = 1e-3, tc.force, 1
		o.FileReservedTime = 24 * time.Hour // nothing is expired
		o.DeleteWhen = nil
		s := openStore(t, o)
		for i := range 1000 { // a few segments
			put(t, s, crashMessage(fmt.Sprintf("F%04d", i), int32(i%3)), false)
		}
		waitDispatched(t, s)
		total, free, err := mem.DiskUsage("/store")
		require.NoError(t, err)
		mem.SetCapacity(int64(total - free)) // the disk is now completely full
		s.guard.check()
		require.InDelta(t, 1.0, s.guard.used(), 1e-6)
		deleted := s.cleanOnce()
		if tc.deletes {
			require.Positive(t, deleted, "forced cleaning on (%v)", tc.force)
		} else {
			require.Zero(t, deleted, "forced cleaning off (%v) deletes no unexpired segment", tc.force)
			require.Zero(t, s.CommitLog().MinOffset())
		}
	}
}

package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/index"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

// TestManyQueuesTakeLittleSpace is the measurement as a test: one small message to
// each of 200 topics, with RocketMQ's file sizes for consume queues and the index, must not
// cost a preallocated file per queue (5.7 MB each) or a whole index file (400 MB).
func TestManyQueuesTakeLittleSpace(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	o.UnitsPerFile = consumequeue.DefaultUnitsPerFile
	o.IndexSlots, o.IndexEntries = index.DefaultSlotNum, index.DefaultMaxEntries
	s := openStore(t, o)
	for i := range 200 {
		put(t, s, testMessage{topic: fmt.Sprintf("T%d", i), body: "x", uniq: fmt.Sprintf("U%d", i), keys: "k"}, false)
	}
	waitDispatched(t, s)
	require.NoError(t, s.writeCheckpoint())
	cq, idx := testkit.DiskUsage(t, o.consumeQueueDir()), testkit.DiskUsage(t, o.indexDir())
	t.Logf("consume queues %d KiB, index %d KiB", cq>>10, idx>>10)
	require.Less(t, cq, int64(200*64<<10), "at most a few pages per queue")
	require.Less(t, idx, int64(4<<20), "index space follows the keys")
}

package store

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
)

// TestFailingQueueDoesNotStallOthers makes one topic's consume-queue file impossible to
// create: the other topic's messages must stay consumable, the checkpoint must not claim
// the stuck queue is complete, and once the fault clears the stuck queue catches up with
// every message in order.
func TestFailingQueueDoesNotStallOthers(t *testing.T) {
	efs := mmap.NewErrorFS(mmap.NewMemFS())
	o := testOptions(efs, "/store")
	s := openStore(t, o)
	remove := efs.Inject(mmap.Rule{Ops: mmap.OpOpenMapped, Path: mmap.PathContains("/consumequeue/Stuck/"), Err: syscall.EIO})
	var firstStuck int64 = -1
	for i := range 50 {
		res := put(t, s, testMessage{topic: "Stuck", body: fmt.Sprintf("s%d", i), uniq: fmt.Sprintf("US%d", i), keys: "stuckkey"}, false)
		if firstStuck < 0 {
			firstStuck = res.PhysicalOffset
		}
		put(t, s, testMessage{topic: "Free", body: fmt.Sprintf("f%d", i), uniq: fmt.Sprintf("UF%d", i)}, false)
	}
	waitDispatched(t, s)
	require.Equal(t, int64(50), s.MaxOffset("Free", 0), "the healthy queue got every message")
	require.Zero(t, s.MaxOffset("Stuck", 0))
	qr, err := s.QueryByKey("Stuck", "stuckkey", false, 100, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, qr.Records, 50, "the index does not depend on the stuck queue")
	qr.Release()

	require.NoError(t, s.writeCheckpoint())
	cp, err := loadCheckpoint(efs, o.checkpointPath())
	require.NoError(t, err)
	require.LessOrEqual(t, cp.DispatchedOffset, firstStuck, "the checkpoint covers only what every queue has")

	remove()
	require.Eventually(t, func() bool {
		s.kickDispatch()
		return s.MaxOffset("Stuck", 0) == 50
	}, 10*time.Second, 5*time.Millisecond)
	recs := queueContents(t, s, "Stuck", 0)
	require.Len(t, recs, 50)
	for i, r := range recs {
		require.Equal(t, fmt.Sprintf("s%d", i), string(r.Body))
	}
	require.Equal(t, 100, checkQueuesConsistent(t, s))
	require.NoError(t, s.writeCheckpoint())
	cp, err = loadCheckpoint(efs, o.checkpointPath())
	require.NoError(t, err)
	require.Equal(t, s.DispatchedOffset(), cp.DispatchedOffset, "after catching up the checkpoint moves on")
}

// TestFailingIndexDoesNotStallQueues does the same to the index.
func TestFailingIndexDoesNotStallQueues(t *testing.T) {
	efs := mmap.NewErrorFS(mmap.NewMemFS())
	o := testOptions(efs, "/store")
	s := openStore(t, o)
	remove := efs.Inject(mmap.Rule{Ops: mmap.OpOpenMapped, Path: mmap.PathContains("/index/"), Err: syscall.EIO})
	for i := range 20 {
		put(t, s, testMessage{topic: "T", body: fmt.Sprintf("b%d", i), uniq: fmt.Sprintf("U%d", i)}, false)
	}
	waitDispatched(t, s)
	require.Equal(t, int64(20), s.MaxOffset("T", 0), "queues go on without the index")
	require.False(t, s.DiskFull())
	remove()
	require.Eventually(t, func() bool {
		s.kickDispatch()
		qr, err := s.QueryByKey("T", "U19", true, 1, 0, 1<<62)
		if err != nil {
			return false
		}
		defer qr.Release()
		return len(qr.Records) == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 20, checkQueuesConsistent(t, s))
}

// TestDerivedFileENOSPCRefusesWrites checks that a full disk met by the dispatcher stops
// new writes at once, before the disk guard's next sample.
func TestDerivedFileENOSPCRefusesWrites(t *testing.T) {
	efs := mmap.NewErrorFS(mmap.NewMemFS())
	o := testOptions(efs, "/store")
	o.DiskCheckInterval = time.Hour
	s := openStore(t, o)
	efs.Inject(mmap.Rule{Ops: mmap.OpOpenMapped, Path: mmap.PathContains("/consumequeue/"), Err: syscall.ENOSPC})
	put(t, s, testMessage{topic: "T", body: "b", uniq: "U"}, false)
	waitDispatched(t, s)
	require.True(t, s.DiskFull())
	rec := testMessage{topic: "T", body: "c", uniq: "U2"}.record(t)
	_, err := s.PutMessage(&rec, false)
	require.ErrorIs(t, err, ErrDiskFull)
}

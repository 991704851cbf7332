package ha

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/store"
)

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	o := store.DefaultOptions()
	o.Dir = dir
	o.FS = mmap.OSFS{}
	o.SegmentSize = testSegSize
	o.UnitsPerFile = 100
	o.IndexSlots = 64
	o.IndexEntries = 4000
	o.CheckpointInterval = 20 * time.Millisecond
	o.FlushInterval = 10 * time.Millisecond
	o.DiskCheckInterval = 10 * time.Millisecond
	o.CleanInterval = time.Hour
	s, err := store.Open(o)
	require.NoError(t, err)
	s.Start()
	return s
}

// A slave store's dispatcher builds consume queues and the index from the replicated log,
// so it answers pulls and key queries like the master.
func TestSlaveStoreServesReplicatedMessages(t *testing.T) {
	master, slave := openStore(t, t.TempDir()), openStore(t, t.TempDir())
	defer func() {
		require.NoError(t, master.Shutdown(context.Background()))
		require.NoError(t, slave.Shutdown(context.Background()))
	}()
	m := newMaster(t, master.CommitLog())
	defer func() { require.NoError(t, m.Close()) }()
	s := newSlave(t, slave.CommitLog(), m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()

	const n = 600
	for i := range n {
		props, err := message.EncodeProperties(map[string]string{
			message.PropertyTags: "TagA", message.PropertyKeys: fmt.Sprintf("order-%d", i),
			message.PropertyUniqKey: fmt.Sprintf("UNIQ%028d", i),
		})
		require.NoError(t, err)
		rec := message.Record{QueueID: int32(i % 3), Topic: []byte(fmt.Sprintf("T%d", i%2)), Properties: props,
			Body: []byte(fmt.Sprintf("body-%d-%0200d", i, i)), BornTimestamp: time.Now().UnixMilli()}
		_, err = master.PutMessage(&rec, false)
		require.NoError(t, err)
	}
	m.Notify()
	end := master.CommitLog().MaxOffset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, waitAck(ctx, m, end))
	require.NoError(t, slave.WaitDispatched(ctx, end))
	require.NoError(t, master.WaitDispatched(ctx, end))

	for topic := range 2 {
		for q := range int32(3) {
			name := fmt.Sprintf("T%d", topic)
			require.Equal(t, master.MaxOffset(name, q), slave.MaxOffset(name, q))
			a, err := master.GetMessages(name, q, 0, 1000, 64<<20, nil)
			require.NoError(t, err)
			b, err := slave.GetMessages(name, q, 0, 1000, 64<<20, nil)
			require.NoError(t, err)
			require.Equal(t, a.Status, b.Status)
			require.Equal(t, a.QueueOffsets, b.QueueOffsets)
			require.Equal(t, a.Messages, b.Messages)
			require.Len(t, b.Messages, n/6)
			a.Release()
			b.Release()
		}
	}
	for _, i := range []int{0, 17, 599} {
		name := fmt.Sprintf("T%d", i%2)
		a, err := master.QueryByKey(name, fmt.Sprintf("order-%d", i), false, 10, 0, time.Now().UnixMilli()+1000)
		require.NoError(t, err)
		b, err := slave.QueryByKey(name, fmt.Sprintf("order-%d", i), false, 10, 0, time.Now().UnixMilli()+1000)
		require.NoError(t, err)
		require.Len(t, b.Records, 1)
		require.Equal(t, a.Records, b.Records)
		a.Release()
		b.Release()
	}
}

// A new, empty slave of a master whose oldest segments were deleted starts at the
// master's first segment: its log holds the master's segments at the same offsets, its
// queues start at the first retained queue offsets and serve the same records, and it
// keeps doing so after a restart.
func TestEmptySlaveOfTrimmedMaster(t *testing.T) {
	master, sdir := openStore(t, t.TempDir()), t.TempDir()
	slave := openStore(t, sdir)
	defer func() { require.NoError(t, master.Shutdown(context.Background())) }()
	const n = 1200
	for i := range n {
		rec := message.Record{QueueID: int32(i % 2), Topic: []byte("Trimmed"),
			Body: []byte(fmt.Sprintf("body-%d-%0300d", i, i)), BornTimestamp: time.Now().UnixMilli()}
		_, err := master.PutMessage(&rec, false)
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, master.WaitDispatched(ctx, master.CommitLog().MaxOffset()))
	deleted, err := master.CommitLog().DeleteBefore(3 * testSegSize)
	require.NoError(t, err)
	require.Equal(t, 3, deleted)
	first := master.CommitLog().MinOffset()
	require.Equal(t, int64(3*testSegSize), first)

	m := newMaster(t, master.CommitLog())
	defer func() { require.NoError(t, m.Close()) }()
	s := newSlave(t, slave.CommitLog(), m.Addr().String())
	end := master.CommitLog().MaxOffset()
	require.NoError(t, waitAck(ctx, m, end))
	require.NoError(t, slave.WaitDispatched(ctx, end))
	require.Equal(t, first, slave.CommitLog().MinOffset())
	requirePrefixFrom(t, master.CommitLog(), slave.CommitLog(), first, end)

	check := func(slave *store.Store) {
		for q := range int32(2) {
			require.Equal(t, master.MaxOffset("Trimmed", q), slave.MaxOffset("Trimmed", q))
			from := slave.MinOffset("Trimmed", q)
			require.Positive(t, from, "the slave's queue starts at the first retained record")
			a, err := master.GetMessages("Trimmed", q, from, 1000, 64<<20, nil)
			require.NoError(t, err)
			b, err := slave.GetMessages("Trimmed", q, from, 1000, 64<<20, nil)
			require.NoError(t, err)
			require.Equal(t, store.Found, b.Status)
			require.Equal(t, a.QueueOffsets, b.QueueOffsets)
			require.Equal(t, a.Messages, b.Messages)
			a.Release()
			b.Release()
		}
	}
	check(slave)

	require.NoError(t, s.Close())
	require.NoError(t, slave.Shutdown(context.Background()))
	slave = openStore(t, sdir)
	defer func() { require.NoError(t, slave.Shutdown(context.Background())) }()
	require.Equal(t, first, slave.CommitLog().MinOffset())
	require.NoError(t, slave.WaitDispatched(ctx, end))
	check(slave)
	s = newSlave(t, slave.CommitLog(), m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()
	for i := range 10 {
		rec := message.Record{QueueID: 0, Topic: []byte("Trimmed"), Body: []byte(fmt.Sprintf("late-%d", i)),
			BornTimestamp: time.Now().UnixMilli()}
		_, err := master.PutMessage(&rec, false)
		require.NoError(t, err)
	}
	m.Notify()
	require.NoError(t, waitAck(ctx, m, master.CommitLog().MaxOffset()))
	require.NoError(t, master.WaitDispatched(ctx, master.CommitLog().MaxOffset()))
	require.NoError(t, slave.WaitDispatched(ctx, master.CommitLog().MaxOffset()))
	check(slave)
}

// A slave whose next bytes the master has deleted is told so and stops for good.
func TestSlaveBehindTrimmedMaster(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	ml, sl := openLog(t, mdir, testSegSize), openLog(t, sdir, testSegSize)
	defer func() { require.NoError(t, ml.Close()); require.NoError(t, sl.Close()) }()
	appendN(t, ml, 0, 600, 500)
	appendN(t, sl, 0, 5, 500) // a different log: it must stay untouched
	slaveEnd := sl.MaxOffset()
	_, err := ml.DeleteBefore(2 * testSegSize)
	require.NoError(t, err)
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	s := newSlave(t, sl, m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()
	select {
	case <-s.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatalf("the slave did not stop; last error: %v", s.LastError())
	}
	require.ErrorIs(t, s.LastError(), ErrBehindMaster)
	require.Equal(t, slaveEnd, sl.MaxOffset())
}

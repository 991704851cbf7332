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
	require.NoError(t, m.WaitAck(ctx, end))
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

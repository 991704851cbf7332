package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/internal/mmap"
)

// damage is something an operator (or a disk) does to a stopped store's derived files.
type damage struct {
	name  string
	crash bool // leave the store as a crash would (abort file present)
	apply func(t *testing.T, o Options)
}

func removeAll(paths ...string) func(t *testing.T, o Options) {
	return func(t *testing.T, o Options) {
		for _, p := range paths {
			require.NoError(t, os.RemoveAll(filepath.Join(o.Dir, p)))
		}
	}
}

// zeroUnit zeroes one unit of Topic0's queue 0 in its newest consume-queue file (the
// files recovery checks unit by unit, as RocketMQ does).
func zeroUnit(unit int64) func(t *testing.T, o Options) {
	return func(t *testing.T, o Options) {
		dir := filepath.Join(o.consumeQueueDir(), "Topic0", "0")
		names, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Greater(t, len(names), 1)
		path := filepath.Join(dir, names[len(names)-1].Name())
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err)
		_, err = f.WriteAt(make([]byte, consumequeue.UnitSize), unit*consumequeue.UnitSize)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// truncateNewest cuts Topic1/1's newest consume-queue file to half its size.
func truncateNewest(t *testing.T, o Options) {
	dir := filepath.Join(o.consumeQueueDir(), "Topic1", "1")
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, names)
	path := filepath.Join(dir, names[len(names)-1].Name())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, st.Size()/2))
}

// TestDerivedFilesAreRebuiltFromTheLog damages or deletes what can be derived from the
// commit log — consume queues, index, checkpoint — in every way an operator's restore or a
// bad disk does, and checks that the store comes back with every message readable through
// its queue and its keys, and that new messages are appended and consumable after them.
func TestDerivedFilesAreRebuiltFromTheLog(t *testing.T) {
	cases := []damage{
		{name: "restore of commitlog only, clean stop", apply: removeAll("consumequeue", "index", "checkpoint")},
		{name: "restore of commitlog only, crash", crash: true, apply: removeAll("consumequeue", "index", "checkpoint")},
		{name: "consumequeue deleted, checkpoint kept", apply: removeAll("consumequeue")},
		{name: "index deleted, checkpoint kept", apply: removeAll("index")},
		{name: "one topic's queues deleted", apply: removeAll("consumequeue/Topic1")},
		{name: "zeroed unit in the middle of a queue", apply: zeroUnit(10)},
		{name: "zeroed first unit of a queue", apply: zeroUnit(0)},
		{name: "short newest consume-queue file", apply: truncateNewest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(mmap.OSFS{}, t.TempDir())
			o.UnitsPerFile = 64
			s, err := Open(o)
			require.NoError(t, err)
			s.Start()
			msgs := makeMessages(1200, 3, 2)
			for _, m := range msgs {
				put(t, s, m, false)
			}
			waitDispatched(t, s)
			require.Greater(t, len(s.cl.Segments()), 3, "the log spans more segments than a clean start scans")
			if tc.crash {
				require.NoError(t, s.writeCheckpoint())
				require.NoError(t, s.closeForTest())
			} else {
				require.NoError(t, s.Shutdown(context.Background()))
			}
			tc.apply(t, o)

			s2 := openStore(t, o)
			require.Equal(t, len(msgs), checkQueuesConsistent(t, s2), "every message is back in its queue and the index")
			for _, m := range msgs[len(msgs)-6:] {
				require.Equal(t, s2.MaxOffset(m.topic, m.queueID)-1, int64(len(msgs)/6-1), "%s/%d", m.topic, m.queueID)
			}
			res := put(t, s2, testMessage{topic: "Topic1", queueID: 1, body: "after", uniq: "U-after"}, false)
			require.Equal(t, int64(len(msgs)/6), res.QueueOffset)
			waitDispatched(t, s2)
			require.Equal(t, len(msgs)+1, checkQueuesConsistent(t, s2))
		})
	}
}

// closeForTest stops s the way a crash after a clean flush would leave it: everything is
// on disk but the abort file stays.
func (s *Store) closeForTest() error {
	s.shutdown.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		s.wg.Wait()
	})
	return errors.Join(s.cl.Flush(), s.closeParts(), s.unlock())
}

func TestQueueTableCodec(t *testing.T) {
	tab := queueTable{
		Queues:  []queueEntry{{Topic: "T", QueueID: 0, MaxOffset: 7}, {Topic: "主题", QueueID: 3, MaxOffset: 1 << 40}},
		Deleted: map[string]int64{"Gone": 4096, "Also": 1},
	}
	got, err := decodeQueueTable(encodeQueueTable(tab))
	require.NoError(t, err)
	require.Equal(t, tab, got)
	got, err = decodeQueueTable(encodeQueueTable(queueTable{}))
	require.NoError(t, err)
	require.Equal(t, queueTable{}, got)
	b := encodeQueueTable(tab)
	b[13]++
	_, err = decodeQueueTable(b)
	require.ErrorIs(t, err, errBadQueueTable)
	_, err = decodeQueueTable(b[:9])
	require.ErrorIs(t, err, errBadQueueTable)
}

func FuzzDecodeQueueTable(f *testing.F) {
	f.Add(encodeQueueTable(queueTable{Queues: []queueEntry{{Topic: "T", QueueID: 1, MaxOffset: 2}}, Deleted: map[string]int64{"X": 3}}))
	f.Add(encodeQueueTable(queueTable{}))
	f.Add([]byte(queueTableMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := decodeQueueTable(b)
		if err != nil {
			require.ErrorIs(t, err, errBadQueueTable)
			return
		}
		back, err := decodeQueueTable(encodeQueueTable(tab))
		require.NoError(t, err)
		require.Equal(t, tab, back, "a table that decodes survives a round trip")
	})
}

// TestDeletedTopicIsNotRederived checks that a deleted topic's queues, gone from disk on
// purpose, are not taken for damage at the next start.
func TestDeletedTopicIsNotRederived(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	s := openStore(t, o)
	for _, m := range makeMessages(200, 2, 2) {
		put(t, s, m, false)
	}
	waitDispatched(t, s)
	require.NoError(t, s.DeleteTopic("Topic1"))
	require.NoError(t, s.writeCheckpoint())
	require.NoError(t, s.closeForTest())

	s2 := openStore(t, o)
	require.Equal(t, 100, checkQueuesConsistent(t, s2))
	_, err := s2.cqs.Queue("Topic1", 0, false)
	require.ErrorIs(t, err, consumequeue.ErrQueueNotFound)

	// A crash with no checkpoint re-dispatches the whole log: the tombstone still holds,
	// and a topic of the same name created later gets its new records only.
	put(t, s2, testMessage{topic: "Topic1", queueID: 0, body: "reborn", uniq: "U-reborn"}, false)
	waitDispatched(t, s2)
	require.NoError(t, s2.writeCheckpoint())
	require.NoError(t, s2.closeForTest())
	require.NoError(t, os.Remove(o.checkpointPath()))
	s3 := openStore(t, o)
	recs := queueContents(t, s3, "Topic1", 0)
	require.Len(t, recs, 1)
	require.Equal(t, "reborn", string(recs[0].Body))
}

package commitlog

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// fillMaster appends n records of varying sizes over several small segments.
func fillMaster(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := range n {
		rec := newRecord("TopicR", int32(i%3), 200+(i*97)%3000, i)
		_, err := l.Append([]message.Record{rec}, false)
		require.NoError(t, err)
	}
}

// copyRaw copies [from, to) of master to replica in chunks of random size (not aligned
// to records), as an HA slave would.
func copyRaw(t *testing.T, master, replica *Log, from, to int64, rng *rand.Rand) {
	t.Helper()
	for off := from; off < to; {
		v, err := master.Read(off, 1+rng.IntN(5000))
		require.NoError(t, err)
		b := v.Bytes()[:min(int64(len(v.Bytes())), to-off)]
		require.NoError(t, replica.AppendReplica(off, b))
		off += int64(len(b))
		v.Release()
	}
}

func requireSameFiles(t *testing.T, masterDir, replicaDir string, upTo int64) {
	t.Helper()
	for start := int64(0); start < upTo; start += testSegSize {
		a, err := os.ReadFile(segPath(masterDir, start))
		require.NoError(t, err)
		b, err := os.ReadFile(segPath(replicaDir, start))
		require.NoError(t, err)
		n := min(upTo-start, testSegSize)
		require.True(t, bytes.Equal(a[:n], b[:n]), "segment %d differs", start)
	}
}

func TestAppendReplicaByteIdentical(t *testing.T) {
	mdir, rdir := t.TempDir(), t.TempDir()
	master := openLog(t, testOptions(mmap.OSFS{}, mdir))
	replica := openLog(t, testOptions(mmap.OSFS{}, rdir))
	fillMaster(t, master, 300) // ~5 segments
	end := master.MaxOffset()
	require.Greater(t, end, int64(3*testSegSize))

	rng := rand.New(rand.NewPCG(1, 2))
	mid := end/2 + 13 // inside a record
	copyRaw(t, master, replica, 0, mid, rng)
	require.Equal(t, mid, replica.ReplicaOffset())
	require.Less(t, replica.MaxOffset(), mid, "a partial record is not published")

	// Wrong offsets are refused with the typed error.
	err := replica.AppendReplica(mid+1, []byte{1})
	var oe *ReplicaOffsetError
	require.ErrorAs(t, err, &oe)
	require.ErrorIs(t, err, ErrReplicaOffset)
	require.Equal(t, mid, oe.End)
	_, err = replica.Append([]message.Record{newRecord("X", 0, 10, 1)}, false)
	require.ErrorIs(t, err, ErrReplicaTail)

	copyRaw(t, master, replica, mid, end, rng)
	require.Equal(t, end, replica.MaxOffset())
	require.Equal(t, end, replica.ReplicaOffset())
	require.Len(t, readAll(t, replica), 300)
	for q := range int32(3) {
		require.Equal(t, master.QueueOffset("TopicR", q), replica.QueueOffset("TopicR", q))
	}
	require.NoError(t, master.Flush())
	require.NoError(t, replica.Flush())
	requireSameFiles(t, mdir, rdir, end)

	// A promoted replica appends after the replicated records, with the right queue offsets.
	res, err := replica.Append([]message.Record{newRecord("TopicR", 1, 100, 7)}, false)
	require.NoError(t, err)
	require.Equal(t, master.QueueOffset("TopicR", 1), res.QueueOffset)
	require.Equal(t, end, res.PhysicalOffset)
}

func TestAppendReplicaRestartAndDiscard(t *testing.T) {
	mdir, rdir := t.TempDir(), t.TempDir()
	master := openLog(t, testOptions(mmap.OSFS{}, mdir))
	fillMaster(t, master, 120)
	end := master.MaxOffset()
	rng := rand.New(rand.NewPCG(3, 4))

	o := testOptions(mmap.OSFS{}, rdir)
	o.FlushMode = FlushSync
	replica, err := Open(o)
	require.NoError(t, err)
	cut := end/3 + 101
	copyRaw(t, master, replica, 0, cut, rng)
	published := replica.MaxOffset()
	require.Equal(t, published, replica.FlushedOffset(), "FlushSync flushes replicated records")
	require.NoError(t, replica.Close())

	// Reopened, the partial record is a torn tail: the replica continues from its end.
	replica = openLog(t, o)
	require.Equal(t, published, replica.ReplicaOffset())
	copyRaw(t, master, replica, published, end, rng)
	require.Equal(t, end, replica.MaxOffset())
	require.Len(t, readAll(t, replica), 120)

	// DiscardReplicaTail drops a held partial record.
	rec := newRecord("TopicR", 0, 500, 999)
	res, err := master.Append([]message.Record{rec}, false)
	require.NoError(t, err)
	v, err := master.Read(res.PhysicalOffset, 40)
	require.NoError(t, err)
	require.NoError(t, replica.AppendReplica(res.PhysicalOffset, v.Bytes()))
	v.Release()
	n, err := replica.DiscardReplicaTail()
	require.NoError(t, err)
	require.EqualValues(t, 40, n)
	require.Equal(t, end, replica.ReplicaOffset())
	_, err = replica.Append([]message.Record{newRecord("TopicR", 0, 10, 1)}, false)
	require.NoError(t, err)
}

func TestAppendReplicaSegmentSizeMismatch(t *testing.T) {
	master := openLog(t, testOptions(mmap.OSFS{}, t.TempDir()))
	o := testOptions(mmap.OSFS{}, t.TempDir())
	o.SegmentSize = testSegSize / 2
	replica := openLog(t, o)
	fillMaster(t, master, 40)
	var err error
	for off := int64(0); off < master.MaxOffset() && err == nil; {
		var v *View
		v, err = master.Read(off, 4096)
		require.NoError(t, err)
		err = replica.AppendReplica(off, v.Bytes())
		off += int64(len(v.Bytes()))
		v.Release()
	}
	require.ErrorIs(t, err, ErrReplicaData)
	require.Equal(t, replica.MaxOffset(), replica.ReplicaOffset(), "bad bytes are dropped")
	require.LessOrEqual(t, replica.MaxOffset(), o.SegmentSize)
	readAll(t, replica)
}

func TestAppendReplicaGarbage(t *testing.T) {
	replica := openLog(t, testOptions(mmap.OSFS{}, t.TempDir()))
	junk := bytes.Repeat([]byte{0xAB}, 300)
	err := replica.AppendReplica(0, junk)
	require.True(t, errors.Is(err, ErrReplicaData), "%v", err)
	require.Zero(t, replica.ReplicaOffset())
	require.Zero(t, replica.MaxOffset())
}

// StartReplicaAt moves an empty log to a segment boundary; the replica then holds the
// master's segments from there, byte for byte, across a restart. It refuses a log with
// data and an unaligned start.
func TestStartReplicaAt(t *testing.T) {
	mdir, rdir := t.TempDir(), t.TempDir()
	master := openLog(t, testOptions(mmap.OSFS{}, mdir))
	fillMaster(t, master, 300)
	end := master.MaxOffset()
	_, err := master.DeleteBefore(2 * testSegSize)
	require.NoError(t, err)
	from := master.MinOffset()
	require.Equal(t, int64(2*testSegSize), from)

	o := testOptions(mmap.OSFS{}, rdir)
	replica, err := Open(o)
	require.NoError(t, err)
	require.ErrorIs(t, replica.StartReplicaAt(from+1), ErrLayout)
	require.NoError(t, replica.StartReplicaAt(from))
	_, err = os.Stat(segPath(rdir, 0))
	require.True(t, os.IsNotExist(err), "the empty segment 0 is removed")
	require.Equal(t, from, replica.MinOffset())
	require.Equal(t, from, replica.ReplicaOffset())
	copyRaw(t, master, replica, from, end, rand.New(rand.NewPCG(5, 6)))
	require.Equal(t, end, replica.MaxOffset())
	require.ErrorIs(t, replica.StartReplicaAt(from), ErrNotEmpty)
	require.NoError(t, replica.Close())

	replica = openLog(t, o)
	require.Equal(t, from, replica.MinOffset())
	require.Equal(t, end, replica.MaxOffset())
	for start := from; start < end; start += testSegSize {
		a, err := os.ReadFile(segPath(mdir, start))
		require.NoError(t, err)
		b, err := os.ReadFile(segPath(rdir, start))
		require.NoError(t, err)
		n := min(end-start, testSegSize)
		require.True(t, bytes.Equal(a[:n], b[:n]), "segment %d differs", start)
	}
}

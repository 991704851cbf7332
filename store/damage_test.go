package store

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

// patchLog changes bytes of the commit log of a store in o at physical offset phy.
func patchLog(t *testing.T, o Options, phy int64, fn func(b []byte)) {
	t.Helper()
	start := phy / o.SegmentSize * o.SegmentSize
	path := filepath.Join(o.commitLogDir(), specFileName(start))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	b := make([]byte, 4096)
	n, err := f.ReadAt(b, phy-start)
	require.NoError(t, err)
	fn(b[:n])
	_, err = f.WriteAt(b[:n], phy-start)
	require.NoError(t, err)
}

// TestFlippedByteWithDamagedCheckpointCostsOneRecord is the operator's worst morning: a
// crash, a damaged checkpoint, and one flipped byte in the first segment of a long log.
// Recovery must keep everything but the damaged record, report it, copy its bytes aside,
// and the record's queue must skip its offset and go on.
func TestFlippedByteWithDamagedCheckpointCostsOneRecord(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	s, err := Open(o)
	require.NoError(t, err)
	s.Start()
	msgs := makeMessages(1200, 3, 2)
	var offs []int64
	for _, m := range msgs {
		offs = append(offs, put(t, s, m, false).PhysicalOffset)
	}
	waitDispatched(t, s)
	require.Greater(t, len(s.cl.Segments()), 4)
	require.NoError(t, s.writeCheckpoint())
	require.NoError(t, s.closeForTest()) // a crash: abort stays

	victim := 100 // in the first segment
	body := []byte(msgs[victim].body)
	patchLog(t, o, offs[victim], func(b []byte) {
		i := bytes.Index(b, body)
		require.Positive(t, i)
		b[i+2] ^= 0x20
	})
	cp, err := os.ReadFile(o.checkpointPath())
	require.NoError(t, err)
	cp[50] ^= 0xff
	require.NoError(t, os.WriteFile(o.checkpointPath(), cp, 0o644))

	s2 := openStore(t, o)
	require.Equal(t, int64(1), s2.Damage().QuarantinedRanges)
	kept, err := os.ReadDir(o.quarantineDir())
	require.NoError(t, err)
	require.Len(t, kept, 1, "the damaged bytes are copied aside")
	require.Equal(t, len(msgs)-1, checkQueuesConsistent(t, s2), "every other message is back")
	v := msgs[victim]
	recs := queueContents(t, s2, v.topic, v.queueID)
	require.Len(t, recs, len(msgs)/6-1)
	for _, r := range recs {
		require.NotEqual(t, v.body, string(r.Body))
	}
	res := put(t, s2, testMessage{topic: v.topic, queueID: v.queueID, body: "after", uniq: "U-after"}, false)
	require.Equal(t, int64(len(msgs)/6), res.QueueOffset, "queue offsets go on after the lost one")
	waitDispatched(t, s2)
	require.Len(t, queueContents(t, s2, v.topic, v.queueID), len(msgs)/6)
	ts, err := s2.OffsetByTime(v.topic, v.queueID, 0, false)
	require.NoError(t, err, "a search by time steps over the lost offset")
	require.Equal(t, s2.MinOffset(v.topic, v.queueID), ts)
}

// TestDamageAfterRecoveryIsNotServed damages records of a running store below its
// checkpoint, where recovery does not look: a pull must skip a record whose header is
// wrong, whose port or body CRC fails or whose topic is not its queue's — every record
// it serves decodes — and a view or key query
// must refuse one whose body CRC fails. A consumer still moves past every skipped record.
func TestDamageAfterRecoveryIsNotServed(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	s := openStore(t, o)
	var offs []int64
	for i := range 10 {
		m := testMessage{topic: "T", body: "payload-" + string(rune('a'+i)), uniq: "U" + string(rune('a'+i)), keys: "k"}
		offs = append(offs, put(t, s, m, false).PhysicalOffset)
	}
	waitDispatched(t, s)

	patchLog(t, o, offs[3], func(b []byte) { binary.BigEndian.PutUint32(b[message.PosMagic:], 0x01020304) })
	patchLog(t, o, offs[6], func(b []byte) { b[bytes.Index(b, []byte("payload-g"))] ^= 1 })
	patchLog(t, o, offs[9], func(b []byte) { b[bytes.Index(b, []byte("payload-j"))+len("payload-j")+1] ^= 1 }) // topic
	patchLog(t, o, offs[1], func(b []byte) { b[message.PosBornHost+4] ^= 0x80 })                               // born port

	r, err := s.GetMessages("T", 0, 0, 32, 1<<20, nil)
	require.NoError(t, err)
	require.Len(t, r.Messages, 6, "the records with a bad header, port, body CRC or topic are skipped")
	require.Equal(t, int64(10), r.NextBeginOffset)
	for i, b := range r.Messages {
		rec, _, err := message.DecodeRecord(b)
		require.NoError(t, err)
		require.NoError(t, rec.VerifyBodyCRC())
		require.NotContains(t, []int64{1, 3, 6, 9}, r.QueueOffsets[i])
	}
	r.Release()
	require.Equal(t, int64(4), s.Damage().BadReads)
	r, err = s.GetMessages("T", 0, 6, 1, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{7}, r.QueueOffsets, "a pull at the damaged record gets the next one")
	require.Equal(t, int64(8), r.NextBeginOffset)
	r.Release()
	r, err = s.GetMessages("T", 0, 9, 1, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, NoMatchedMessage, r.Status)
	require.Equal(t, int64(10), r.NextBeginOffset, "the consumer moves past a damaged last record")
	r.Release()

	_, _, err = s.ReadMessage(offs[6])
	require.ErrorIs(t, err, ErrDamaged)
	qr, err := s.QueryByKey("T", "k", false, 32, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, qr.Records, 6, "no record with a bad header, port, body CRC or topic is a query result")
	qr.Release()
}

// TestShortLastSegmentWithPreallocatedSuccessor cuts the last data segment of a crashed
// store in the middle of a record, below the checkpoint, with the next segment left
// preallocated (full size, zeros) after it: the store opens, serves every message wholly
// before the cut and none after it, and takes new messages.
func TestShortLastSegmentWithPreallocatedSuccessor(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	s, err := Open(o)
	require.NoError(t, err)
	s.Start()
	msgs := makeMessages(900, 3, 2)
	var res []commitlog.AppendResult
	for _, m := range msgs {
		res = append(res, put(t, s, m, false))
	}
	waitDispatched(t, s)
	segs := s.cl.Segments()
	require.Greater(t, len(segs), 3)
	require.NoError(t, s.writeCheckpoint())
	require.NoError(t, s.closeForTest()) // a crash: abort stays

	lastStart := segs[len(segs)-1].Start
	end := res[len(res)-1].NextOffset()
	cut := lastStart + (end-lastStart)/2
	last := filepath.Join(o.commitLogDir(), specFileName(lastStart))
	require.NoError(t, os.Truncate(last, cut-lastStart))
	succ := filepath.Join(o.commitLogDir(), specFileName(lastStart+o.SegmentSize))
	require.NoError(t, os.WriteFile(succ, make([]byte, o.SegmentSize), 0o644))

	s2 := openStore(t, o)
	want := map[string]bool{} // bodies of the messages wholly before the cut
	for i, m := range msgs {
		if res[i].NextOffset() <= cut {
			want[m.body] = true
		}
	}
	got := 0
	for _, q := range [][2]any{{"Topic0", 0}, {"Topic0", 1}, {"Topic1", 0}, {"Topic1", 1}, {"Topic2", 0}, {"Topic2", 1}} {
		for _, r := range queueContents(t, s2, q[0].(string), int32(q[1].(int))) {
			require.True(t, want[string(r.Body)], "served a message after the cut")
			got++
		}
	}
	require.Equal(t, len(want), got, "every message before the cut is served")
	require.Less(t, got, len(msgs))
	put(t, s2, testMessage{topic: "Topic0", body: "after", uniq: "U-after"}, false)
	waitDispatched(t, s2)
}

// TestDamageBelowCheckpointWithRederivedQueues damages commit-log records far below a
// valid checkpoint — a zeroed range across record headers and a flipped body byte — and
// removes the consume queues, so recovery re-dispatches from the log's start, through
// bytes its validation from the checkpoint never read. The store starts, quarantines the
// damage, serves every other message and none of the damaged ones.
func TestDamageBelowCheckpointWithRederivedQueues(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	s, err := Open(o)
	require.NoError(t, err)
	s.Start()
	msgs := makeMessages(900, 3, 2)
	var res []commitlog.AppendResult
	for _, m := range msgs {
		res = append(res, put(t, s, m, false))
	}
	waitDispatched(t, s)
	require.Greater(t, len(s.cl.Segments()), 3)
	require.NoError(t, s.writeCheckpoint())
	require.NoError(t, s.closeForTest())

	zeroed := [2]int64{res[100].PhysicalOffset + 30, res[103].PhysicalOffset + 10} // 100..103 lost
	patchLog(t, o, zeroed[0], func(b []byte) { clear(b[:zeroed[1]-zeroed[0]]) })
	flipped := 200
	patchLog(t, o, res[flipped].PhysicalOffset, func(b []byte) {
		i := bytes.Index(b, []byte(msgs[flipped].body))
		require.Positive(t, i)
		b[i+1] ^= 0x40
	})
	require.NoError(t, os.RemoveAll(o.consumeQueueDir()))

	s2 := openStore(t, o)
	require.Equal(t, int64(2), s2.Damage().QuarantinedRanges)
	want := map[string]bool{}
	for i, m := range msgs {
		if (i < 100 || i > 103) && i != flipped {
			want[m.body] = true
		}
	}
	got := 0
	for _, q := range [][2]any{{"Topic0", 0}, {"Topic0", 1}, {"Topic1", 0}, {"Topic1", 1}, {"Topic2", 0}, {"Topic2", 1}} {
		for _, r := range queueContents(t, s2, q[0].(string), int32(q[1].(int))) {
			require.True(t, want[string(r.Body)], "served a damaged message")
			got++
		}
	}
	require.Equal(t, len(want), got, "every undamaged message is served")
	require.Equal(t, len(want), checkQueuesConsistent(t, s2))
}

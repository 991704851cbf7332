package store

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

func TestPutGetQueryRoundTrip(t *testing.T) {
	fsys := mmap.NewMemFS()
	s := openStore(t, testOptions(fsys, "/store"))
	msgs := makeMessages(600, 3, 4)
	for _, m := range msgs {
		put(t, s, m, false)
	}
	waitDispatched(t, s)

	// Every queue returns its messages in send order with consecutive queue offsets.
	byQueue := map[[2]any][]testMessage{}
	for _, m := range msgs {
		k := [2]any{m.topic, m.queueID}
		byQueue[k] = append(byQueue[k], m)
	}
	for k, want := range byQueue {
		got := queueContents(t, s, k[0].(string), k[1].(int32))
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, want[i].body, string(got[i].Body))
			require.Equal(t, int64(i), got[i].QueueOffset)
			require.Equal(t, testHost, got[i].BornHost)
			require.Equal(t, s.opts.StoreHost, got[i].StoreHost)
		}
	}

	// Tag filter by hash.
	tagB := message.TagsHash("TagB")
	r, err := s.GetMessages("Topic0", 0, 0, 1000, 1<<30, func(code int64) bool { return code == tagB })
	require.NoError(t, err)
	require.Equal(t, Found, r.Status)
	for _, b := range r.Messages {
		rec, _, err := message.DecodeRecord(b)
		require.NoError(t, err)
		tags, _ := message.LookupProperty(rec.Properties, message.PropertyTags)
		require.Equal(t, "TagB", string(tags))
	}
	require.Equal(t, s.MaxOffset("Topic0", 0), r.NextBeginOffset, "scanned to the end")
	r.Release()

	// Offsets: bounds statuses.
	max0 := s.MaxOffset("Topic0", 0)
	for _, tc := range []struct {
		off    int64
		status GetStatus
		next   int64
	}{{max0, OffsetOverflowOne, max0}, {max0 + 5, OffsetOverflowBadly, max0}, {-1, OffsetTooSmall, 0}} {
		r, err := s.GetMessages("Topic0", 0, tc.off, 1, 1<<20, nil)
		require.NoError(t, err)
		require.Equal(t, tc.status, r.Status, "offset %d", tc.off)
		require.Equal(t, tc.next, r.NextBeginOffset)
		r.Release()
	}
	r, err = s.GetMessages("NoSuchTopic", 0, 0, 1, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, NoMatchedLogicQueue, r.Status)
	r.Release()

	// Query by key and by unique key, collisions filtered.
	qr, err := s.QueryByKey("Topic1", "k4", false, 32, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, qr.Records, 1)
	qr.Release()
	qr, err = s.QueryByKey("Topic1", "order-0", false, 32, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, qr.Records, 3, "i = 1, 4, 7 are Topic1 with order-0")
	qr.Release()
	qr, err = s.QueryByKey("Topic0", "k4", false, 32, 0, 1<<62)
	require.NoError(t, err)
	require.Empty(t, qr.Records, "k4 is a Topic1 key")
	qr.Release()

	// Offset by time and earliest store time.
	ts, err := s.EarliestStoreTime("Topic2", 3)
	require.NoError(t, err)
	require.Positive(t, ts)
	off, err := s.OffsetByTime("Topic2", 3, ts, false)
	require.NoError(t, err)
	require.Equal(t, int64(0), off)
	off, err = s.OffsetByTime("Topic2", 3, time.Now().Add(time.Hour).UnixMilli(), false)
	require.NoError(t, err)
	require.Equal(t, s.MaxOffset("Topic2", 3), off)

	require.Equal(t, 600, checkQueuesConsistent(t, s))
}

// A pull allocates nothing per message: results are pooled, messages point into the mapped
// log, and the only allocation is the view of each segment touched.
func TestGetMessagesAllocatesNothingPerMessage(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector (sync.Pool drops items)")
	}
	o := testOptions(mmap.NewMemFS(), "/store")
	o.InMemoryMaxBytes = 1 // every read is "in disk": the check costs nothing either
	s := openStore(t, o)
	for _, m := range makeMessages(200, 1, 1) {
		put(t, s, m, false)
	}
	waitDispatched(t, s)
	allocs := testing.AllocsPerRun(50, func() {
		r, err := s.GetMessages("Topic0", 0, 10, 32, 1<<20, nil)
		if err != nil || r.Status != Found || len(r.Messages) != 32 || !r.InDisk {
			t.Fatalf("get: %v %v", err, r)
		}
		r.Release()
	})
	require.LessOrEqual(t, allocs, 1.0, "one segment view per pull, nothing per message")
}

// A read reports InDisk when its last scanned unit starts more than InMemoryMaxBytes
// behind the commit log's end (RocketMQ's suggestPullingFromSlave), whether or not the
// filter kept it; reads that scan nothing, and a limit of 0, never do.
func TestGetMessagesReportsInDisk(t *testing.T) {
	o := testOptions(mmap.NewMemFS(), "/store")
	s := openStore(t, o)
	var phys []int64
	for _, m := range makeMessages(20, 1, 1) {
		phys = append(phys, put(t, s, m, false).PhysicalOffset)
	}
	waitDispatched(t, s)
	_, end := s.CommitLogRange()
	get := func(offset int64, n int, filter func(int64) bool) (GetStatus, bool) {
		t.Helper()
		r, err := s.GetMessages("Topic0", 0, offset, n, 1<<20, filter)
		require.NoError(t, err)
		defer r.Release()
		return r.Status, r.InDisk
	}
	none := func(int64) bool { return false }
	for _, tc := range []struct {
		name   string
		limit  int64
		offset int64
		n      int
		filter func(int64) bool
		status GetStatus
		inDisk bool
	}{
		{"no limit", 0, 0, 1, nil, Found, false},
		{"first message just past the limit", end - phys[0] - 1, 0, 1, nil, Found, true},
		{"first message at the limit", end - phys[0], 0, 1, nil, Found, false},
		{"the last message pulled decides", end - phys[0] - 1, 0, 20, nil, Found, false},
		{"batch ending past the limit", end - phys[4] - 1, 0, 5, nil, Found, true},
		{"filtered units count", end - phys[19] - 1, 0, 1, none, NoMatchedMessage, true},
		{"filtered units within the limit", end - phys[19], 0, 1, none, NoMatchedMessage, false},
		{"tail", 1, 19, 1, nil, Found, true},
		{"tail within the limit", end - phys[19], 19, 1, nil, Found, false},
		{"nothing new", 1, 20, 1, nil, OffsetOverflowOne, false},
	} {
		s.opts.InMemoryMaxBytes = tc.limit
		st, inDisk := get(tc.offset, tc.n, tc.filter)
		require.Equal(t, tc.status, st, tc.name)
		require.Equal(t, tc.inDisk, inDisk, tc.name)
	}

	o.InMemoryMaxBytes = -1
	require.ErrorContains(t, o.Validate(), "InMemoryMaxBytes")
}

func TestCleanRestartKeepsEverything(t *testing.T) {
	fsys := mmap.NewMemFS()
	o := testOptions(fsys, "/store")
	s := openStore(t, o)
	msgs := makeMessages(300, 2, 2)
	for _, m := range msgs {
		put(t, s, m, false)
	}
	waitDispatched(t, s)
	require.NoError(t, s.Shutdown(context.Background()))
	ok, err := fsys.Exists(o.abortPath())
	require.NoError(t, err)
	require.False(t, ok, "abort file removed on clean shutdown")
	cp, err := loadCheckpoint(fsys, o.checkpointPath())
	require.NoError(t, err)
	require.True(t, cp.Valid)
	require.Equal(t, cp.FlushedOffset, cp.DispatchedOffset)

	s2 := openStore(t, o)
	require.Equal(t, 300, checkQueuesConsistent(t, s2))
	// Appends continue with the right queue offsets.
	res := put(t, s2, testMessage{topic: "Topic1", queueID: 1, body: "after restart", uniq: "U-after"}, false)
	require.Equal(t, int64(75), res.QueueOffset)
}

func TestDiskFullRefusesWritesAndRecovers(t *testing.T) {
	fsys := mmap.NewMemFS()
	o := testOptions(fsys, "/store")
	o.IndexEnabled = false
	s := openStore(t, o)
	// Room for three more segments (one of them preallocated) and a little for consume
	// queue files and the checkpoint's temp file, nothing more: the log fills the segments
	// and is refused the next one, and dispatch still has room for its files even when
	// the appender filled the log before the dispatcher ran at all.
	total, free, err := fsys.DiskUsage("/store")
	require.NoError(t, err)
	fsys.SetCapacity(int64(total-free) + 3*o.SegmentSize + 16<<10)

	var acked []testMessage
	var fullErr error
	for i := 0; i < 5000 && fullErr == nil; i++ {
		m := testMessage{topic: "T", queueID: 0, body: string(make([]byte, 1000)), uniq: "U" + string(rune('a'+i%26))}
		rec := m.record(t)
		_, err := s.PutMessage(&rec, false)
		if err != nil {
			fullErr = err
			break
		}
		acked = append(acked, m)
	}
	require.ErrorIs(t, fullErr, ErrDiskFull)
	require.NotEmpty(t, acked)
	require.True(t, s.DiskFull())
	rec := acked[0].record(t)
	_, err = s.PutMessage(&rec, false)
	require.ErrorIs(t, err, ErrDiskFull, "still refused while full")

	waitDispatched(t, s)
	got := queueContents(t, s, "T", 0)
	require.Len(t, got, len(acked), "everything acknowledged is intact")

	fsys.SetCapacity(0)
	require.Eventually(t, func() bool { return !s.DiskFull() }, 5*time.Second, 5*time.Millisecond)
	res := put(t, s, acked[0], false)
	require.Equal(t, int64(len(acked)), res.QueueOffset)
}

func TestRejectsIllegalMessages(t *testing.T) {
	o := testOptions(mmap.NewMemFS(), "/store")
	o.MaxMessageSize = 100
	s := openStore(t, o)
	rec := testMessage{topic: "T", body: string(make([]byte, 101)), uniq: "u"}.record(t)
	_, err := s.PutMessage(&rec, false)
	require.ErrorIs(t, err, ErrMessageIllegal)
	rec = testMessage{topic: string(make([]byte, 200)), body: "x", uniq: "u"}.record(t)
	_, err = s.PutMessage(&rec, false)
	require.ErrorIs(t, err, ErrMessageIllegal)
	require.NoError(t, s.Shutdown(context.Background()))
	rec = testMessage{topic: "T", body: "x", uniq: "u"}.record(t)
	_, err = s.PutMessage(&rec, false)
	require.ErrorIs(t, err, ErrClosed)
}

// A store written through the API, read back by the independent spec decoder.
func TestOnDiskFormat(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(mmap.OSFS{}, dir)
	s := openStore(t, o)
	msgs := makeMessages(400, 2, 2)
	results := make([]commitlog.AppendResult, len(msgs))
	for i, m := range msgs {
		results[i] = put(t, s, m, false)
	}
	waitDispatched(t, s)
	require.NoError(t, s.Shutdown(context.Background()))

	// Commit log: walk every segment record by record.
	names, err := mmap.OSFS{}.ReadDir(filepath.Join(dir, "commitlog"))
	require.NoError(t, err)
	require.Greater(t, len(names), 1, "the test spans several segments")
	var recs []specRecord
	for _, name := range names {
		b, err := mmap.OSFS{}.ReadFile(filepath.Join(dir, "commitlog", name))
		require.NoError(t, err)
		require.Len(t, b, int(o.SegmentSize))
		for pos := 0; pos+8 <= len(b); {
			r, err := specDecodeRecord(b[pos:])
			if r.TotalSize == 0 {
				break // zero-filled tail of the active segment
			}
			require.NoError(t, err, "segment %s at %d", name, pos)
			if r.Magic == specMagicBlank {
				require.Equal(t, len(b)-pos, int(r.TotalSize), "a filler runs to the segment end")
				break
			}
			recs = append(recs, r)
			pos += int(r.TotalSize)
		}
	}
	require.Len(t, recs, len(msgs))
	for i, r := range recs {
		m := msgs[i]
		require.Equal(t, m.topic, r.Topic)
		require.Equal(t, m.queueID, r.QueueID)
		require.Equal(t, m.body, string(r.Body))
		require.Equal(t, int32(7), r.Flag)
		require.Equal(t, results[i].PhysicalOffset, r.PhysicalOffset)
		require.Equal(t, results[i].QueueOffset, r.QueueOffset)
		require.Equal(t, results[i].StoreTimestamp, r.StoreTimestamp)
		require.Equal(t, int64(1_700_000_000_000), r.BornTimestamp)
		require.Equal(t, []byte{10, 1, 2, 3, 0, 0, 0x13, 0x88}, r.BornHost)
		require.Equal(t, []byte{127, 0, 0, 1, 0, 0, 0x2a, 0x9f}, r.StoreHost)
		require.Contains(t, r.Properties, "UNIQ_KEY\x01"+m.uniq+"\x02")
		require.Contains(t, r.Properties, "TAGS\x01"+m.tags+"\x02")
	}

	// Consume queues: every unit, field by field.
	for i, m := range msgs {
		qdir := filepath.Join(dir, "consumequeue", m.topic, string(rune('0'+m.queueID)))
		unit := results[i].QueueOffset
		file := unit / int64(o.UnitsPerFile) * int64(o.UnitsPerFile) * 20
		b, err := mmap.OSFS{}.ReadFile(filepath.Join(qdir, specFileName(file)))
		require.NoError(t, err)
		u := specDecodeUnit(b[(unit*20)-file:])
		require.Equal(t, results[i].PhysicalOffset, u.PhysicalOffset)
		require.Equal(t, recs[i].TotalSize, u.Size)
		require.Equal(t, int64(specJavaHash(m.tags)), u.TagsCode)
	}

	// Index: every unique key and key word is found by the spec's lookup.
	idxNames, err := mmap.OSFS{}.ReadDir(filepath.Join(dir, "index"))
	require.NoError(t, err)
	require.NotEmpty(t, idxNames)
	found := map[int64]int{}
	for _, name := range idxNames {
		b, err := mmap.OSFS{}.ReadFile(filepath.Join(dir, "index", name))
		require.NoError(t, err)
		require.Len(t, b, 40+o.IndexSlots*4+o.IndexEntries*20)
		h := specDecodeIndexHeader(b)
		require.Equal(t, int32(binary.BigEndian.Uint32(b[36:])), h.IndexCount)
		for i, m := range msgs {
			for _, e := range specIndexLookup(b, o.IndexSlots, m.topic+"#"+m.uniq) {
				if e.PhysicalOffset == results[i].PhysicalOffset {
					found[e.PhysicalOffset]++
					require.GreaterOrEqual(t, h.BeginTimestamp+int64(e.TimeDiff)*1000, h.BeginTimestamp)
				}
			}
		}
	}
	require.Len(t, found, len(msgs), "every unique key is in an index file")

	// The checkpoint carries Ferry's offsets after RocketMQ's timestamps.
	b, err := mmap.OSFS{}.ReadFile(filepath.Join(dir, "checkpoint"))
	require.NoError(t, err)
	require.Len(t, b, 4096)
	require.Equal(t, "FERRYCP1", string(b[40:48]))
	end := results[len(results)-1].NextOffset()
	require.Equal(t, end, int64(binary.BigEndian.Uint64(b[48:])), "flushed offset")
	require.Equal(t, end, int64(binary.BigEndian.Uint64(b[56:])), "dispatched offset")
}

func specFileName(off int64) string {
	b := []byte("00000000000000000000")
	for i := len(b) - 1; off > 0; i-- {
		b[i] = byte('0' + off%10)
		off /= 10
	}
	return string(b)
}

func TestCheckpointCodec(t *testing.T) {
	c := checkpoint{PhysicMsgTimestamp: 1, LogicsMsgTimestamp: 2, IndexMsgTimestamp: 3, Valid: true, FlushedOffset: 400, DispatchedOffset: 300}
	got, err := decodeCheckpoint(encodeCheckpoint(c))
	require.NoError(t, err)
	require.Equal(t, c, got)
	rocket := make([]byte, 4096)
	binary.BigEndian.PutUint64(rocket, 99)
	got, err = decodeCheckpoint(rocket)
	require.NoError(t, err)
	require.False(t, got.Valid)
	require.Equal(t, int64(99), got.PhysicMsgTimestamp)
	bad := encodeCheckpoint(c)
	bad[50]++
	_, err = decodeCheckpoint(bad)
	require.True(t, errors.Is(err, errBadCheckpoint))
	_, err = decodeCheckpoint(bad[:10])
	require.ErrorIs(t, err, errBadCheckpoint)
}

func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(encodeCheckpoint(checkpoint{FlushedOffset: 10, DispatchedOffset: 5}))
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCheckpoint(b)
		if err != nil {
			require.ErrorIs(t, err, errBadCheckpoint)
			return
		}
		if c.Valid {
			back, err := decodeCheckpoint(encodeCheckpoint(c))
			require.NoError(t, err)
			require.Equal(t, c.FlushedOffset, back.FlushedOffset)
			require.Equal(t, c.DispatchedOffset, back.DispatchedOffset)
		}
	})
}

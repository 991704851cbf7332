package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

func TestOptionsValidate(t *testing.T) {
	o := DefaultOptions()
	require.Error(t, o.Validate(), "Dir is required")
	o.Dir = "x"
	require.NoError(t, o.Validate())
	for name, mut := range map[string]func(*Options){
		"unaligned segment": func(o *Options) { o.SegmentSize = PageSize + 1 },
		"tiny segment":      func(o *Options) { o.SegmentSize = 0 },
		"huge segment":      func(o *Options) { o.SegmentSize = MaxSegmentSize + PageSize },
		"flush mode":        func(o *Options) { o.FlushMode = 9 },
		"interval":          func(o *Options) { o.FlushInterval = 0 },
		"least pages":       func(o *Options) { o.FlushLeastPages = -1 },
		"store host":        func(o *Options) { o.StoreHost = netip.AddrPort{} },
		"clock":             func(o *Options) { o.Clock = nil },
		"fs":                func(o *Options) { o.FS = nil },
	} {
		c := o
		mut(&c)
		require.Error(t, c.Validate(), name)
	}
}

func TestAppendReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, testOptions(mmap.OSFS{}, dir))

	single := []message.Record{newRecord("TopicA", 1, 1024, 1)}
	res, err := l.Append(single, false)
	require.NoError(t, err)
	require.Equal(t, AppendResult{PhysicalOffset: 0, Bytes: int32(single[0].Size()), QueueOffset: 0, Count: 1,
		StoreTimestamp: single[0].StoreTimestamp, Status: PutOK, Durable: res.Durable}, res)
	require.Equal(t, int64(single[0].Size()), l.MaxOffset())

	batch := []message.Record{newRecord("TopicA", 1, 10, 2), newRecord("TopicA", 1, 0, 3), newRecord("TopicA", 1, 300, 4)}
	res, err = l.Append(batch, false)
	require.NoError(t, err)
	require.Equal(t, 3, res.Count)
	require.Equal(t, int64(1), res.QueueOffset)
	require.Equal(t, int64(single[0].Size()), res.PhysicalOffset)
	require.Equal(t, int32(batch[0].Size()+batch[1].Size()+batch[2].Size()), res.Bytes)
	require.Equal(t, res.NextOffset(), l.MaxOffset())

	want := append(single, batch...)
	for i, w := range want {
		require.Equal(t, int64(i), w.QueueOffset)
		got, v, err := l.ReadRecord(w.PhysicalOffset)
		require.NoError(t, err)
		requireSameRecord(t, w, got)
		require.Len(t, v.Bytes(), w.Size())
		v.Release()
		v.Release() // idempotent
		next, err := l.Next(w.PhysicalOffset)
		require.NoError(t, err)
		require.Equal(t, w.PhysicalOffset+int64(w.Size()), next)
	}
	got := readAll(t, l)
	require.Len(t, got, 4)

	// The stored bytes are exactly what the message codec produces.
	v, err := l.Read(0, 0)
	require.NoError(t, err)
	enc, err := single[0].AppendTo(nil)
	require.NoError(t, err)
	require.Equal(t, enc, v.Bytes()[:len(enc)])
	v.Release()

	_, _, err = l.ReadRecord(l.MaxOffset())
	require.ErrorIs(t, err, ErrOutOfRange)
	_, err = l.Read(-1, 1)
	require.ErrorIs(t, err, ErrOutOfRange)
	require.NoError(t, l.Flush())
	require.Equal(t, l.MaxOffset(), l.FlushedOffset())
	require.Equal(t, batch[2].StoreTimestamp, l.FlushedStoreTimestamp())
}

func TestQueueOffsets(t *testing.T) {
	l := openLog(t, testOptions(mmap.NewMemFS(), "/log"))
	l.SetQueueOffset("T", 2, 100)
	next := map[int32]int64{0: 0, 1: 0, 2: 100}
	for i := range 60 {
		q := int32(i % 3)
		r := []message.Record{newRecord("T", q, 50, i)}
		res, err := l.Append(r, false)
		require.NoError(t, err)
		require.Equal(t, next[q], res.QueueOffset)
		next[q]++
	}
	for q, n := range next {
		require.Equal(t, n, l.QueueOffset("T", q))
	}

	// PREPARED and ROLLBACK get 0 and do not advance the table; COMMIT does.
	for _, tc := range []struct {
		typ     int32
		want    int64
		advance bool
	}{
		{message.TransactionPreparedType, 0, false},
		{message.TransactionRollbackType, 0, false},
		{message.TransactionCommitType, next[1], true},
	} {
		r := newRecord("T", 1, 20, 99)
		r.SysFlag = tc.typ
		res, err := l.Append([]message.Record{r}, false)
		require.NoError(t, err)
		require.Equal(t, tc.want, res.QueueOffset)
		if tc.advance {
			next[1]++
		}
		require.Equal(t, next[1], l.QueueOffset("T", 1))
		got, v, err := l.ReadRecord(res.PhysicalOffset)
		require.NoError(t, err)
		require.Equal(t, tc.want, got.QueueOffset)
		v.Release()
	}
	// A prepared record of an unknown queue does not create an entry.
	r := newRecord("Half", 0, 20, 1)
	r.SysFlag = message.TransactionPreparedType
	_, err := l.Append([]message.Record{r}, false)
	require.NoError(t, err)
	l.RangeQueueOffsets(func(topic string, _ int32, _ int64) bool {
		require.NotEqual(t, "Half", topic)
		return true
	})

	// Queue offsets are strictly increasing in physical order per queue.
	last := map[int32]int64{}
	for _, rec := range readAll(t, l) {
		if !message.IsConsumable(rec.SysFlag) {
			continue
		}
		if prev, ok := last[rec.QueueID]; ok {
			require.Equal(t, prev+1, rec.QueueOffset)
		}
		last[rec.QueueID] = rec.QueueOffset
	}

	l.RemoveTopic("T")
	require.Equal(t, int64(0), l.QueueOffset("T", 1))
}

func TestAppendErrors(t *testing.T) {
	l := openLog(t, testOptions(mmap.NewMemFS(), "/log"))
	_, err := l.Append(nil, false)
	require.ErrorIs(t, err, ErrBadBatch)
	_, err = l.Append([]message.Record{newRecord("", 0, 1, 0)}, false)
	require.ErrorIs(t, err, message.ErrTopicEmpty)
	_, err = l.Append([]message.Record{newRecord(string(make([]byte, 128)), 0, 1, 0)}, false)
	require.ErrorIs(t, err, message.ErrTopicTooLong)
	_, err = l.Append([]message.Record{newRecord("A", 0, 1, 0), newRecord("A", 1, 1, 0)}, false)
	require.ErrorIs(t, err, ErrBadBatch)
	_, err = l.Append([]message.Record{newRecord("A", 0, 1, 0), newRecord("B", 0, 1, 0)}, false)
	require.ErrorIs(t, err, ErrBadBatch)

	// The largest record a segment takes is SegmentSize-8 bytes.
	big := newRecord("A", 0, 0, 0)
	big.Body = make([]byte, testSegSize-message.BlankHeaderSize-big.Size())
	_, err = l.Append([]message.Record{big}, false)
	require.NoError(t, err)
	big.Body = append(big.Body, 1)
	_, err = l.Append([]message.Record{big}, false)
	require.ErrorIs(t, err, ErrRecordTooLarge)
	half := newRecord("A", 0, testSegSize/2, 0)
	_, err = l.Append([]message.Record{half, half}, false)
	require.ErrorIs(t, err, ErrRecordTooLarge)
	require.Equal(t, int64(testSegSize-message.BlankHeaderSize), l.MaxOffset())

	require.NoError(t, l.Close())
	_, err = l.Append([]message.Record{newRecord("A", 0, 1, 0)}, false)
	require.ErrorIs(t, err, ErrClosed)
	_, err = l.Read(0, 1)
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, l.Close())
}

func TestRolloverBlankFiller(t *testing.T) {
	fs := mmap.NewMemFS()
	l := openLog(t, testOptions(fs, "/log"))
	r := newRecord("T", 0, 1000, 0)
	size := int64(r.Size())

	// Fill the first segment so that exactly size+8 bytes remain: the record still fits.
	pad := newRecord("T", 0, 0, 0)
	pad.Body = make([]byte, testSegSize-2*size-message.BlankHeaderSize-int64(pad.Size()))
	_, err := l.Append([]message.Record{pad}, false)
	require.NoError(t, err)
	_, err = l.Append([]message.Record{r}, false)
	require.NoError(t, err)
	require.Equal(t, int64(testSegSize)-size-8, l.MaxOffset())
	// size+8 bytes left: fits (the rule is L+8 > R).
	res, err := l.Append([]message.Record{r}, false)
	require.NoError(t, err)
	require.Equal(t, int64(testSegSize)-size-8, res.PhysicalOffset)
	require.Equal(t, int64(testSegSize-8), l.MaxOffset())
	// 8 bytes left: a filler of 8 bytes, the record goes to the next segment.
	res, err = l.Append([]message.Record{r}, false)
	require.NoError(t, err)
	require.Equal(t, int64(testSegSize), res.PhysicalOffset)
	checkFiller(t, l, testSegSize-8, 8)

	// A larger gap: 1,000 bytes left, a record of 1,100 needs the next segment.
	empty := newRecord("T", 0, 0, 0)
	pad.Body = make([]byte, testSegSize-size-1000-int64(empty.Size()))
	_, err = l.Append([]message.Record{pad}, false)
	require.NoError(t, err)
	require.Equal(t, int64(2*testSegSize-1000), l.MaxOffset())
	batch := []message.Record{newRecord("T", 0, 500, 1), newRecord("T", 0, 500, 2)}
	res, err = l.Append(batch, false)
	require.NoError(t, err)
	require.Equal(t, int64(2*testSegSize), res.PhysicalOffset, "a batch is never split")
	checkFiller(t, l, 2*testSegSize-1000, 1000)

	// Readers skip fillers.
	next, err := l.Next(2*testSegSize - 1000)
	require.NoError(t, err)
	require.Equal(t, int64(2*testSegSize), next)
	_, _, err = l.ReadRecord(2*testSegSize - 1000)
	require.ErrorIs(t, err, message.ErrBlank)
	recs := readAll(t, l)
	require.Len(t, recs, 7)
	for i, rec := range recs {
		require.Equal(t, int64(i), rec.QueueOffset)
	}
	require.Len(t, l.Segments(), 3)
}

// checkFiller checks the blank filler at off: TOTALSIZE = n, blank magic, zeros after.
func checkFiller(t *testing.T, l *Log, off int64, n int) {
	t.Helper()
	v, err := l.Read(off, 0)
	require.NoError(t, err)
	defer v.Release()
	b := v.Bytes()
	require.Len(t, b, n)
	require.Equal(t, uint32(n), binary.BigEndian.Uint32(b[0:]))
	require.Equal(t, message.MagicBlank, binary.BigEndian.Uint32(b[4:]))
	require.Equal(t, make([]byte, n-8), b[8:])
}

func TestReopenRecover(t *testing.T) {
	for _, fsName := range []string{"os", "mem"} {
		t.Run(fsName, func(t *testing.T) {
			var fs mmap.FS = mmap.OSFS{}
			dir := t.TempDir()
			if fsName == "mem" {
				fs, dir = mmap.NewMemFS(), "/store/commitlog"
			}
			o := testOptions(fs, dir)
			l := openLog(t, o)
			var want []message.Record
			for i := range 300 {
				recs := []message.Record{newRecord(fmt.Sprintf("T%d", i%4), int32(i%2), 100+i*7%900, i)}
				if i%10 == 0 {
					recs = append(recs, newRecord(string(recs[0].Topic), recs[0].QueueID, 33, i+1000))
				}
				_, err := l.Append(recs, false)
				require.NoError(t, err)
				want = append(want, recs...)
			}
			end := l.MaxOffset()
			require.Greater(t, end, int64(2*testSegSize))
			require.NoError(t, l.Close())

			l2, err := Open(o)
			require.NoError(t, err)
			defer func() { require.NoError(t, l2.Close()) }()
			_, err = l2.Append([]message.Record{newRecord("T0", 0, 1, 0)}, false)
			require.ErrorIs(t, err, ErrNotRecovered)
			got, err := l2.Recover(0, true)
			require.NoError(t, err)
			require.Equal(t, end, got)
			require.Equal(t, end, l2.MaxOffset())
			require.Equal(t, end, l2.FlushedOffset())
			all := readAll(t, l2)
			require.Len(t, all, len(want))
			for i := range want {
				requireSameRecord(t, want[i], all[i])
			}
			// The table was rebuilt from the scan and appends continue it.
			res, err := l2.Append([]message.Record{newRecord("T1", 1, 5, 0)}, false)
			require.NoError(t, err)
			require.Equal(t, end, res.PhysicalOffset)
			n := 0
			for _, w := range want {
				if string(w.Topic) == "T1" && w.QueueID == 1 {
					n++
				}
			}
			require.Equal(t, int64(n), res.QueueOffset)
			require.GreaterOrEqual(t, res.StoreTimestamp, want[len(want)-1].StoreTimestamp)
			_, err = l2.Recover(0, true)
			require.ErrorIs(t, err, ErrAlreadyAppended)
		})
	}
}

func TestRecoverTail(t *testing.T) {
	fs := mmap.NewMemFS()
	o := testOptions(fs, "/log")
	l := openLog(t, o)
	for i := range 400 {
		_, err := l.Append([]message.Record{newRecord("T", 0, 700, i)}, false)
		require.NoError(t, err)
	}
	end := l.MaxOffset()
	require.NoError(t, l.Close())
	l2, err := Open(o)
	require.NoError(t, err)
	defer l2.Close()
	got, err := l2.RecoverTail(3, true)
	require.NoError(t, err)
	require.Equal(t, end, got)
	require.Equal(t, int64(400), l2.QueueOffset("T", 0))
}

func TestOpenLayout(t *testing.T) {
	mk := func(t *testing.T, names ...int64) *mmap.MemFS {
		fs := mmap.NewMemFS()
		require.NoError(t, fs.MkdirAll("/log"))
		for _, n := range names {
			m, err := fs.OpenMapped(segPath("/log", n), testSegSize, true)
			require.NoError(t, err)
			require.NoError(t, m.Close())
		}
		return fs
	}
	_, err := Open(testOptions(mk(t, 0, 2*testSegSize), "/log"))
	require.ErrorIs(t, err, ErrLayout)
	_, err = Open(testOptions(mk(t, 100), "/log"))
	require.ErrorIs(t, err, ErrLayout)
	// A short segment, last or not, lost bytes: it is padded back to size and recovery
	// decides (see TestShortLastSegmentIsATornTail); a longer one is a broken layout.
	fs := mk(t, 0)
	_, err = fs.OpenMapped(segPath("/log", testSegSize), 4096, true)
	require.NoError(t, err)
	_, err = fs.OpenMapped(segPath("/log", 2*testSegSize), testSegSize, true)
	require.NoError(t, err)
	short, err := Open(testOptions(fs, "/log"))
	require.NoError(t, err, "a short segment before another opens")
	size, err := fs.Size(segPath("/log", testSegSize))
	require.NoError(t, err)
	require.Equal(t, int64(testSegSize), size)
	require.NoError(t, short.Close())
	long := mk(t, 0)
	_, err = long.OpenMapped(segPath("/log", testSegSize), 2*testSegSize, true)
	require.NoError(t, err)
	_, err = Open(testOptions(long, "/log"))
	require.ErrorIs(t, err, ErrLayout)

	// A zero-length last segment (crash during creation) is removed; other files ignored.
	fs = mk(t, 0, testSegSize)
	require.NoError(t, fs.WriteFileAtomic(segPath("/log", 2*testSegSize), nil))
	require.NoError(t, fs.WriteFileAtomic("/log/README", []byte("x")))
	l, err := Open(testOptions(fs, "/log"))
	require.NoError(t, err)
	require.Len(t, l.Segments(), 2)
	end, err := l.Recover(0, true)
	require.NoError(t, err)
	require.Equal(t, int64(0), end)
	require.Len(t, l.Segments(), 1, "the empty second segment is deleted by the truncation")
	require.NoError(t, l.Close())
	ok, err := fs.Exists(segPath("/log", 2*testSegSize))
	require.NoError(t, err)
	require.False(t, ok)
}

func TestConcurrentAppendersAndReaders(t *testing.T) {
	for _, tc := range []struct {
		mode   FlushMode
		mapped bool
	}{{FlushAsync, false}, {FlushSync, false}, {FlushSync, true}} {
		mode := tc.mode
		t.Run(fmt.Sprintf("%s/mapped=%t", mode, tc.mapped), func(t *testing.T) {
			o := testOptions(mmap.NewMemFS(), "/log")
			o.FlushMode = mode
			o.MappedSyncAppends = tc.mapped
			l := openLog(t, o)
			const writers, perWriter = 6, 150
			var wg sync.WaitGroup
			done := make(chan struct{})
			readerErr := make(chan error, 2)
			for range 2 {
				wg.Add(1)
				go func() { // tail the log like the dispatcher
					defer wg.Done()
					it := l.NewIterator(0)
					defer it.Close()
					seen := map[int32]int64{}
					for {
						for it.Next() {
							r := it.Record()
							if r.PhysicalOffset != it.Offset() || r.QueueOffset != seen[r.QueueID] || r.VerifyBodyCRC() != nil {
								readerErr <- fmt.Errorf("bad record at %d: queue offset %d, want %d", it.Offset(), r.QueueOffset, seen[r.QueueID])
								return
							}
							seen[r.QueueID]++
						}
						if it.Err() != nil {
							readerErr <- it.Err()
							return
						}
						select {
						case <-done:
							if it.Pos() == l.MaxOffset() {
								return
							}
						default:
							time.Sleep(50 * time.Microsecond) // back off while tailing; asserts nothing
						}
					}
				}()
			}
			var appenders sync.WaitGroup
			for w := range writers {
				appenders.Add(1)
				go func() {
					defer appenders.Done()
					for i := range perWriter {
						res, err := l.Append([]message.Record{newRecord("T", int32(w%3), 200+i%300, i)}, true)
						if err != nil || res.Status != PutOK || (mode == FlushSync) != res.Durable && mode == FlushSync {
							readerErr <- fmt.Errorf("append: %w (%+v)", err, res)
							return
						}
					}
				}()
			}
			appenders.Wait()
			close(done)
			wg.Wait()
			close(readerErr)
			for err := range readerErr {
				require.NoError(t, err)
			}
			require.Len(t, readAll(t, l), writers*perWriter)
		})
	}
}

func TestDeleteSegments(t *testing.T) {
	fs := mmap.NewMemFS()
	o := testOptions(fs, "/log")
	o.DestroyTimeout = 40 * time.Millisecond
	now := time.UnixMilli(1_700_000_000_000)
	o.Clock = func() time.Time { return now }
	l := openLog(t, o)
	for i := range 5 * 60 {
		if i%60 == 0 {
			now = now.Add(time.Hour)
		}
		_, err := l.Append([]message.Record{newRecord("T", 0, 1000, i)}, false)
		require.NoError(t, err)
	}
	segs := l.Segments()
	require.GreaterOrEqual(t, len(segs), 5)
	require.True(t, segs[len(segs)-1].Active)
	for i := 0; i+1 < len(segs); i++ {
		require.NotZero(t, segs[i].LastStoreTimestamp)
		require.LessOrEqual(t, segs[i].LastStoreTimestamp, segs[i+1].LastStoreTimestamp)
	}

	// A reader holds the first segment across its deletion.
	v, err := l.Read(0, 100)
	require.NoError(t, err)
	n, err := l.DeleteBefore(segs[0].End)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, segs[1].Start, l.MinOffset())
	_, err = l.Read(0, 1)
	require.ErrorIs(t, err, ErrDeleted)
	require.Len(t, v.Bytes(), 100, "still mapped")
	ok, err := fs.Exists(segPath("/log", 0))
	require.NoError(t, err)
	require.False(t, ok)
	first := v.seg
	require.Eventually(t, func() bool { return first.refs.Load() < 0 }, 2*time.Second, 5*time.Millisecond,
		"force-unmapped after DestroyTimeout")
	v.Release()

	// Expired by time: stops at the first segment that is not expired.
	n, err = l.DeleteExpired(time.UnixMilli(segs[2].LastStoreTimestamp), 10)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, segs[3].Start, l.MinOffset())
	// Never the active segment.
	n, err = l.DeleteSegments(0, func(SegmentInfo) bool { return true })
	require.NoError(t, err)
	require.Len(t, l.Segments(), 1)
	require.Equal(t, len(segs)-4, n)
	all := readAll(t, l)
	require.NotEmpty(t, all)
	require.NoError(t, l.Close())

	// Reopen: the log starts at the remaining segment.
	l2, err := Open(o)
	require.NoError(t, err)
	defer l2.Close()
	end, err := l2.RecoverTail(3, true)
	require.NoError(t, err)
	require.Equal(t, segs[len(segs)-1].Start, l2.MinOffset())
	require.Equal(t, all[len(all)-1].PhysicalOffset+int64(all[len(all)-1].StoreSize), end)
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{ErrClosed, ErrNotRecovered, ErrAlreadyAppended, ErrRecordTooLarge, ErrBadBatch,
		ErrOutOfRange, ErrDeleted, ErrCorrupt, ErrLayout, ErrFlushFailed}
	for i, a := range errs {
		for j, b := range errs {
			require.Equal(t, i == j, errors.Is(a, b))
		}
	}
}

func TestIteratorStopsAtCorruption(t *testing.T) {
	l := openLog(t, testOptions(mmap.NewMemFS(), "/log"))
	var offs []int64
	for i := range 5 {
		res, err := l.Append([]message.Record{newRecord("T", 0, 100, i)}, false)
		require.NoError(t, err)
		offs = append(offs, res.PhysicalOffset)
	}
	// Damage the fourth record's size field in place (white box: the log never does).
	l.mu.Lock()
	seg := l.segs.Load().segs[0]
	seg.data[offs[3]+3] ^= 0x40
	l.mu.Unlock()
	it := l.NewIterator(0)
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	require.Equal(t, 3, n)
	require.ErrorIs(t, it.Err(), ErrCorrupt)
	require.Equal(t, offs[3], it.Pos())
	require.False(t, it.Next(), "stays stopped")
	_, _, err := l.ReadRecord(offs[3])
	require.ErrorIs(t, err, ErrCorrupt)
}

// Mapped async appends on real files go through write windows that move forward inside
// a segment and close when it fills: every record reads back, before and after a reopen.
func TestWriteWindowsOnRealFiles(t *testing.T) {
	o := testOptions(mmap.OSFS{}, t.TempDir())
	o.SegmentSize = 4 * windowSize
	o.MappedAsyncAppends = true
	l := openLog(t, o)
	var want []message.Record
	for i := 0; l.MaxOffset() < o.SegmentSize+windowSize; i++ {
		recs := []message.Record{newRecord("T", int32(i%3), 1000+i%1500, i)}
		_, err := l.Append(recs, false)
		require.NoError(t, err)
		want = append(want, recs...)
		if i%1000 == 0 { // the window is where the writer is
			require.NotNil(t, l.mu.cur.win)
			require.LessOrEqual(t, l.mu.cur.win.Offset(), recs[0].PhysicalOffset-l.mu.cur.start)
		}
	}
	check := func(l *Log) {
		got := readAll(t, l)
		require.Len(t, got, len(want))
		for i := range want {
			requireSameRecord(t, want[i], got[i])
		}
	}
	check(l)
	require.Nil(t, l.segs.Load().segs[0].win, "a full segment has no window")
	end := l.MaxOffset()
	require.NoError(t, l.Close())

	l2, got := recoverFS(t, o, o.FS)
	defer func() { require.NoError(t, l2.Close()) }()
	require.Equal(t, end, got)
	check(l2)
}

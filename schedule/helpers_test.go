package schedule

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClock is real time shifted by an adjustable offset.
type fakeClock struct{ offset atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *fakeClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// settle lets d of fake time pass in a synctest bubble and waits until every goroutine of
// the bubble is blocked again: whatever the timers due in d set off has finished.
func settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// harness is a real store on a MemFS plus a schedule service, wired like the broker does.
type harness struct {
	t      testing.TB
	fs     *mmap.MemFS
	dir    string
	levels []time.Duration

	storeClock func() time.Time
	syncFlush  bool
	st         *store.Store
	svc        *Service
	notify     atomic.Pointer[Service] // the service the store's Notify hook reaches
	buf        []byte
}

// levelString returns n levels of step, 2×step, ....
func levelString(n int, step string) string {
	d, err := time.ParseDuration(step)
	if err != nil {
		panic(err)
	}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%dms", (time.Duration(i+1) * d).Milliseconds())
	}
	return strings.Join(parts, " ")
}

func newHarness(t testing.TB, levels string) *harness {
	t.Helper()
	lv, err := ParseLevels(levels)
	require.NoError(t, err)
	h := &harness{t: t, fs: mmap.NewMemFS(), dir: t.TempDir(), levels: lv}
	t.Cleanup(func() {
		if h.svc != nil {
			_ = h.svc.Shutdown(context.Background())
		}
		if h.st != nil {
			_ = h.st.Shutdown(context.Background())
		}
	})
	return h
}

// openStore opens and starts the store on h.fs.
func (h *harness) openStore() {
	h.t.Helper()
	o := store.DefaultOptions()
	o.Dir = h.dir
	o.FS = h.fs
	o.SegmentSize = 64 << 10
	o.UnitsPerFile = 100
	o.IndexSlots = 64
	o.IndexEntries = 400
	o.CheckpointInterval = 20 * time.Millisecond
	o.FlushInterval = 10 * time.Millisecond
	o.DiskCheckInterval = 10 * time.Millisecond
	o.CleanInterval = time.Hour
	o.StoreHost = netip.MustParseAddrPort("10.0.0.1:10911")
	if h.syncFlush {
		o.FlushMode = commitlog.FlushSync
	}
	if h.storeClock != nil {
		o.Clock = h.storeClock
	}
	o.TagsCode = TagsCoder(h.levels)
	o.Notify = func(topic string, queueID int32, maxOffset, _ int64) {
		if s := h.notify.Load(); s != nil {
			s.Notify(topic, queueID, maxOffset)
		}
	}
	st, err := store.Open(o)
	require.NoError(h.t, err)
	st.Start()
	h.st = st
}

// startService creates and starts a service on the harness store.
func (h *harness) startService(mutate func(*Options)) {
	h.t.Helper()
	o := DefaultOptions()
	o.Dir = h.dir
	o.FS = h.fs
	o.Store = h.st
	o.Levels = h.levels
	o.FlushInterval = 100 * time.Millisecond
	o.Logger = zerolog.New(zerolog.NewTestWriter(h.t)).Level(zerolog.WarnLevel)
	if mutate != nil {
		mutate(&o)
	}
	svc, err := New(o)
	require.NoError(h.t, err)
	h.svc = svc
	h.notify.Store(svc)
	svc.Start()
}

// stopService shuts the service down.
func (h *harness) stopService() {
	h.t.Helper()
	h.notify.Store(nil)
	require.NoError(h.t, h.svc.Shutdown(context.Background()))
	h.svc = nil
}

// stopStore shuts the store down.
func (h *harness) stopStore() {
	h.t.Helper()
	require.NoError(h.t, h.st.Shutdown(context.Background()))
	h.st = nil
}

// testMsg is a message as a test sends it and later checks it.
type testMsg struct {
	uniq    string
	topic   string
	queueID int32
	props   map[string]string
	// Filled by send.
	parked bool
	due    int64 // delivery time (Unix ms) of a parked message
}

// send runs the broker's send path: Rewrite, then a durable put.
func (h *harness) send(m *testMsg) {
	h.t.Helper()
	props := map[string]string{message.PropertyUniqKey: m.uniq, message.PropertyTags: "tag-" + m.uniq}
	for k, v := range m.props {
		props[k] = v
	}
	raw, err := message.EncodeProperties(props)
	require.NoError(h.t, err)
	rec := message.Record{
		Topic: []byte(m.topic), QueueID: m.queueID, Flag: 42, BornTimestamp: 1_700_000_000_000,
		BornHost: netip.MustParseAddrPort("10.9.8.7:1234"), ReconsumeTimes: 3,
		Body: []byte("body of " + m.uniq), Properties: raw,
	}
	p, rewritten, err := h.svc.Rewrite(&rec, h.buf)
	require.NoError(h.t, err)
	if rewritten {
		h.buf = p[:0] // reuse the buffer for the next send, as the broker would
	}
	res, err := h.st.PutMessage(&rec, true)
	require.NoError(h.t, err)
	m.parked = rewritten
	if rewritten {
		code, ok := h.svc.TagsCode(&message.Record{Topic: rec.Topic, QueueID: rec.QueueID,
			StoreTimestamp: res.StoreTimestamp, Properties: rec.Properties})
		require.True(h.t, ok)
		m.due = code
	}
}

// stored is a delivered message read back from the store.
type stored struct {
	topic          string
	queueID        int32
	storeTimestamp int64
	flag           int32
	bornTimestamp  int64
	reconsumeTimes int32
	body           string
	props          map[string]string
}

// readQueue reads a whole consume queue.
func readQueue(t testing.TB, st *store.Store, topic string, qid int32) []stored {
	t.Helper()
	var out []stored
	for off := st.MinOffset(topic, qid); off < st.MaxOffset(topic, qid); {
		r, err := st.GetMessages(topic, qid, off, 64, 1<<20, nil)
		require.NoError(t, err)
		for _, b := range r.Messages {
			rec, _, err := message.DecodeRecord(b)
			require.NoError(t, err)
			out = append(out, stored{
				topic: string(rec.Topic), queueID: rec.QueueID, storeTimestamp: rec.StoreTimestamp,
				flag: rec.Flag, bornTimestamp: rec.BornTimestamp, reconsumeTimes: rec.ReconsumeTimes,
				body: string(rec.Body), props: message.ParseProperties(rec.Properties),
			})
		}
		next := r.NextBeginOffset
		r.Release()
		require.Greater(t, next, off)
		off = next
	}
	return out
}

// realQueues are the topic/queue pairs tests send to.
var realQueues = []struct {
	topic string
	qid   int32
}{{"RealA", 0}, {"RealA", 1}, {"RealA", 2}, {"RealB", 0}, {"RealB", 1}}

// realCount is the number of messages in the real queues.
func (h *harness) realCount() int64 {
	var n int64
	for _, q := range realQueues {
		n += h.st.MaxOffset(q.topic, q.qid)
	}
	return n
}

// readReal reads every real queue.
func (h *harness) readReal() []stored {
	var out []stored
	for _, q := range realQueues {
		out = append(out, readQueue(h.t, h.st, q.topic, q.qid)...)
	}
	return out
}

// waitCaughtUp waits until the service has consumed everything parked: every level's
// cursor and the timer watermark at the end of their queues, no timer message pending. A
// delivery (a duplicate too) is put to its real queue before the cursor or watermark moves
// past its source, so once this holds no further delivery can come: counting duplicates
// after it needs no grace period.
func (h *harness) waitCaughtUp(timeout time.Duration) {
	h.t.Helper()
	var st Stats
	require.Eventually(h.t, func() bool {
		st = h.svc.Stats()
		for i, off := range st.LevelOffsets {
			if off != h.st.MaxOffset(protocol.ScheduleTopic, int32(i)) {
				return false
			}
		}
		return st.TimerPending == 0 && st.TimerWatermark == h.st.MaxOffset(protocol.TimerTopic, 0)
	}, timeout, 10*time.Millisecond, "the service did not catch up: %+v", st)
}

// checkDelivery verifies that every message arrived at its real queue at least once,
// intact and never early. It returns the number of duplicates and the lateness of every
// first delivery of a parked message.
func checkDelivery(t testing.TB, msgs []*testMsg, got []stored) (dups int, lateness []time.Duration) {
	t.Helper()
	byUniq := make(map[string]*testMsg, len(msgs))
	for _, m := range msgs {
		byUniq[m.uniq] = m
	}
	seen := make(map[string]int, len(msgs))
	for _, g := range got {
		uniq := g.props[message.PropertyUniqKey]
		m := byUniq[uniq]
		require.NotNil(t, m, "unexpected message %q", uniq)
		seen[uniq]++
		if seen[uniq] > 1 {
			dups++
		}
		require.Equal(t, m.topic, g.topic, uniq)
		require.Equal(t, m.queueID, g.queueID, uniq)
		require.Equal(t, "body of "+uniq, g.body)
		require.Equal(t, int32(42), g.flag)
		require.Equal(t, int64(1_700_000_000_000), g.bornTimestamp)
		require.Equal(t, int32(3), g.reconsumeTimes)
		require.Equal(t, "tag-"+uniq, g.props[message.PropertyTags])
		if !m.parked {
			continue
		}
		for _, k := range []string{message.PropertyDelayLevel, message.PropertyTimerOutMs,
			message.PropertyTimerDeliverMs, message.PropertyTimerDelayMs, message.PropertyTimerDelaySec} {
			require.NotContains(t, g.props, k, uniq)
		}
		require.Equal(t, m.topic, g.props[message.PropertyRealTopic])
		require.Equal(t, fmt.Sprint(m.queueID), g.props[message.PropertyRealQueueID])
		require.GreaterOrEqual(t, g.storeTimestamp, m.due, "%s delivered %d ms early", uniq, m.due-g.storeTimestamp)
		if seen[uniq] == 1 {
			lateness = append(lateness, time.Duration(g.storeTimestamp-m.due)*time.Millisecond)
		}
	}
	for _, m := range msgs {
		require.Positive(t, seen[m.uniq], "message %s (parked %v, due %d) lost", m.uniq, m.parked, m.due)
	}
	return dups, lateness
}

// percentile returns the p-th percentile (0..100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}

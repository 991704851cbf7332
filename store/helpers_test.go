package store

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
)

func TestMain(m *testing.M) {
	testkit.RunChildRole(map[string]func([]string){"crash": crashChild, "recover": recoverChild, "truncate": truncateChild,
		"compact": compactChild})
	goleak.VerifyTestMain(m)
}

// testOptions returns small-file options for a store in dir on fsys.
func testOptions(fsys mmap.FS, dir string) Options {
	o := DefaultOptions()
	o.Dir = dir
	o.FS = fsys
	o.SegmentSize = 64 << 10
	o.UnitsPerFile = 100
	o.IndexSlots = 64
	o.IndexEntries = 400
	o.CheckpointInterval = 20 * time.Millisecond
	o.FlushInterval = 10 * time.Millisecond
	o.DiskCheckInterval = 10 * time.Millisecond
	o.CleanInterval = time.Hour
	return o
}

// openStore opens and starts a store, shutting it down at cleanup unless the test did.
func openStore(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

var testHost = netip.MustParseAddrPort("10.1.2.3:5000")

// testMessage is what a test sends and later checks.
type testMessage struct {
	topic   string
	queueID int32
	body    string
	tags    string
	keys    string
	uniq    string
}

func (m testMessage) record(t testing.TB) message.Record {
	props := map[string]string{message.PropertyUniqKey: m.uniq}
	if m.tags != "" {
		props[message.PropertyTags] = m.tags
	}
	if m.keys != "" {
		props[message.PropertyKeys] = m.keys
	}
	raw, err := message.EncodeProperties(props)
	require.NoError(t, err)
	return message.Record{
		QueueID:       m.queueID,
		Flag:          7,
		SysFlag:       0,
		BornTimestamp: 1_700_000_000_000,
		BornHost:      testHost,
		Body:          []byte(m.body),
		Topic:         []byte(m.topic),
		Properties:    raw,
	}
}

// makeMessages returns n messages spread over topics and queues with tags and keys.
func makeMessages(n, topics, queues int) []testMessage {
	out := make([]testMessage, n)
	for i := range out {
		out[i] = testMessage{
			topic:   fmt.Sprintf("Topic%d", i%topics),
			queueID: int32((i / topics) % queues),
			body:    fmt.Sprintf("body-%d-%s", i, string(make([]byte, i%300))),
			tags:    []string{"TagA", "TagB", "标签"}[(i/topics)%3],
			keys:    fmt.Sprintf("k%d order-%d", i, i/10),
			uniq:    fmt.Sprintf("UNIQ%028d", i),
		}
	}
	return out
}

// put stores one test message and returns the append result.
func put(t testing.TB, s *Store, m testMessage, wait bool) commitlog.AppendResult {
	t.Helper()
	rec := m.record(t)
	res, err := s.PutMessage(&rec, wait)
	require.NoError(t, err)
	return res
}

// queueContents reads a whole consume queue through GetMessages.
func queueContents(t testing.TB, s *Store, topic string, queueID int32) []message.Record {
	t.Helper()
	var out []message.Record
	off := s.MinOffset(topic, queueID)
	for off < s.MaxOffset(topic, queueID) {
		r, err := s.GetMessages(topic, queueID, off, 32, 1<<20, nil)
		require.NoError(t, err)
		require.Equal(t, Found, r.Status, "offset %d", off)
		for i, b := range r.Messages {
			rec, n, err := message.DecodeRecord(b)
			require.NoError(t, err)
			require.Equal(t, len(b), n)
			require.Equal(t, r.QueueOffsets[i], rec.QueueOffset)
			rec.Body = append([]byte(nil), rec.Body...)
			rec.Topic = append([]byte(nil), rec.Topic...)
			rec.Properties = append([]byte(nil), rec.Properties...)
			out = append(out, rec)
		}
		off = r.NextBeginOffset
		r.Release()
	}
	return out
}

// waitDispatched waits until everything written is dispatched.
func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.WaitDispatched(ctx, s.dispatchLimit()))
}

// checkQueuesConsistent asserts that every consume queue is gap-free and every unit but a
// hole (a message lost to quarantined damage) points at a valid record of that queue with
// that queue offset, and that every key of every record is found through the index. It
// returns how many records it checked.
func checkQueuesConsistent(t testing.TB, s *Store) int {
	t.Helper()
	total := 0
	s.cqs.Range(func(topic string, queueID int32, q *consumequeue.Queue) bool {
		for off := q.MinOffset(); off < q.MaxOffset(); off++ {
			u, err := q.Get(off)
			require.NoError(t, err)
			if u.Hole() {
				continue // a message lost to quarantined damage
			}
			rec, v, err := s.ReadMessage(u.Offset)
			require.NoError(t, err, "%s/%d@%d -> %d", topic, queueID, off, u.Offset)
			require.Equal(t, topic, string(rec.Topic))
			require.Equal(t, queueID, rec.QueueID)
			require.Equal(t, off, rec.QueueOffset)
			require.Equal(t, u.Size, rec.StoreSize)
			uniq, _ := message.LookupProperty(rec.Properties, message.PropertyUniqKey)
			key := string(uniq)
			v.Release()
			qr, err := s.QueryByKey(topic, key, true, 4, 0, 1<<62)
			require.NoError(t, err)
			require.Len(t, qr.Records, 1, "uniq key %s", key)
			qr.Release()
			total++
		}
		return true
	})
	return total
}

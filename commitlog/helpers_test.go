package commitlog

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testSegSize = 64 << 10

var testBornHost = netip.MustParseAddrPort("10.0.0.7:40123")

// testOptions returns options for a small-segment log in dir on fs.
func testOptions(fs mmap.FS, dir string) Options {
	o := DefaultOptions()
	o.FS = fs
	o.Dir = dir
	o.SegmentSize = testSegSize
	o.FlushInterval = 5 * time.Millisecond
	o.StoreHost = netip.MustParseAddrPort("192.168.1.20:10911")
	return o
}

// openLog opens a log, recovers it when it has segments, and closes it at cleanup.
func openLog(t testing.TB, o Options) *Log {
	t.Helper()
	l, err := Open(o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	if l.MinOffset() != 0 || len(l.Segments()) > 0 {
		_, err := l.Recover(l.MinOffset(), true)
		require.NoError(t, err)
	}
	return l
}

// newRecord builds a record with a recognisable body of n bytes.
func newRecord(topic string, queueID int32, n int, seed int) message.Record {
	body := make([]byte, n)
	for i := range body {
		body[i] = byte(seed*31 + i)
	}
	props, err := message.EncodeProperties(map[string]string{
		message.PropertyTags: "TagA", message.PropertyKeys: fmt.Sprintf("key-%d", seed),
	})
	if err != nil {
		panic(err)
	}
	return message.Record{
		QueueID:       queueID,
		Flag:          int32(seed),
		BornTimestamp: 1_700_000_000_000 + int64(seed),
		BornHost:      testBornHost,
		Body:          body,
		Topic:         []byte(topic),
		Properties:    props,
	}
}

// requireSameRecord checks that got (read back) matches want (as appended).
func requireSameRecord(t testing.TB, want, got message.Record) {
	t.Helper()
	require.Equal(t, string(want.Topic), string(got.Topic))
	require.Equal(t, want.QueueID, got.QueueID)
	require.Equal(t, string(want.Body), string(got.Body))
	require.Equal(t, string(want.Properties), string(got.Properties))
	require.Equal(t, want.QueueOffset, got.QueueOffset)
	require.Equal(t, want.PhysicalOffset, got.PhysicalOffset)
	require.Equal(t, want.StoreTimestamp, got.StoreTimestamp)
	require.Equal(t, want.StoreHost, got.StoreHost)
	require.Equal(t, want.BornHost, got.BornHost)
	require.Equal(t, want.SysFlag, got.SysFlag)
	require.NoError(t, got.VerifyBodyCRC())
}

// readAll returns every record of the log (copied), in order, failing on corruption.
func readAll(t testing.TB, l *Log) []message.Record {
	t.Helper()
	it := l.NewIterator(l.MinOffset())
	defer it.Close()
	var out []message.Record
	for it.Next() {
		r := *it.Record()
		r.Body = append([]byte(nil), r.Body...)
		r.Topic = append([]byte(nil), r.Topic...)
		r.Properties = append([]byte(nil), r.Properties...)
		out = append(out, r)
	}
	require.NoError(t, it.Err())
	require.Equal(t, l.MaxOffset(), it.Pos())
	return out
}

// segPath is the path of the segment starting at start.
func segPath(dir string, start int64) string { return filepath.Join(dir, segmentName(start)) }

// cloneFS returns a copy of a MemFS whose logs are all closed (everything durable).
func cloneFS(fs *mmap.MemFS) *mmap.MemFS { return fs.Crash(nil, 0) }

// mutateFile maps a file of fs and applies fn to its bytes, durably.
func mutateFile(t testing.TB, fs mmap.FS, path string, size int64, fn func(b []byte)) {
	t.Helper()
	m, err := fs.OpenMapped(path, size, false)
	require.NoError(t, err)
	fn(m.Bytes())
	require.NoError(t, m.Sync(0, size))
	require.NoError(t, m.Close())
}

package ha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/message"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testSegSize = 64 << 10

func testLogger(t testing.TB) zerolog.Logger {
	if testing.Verbose() {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	}
	return zerolog.Nop()
}

// openLog opens (and recovers) a real-file log in dir; the caller closes it.
func openLog(t testing.TB, dir string, segSize int64) *commitlog.Log {
	t.Helper()
	o := commitlog.DefaultOptions()
	o.Dir = dir
	o.FS = mmap.OSFS{}
	o.SegmentSize = segSize
	o.FlushInterval = 10 * time.Millisecond
	o.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	l, err := commitlog.Open(o)
	require.NoError(t, err)
	if len(l.Segments()) > 1 || l.MinOffset() != 0 {
		_, err = l.Recover(l.MinOffset(), true)
	} else {
		_, err = l.RecoverTail(1, true)
	}
	require.NoError(t, err)
	return l
}

func record(i, size int) message.Record {
	body := bytes.Repeat([]byte{byte(i)}, size)
	props, err := message.EncodeProperties(map[string]string{message.PropertyKeys: fmt.Sprintf("k%d", i)})
	if err != nil {
		panic(err)
	}
	return message.Record{
		QueueID: int32(i % 4), BornTimestamp: 1_700_000_000_000, Body: body, Topic: []byte("HATopic"),
		Properties: props, BornHost: netip.MustParseAddrPort("127.0.0.1:5555"),
	}
}

// appendN appends n records of sizes varying around size.
func appendN(t testing.TB, l *commitlog.Log, from, n, size int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		_, err := l.Append([]message.Record{record(i, size+(i*37)%size)}, false)
		require.NoError(t, err)
	}
}

func newMaster(t testing.TB, l *commitlog.Log) *Master {
	t.Helper()
	return newMasterAt(t, l, "127.0.0.1:0")
}

// newMasterAt is newMaster listening on addr.
func newMasterAt(t testing.TB, l *commitlog.Log, addr string) *Master {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	o := DefaultMasterOptions()
	o.Log = l
	o.Listener = ln
	o.HeartbeatInterval = 50 * time.Millisecond
	o.IdleTimeout = 2 * time.Second
	o.PollInterval = 5 * time.Millisecond
	o.Logger = testLogger(t)
	m, err := NewMaster(o)
	require.NoError(t, err)
	return m
}

func newSlave(t testing.TB, l *commitlog.Log, addr string) *Slave {
	t.Helper()
	o := DefaultSlaveOptions()
	o.Log = l
	o.MasterAddr = addr
	o.ReportInterval = 50 * time.Millisecond
	o.IdleTimeout = 2 * time.Second
	o.RetryFloor = 10 * time.Millisecond
	o.RetryMax = 200 * time.Millisecond
	o.Logger = testLogger(t)
	s, err := NewSlave(o)
	require.NoError(t, err)
	return s
}

// waitAck is m.WaitAck until ctx ends, waiting for a slave while none is connected
// (WaitAck's ErrNoSlave): the tests start slaves and masters in any order.
func waitAck(ctx context.Context, m *Master, off int64) error {
	for {
		err := m.WaitAck(ctx, off)
		if !errors.Is(err, ErrNoSlave) {
			return err
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", err, ctx.Err())
		case <-t.C:
		}
	}
}

// requirePrefix checks that the slave's segment files equal the master's up to upTo.
func requirePrefix(t testing.TB, mdir, sdir string, segSize, upTo int64) {
	t.Helper()
	for start := int64(0); start < upTo; start += segSize {
		name := fmt.Sprintf("%020d", start)
		a, err := os.ReadFile(filepath.Join(mdir, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(sdir, name))
		require.NoError(t, err)
		n := min(upTo-start, segSize)
		require.True(t, bytes.Equal(a[:n], b[:n]), "segment %s differs", name)
	}
}

// countRecords walks a log with an iterator.
func countRecords(t testing.TB, l *commitlog.Log) int {
	t.Helper()
	it := l.NewIterator(l.MinOffset())
	defer it.Close()
	n := 0
	for it.Next() {
		n++
	}
	require.NoError(t, it.Err())
	return n
}

// requirePrefixFrom checks that b holds a's bytes in [from, upTo), read through views.
func requirePrefixFrom(t testing.TB, a, b *commitlog.Log, from, upTo int64) {
	t.Helper()
	for off := from; off < upTo; {
		va, err := a.Read(off, int(upTo-off))
		require.NoError(t, err)
		vb, err := b.Read(off, int(upTo-off))
		require.NoError(t, err)
		ok := bytes.Equal(va.Bytes(), vb.Bytes())
		n := len(va.Bytes())
		va.Release()
		vb.Release()
		require.True(t, ok, "bytes at %d differ", off)
		require.Positive(t, n)
		off += int64(n)
	}
}

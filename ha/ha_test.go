package ha

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
)

func TestReplicateWhileAppending(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	ml, sl := openLog(t, mdir, testSegSize), openLog(t, sdir, testSegSize)
	defer func() { require.NoError(t, ml.Close()); require.NoError(t, sl.Close()) }()
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	s := newSlave(t, sl, m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()

	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 2000; i += 20 {
			appendN(t, ml, i, 20, 300)
			m.Notify()
		}
	})
	wg.Wait()
	end := ml.MaxOffset()
	require.Greater(t, end, int64(10*testSegSize), "many segment boundaries crossed")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, waitAck(ctx, m, end))
	require.Equal(t, end, sl.MaxOffset())
	requirePrefix(t, mdir, sdir, testSegSize, m.SlaveAckOffset())
	require.Equal(t, 2000, countRecords(t, sl))
	require.Zero(t, m.Lag())
	for q := range int32(4) {
		require.Equal(t, ml.QueueOffset("HATopic", q), sl.QueueOffset("HATopic", q))
	}
	require.Len(t, m.Slaves(), 1)
}

func TestLateSlaveCatchesUpFromZero(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	ml, sl := openLog(t, mdir, testSegSize), openLog(t, sdir, testSegSize)
	defer func() { require.NoError(t, ml.Close()); require.NoError(t, sl.Close()) }()
	appendN(t, ml, 0, 600, 500)
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	s := newSlave(t, sl, m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, waitAck(ctx, m, ml.MaxOffset()))
	requirePrefix(t, mdir, sdir, testSegSize, ml.MaxOffset())
	require.Equal(t, 600, countRecords(t, sl))
}

func TestSlaveRestartContinues(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	ml := openLog(t, mdir, testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	appendN(t, ml, 0, 300, 400)

	sl := openLog(t, sdir, testSegSize)
	s := newSlave(t, sl, m.Addr().String())
	testkit.Eventually(t, 10*time.Second, func() bool { return sl.MaxOffset() == ml.MaxOffset() }, "first half")
	require.NoError(t, s.Close())
	require.NoError(t, sl.Close())

	appendN(t, ml, 300, 300, 400)
	sl = openLog(t, sdir, testSegSize)
	defer func() { require.NoError(t, sl.Close()) }()
	recovered := sl.MaxOffset()
	require.Positive(t, recovered)
	s = newSlave(t, sl, m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()
	m.Notify()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, waitAck(ctx, m, ml.MaxOffset()))
	requirePrefix(t, mdir, sdir, testSegSize, ml.MaxOffset())
	require.Equal(t, 600, countRecords(t, sl))
}

func TestConnectionCutMidFrame(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	ml, sl := openLog(t, mdir, testSegSize), openLog(t, sdir, testSegSize)
	defer func() { require.NoError(t, ml.Close()); require.NoError(t, sl.Close()) }()
	appendN(t, ml, 0, 800, 700)
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	p := testkit.StartProxy(t, m.Addr().String())
	p.SetCutAfter(50_001) // every connection dies inside a frame after ~50 KB
	defer p.Close()
	s := newSlave(t, sl, p.Addr())
	defer func() { require.NoError(t, s.Close()) }()

	testkit.Eventually(t, 5*time.Second, func() bool { return sl.ReplicaOffset() > 5*50_000 }, "progress through cuts")
	require.Error(t, s.LastError())
	p.SetCutAfter(0)
	p.Cut()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, waitAck(ctx, m, ml.MaxOffset()))
	requirePrefix(t, mdir, sdir, testSegSize, ml.MaxOffset())
	require.Equal(t, 800, countRecords(t, sl))
}

func TestWaitAck(t *testing.T) {
	ml := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	appendN(t, ml, 0, 10, 100)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := m.WaitAck(ctx, ml.MaxOffset())
	require.ErrorIs(t, err, ErrNoSlave, "no slave connected: at once, not at the context's end")

	sl := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, sl.Close()) }()
	s := newSlave(t, sl, m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()
	testkit.Eventually(t, 5*time.Second, func() bool { return m.SlaveCount() == 1 }, "slave connected")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	require.NoError(t, m.WaitAck(ctx2, ml.MaxOffset()))
	require.GreaterOrEqual(t, m.SlaveAckOffset(), ml.MaxOffset())

	// An ack that arrives while waiting wakes the waiter.
	done := make(chan error, 1)
	target := ml.MaxOffset() + 1
	go func() { done <- m.WaitAck(ctx2, target) }()
	appendN(t, ml, 10, 1, 100)
	m.Notify()
	require.NoError(t, <-done)
}

// rawSlave connects to m like a slave and reports off once, then never again: a slave
// that stopped acknowledging (its connection stays open until closed).
func rawSlave(t *testing.T, m *Master, off int64) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	var b [ReportSize]byte
	PutReport(b[:], off)
	_, err = conn.Write(b[:])
	require.NoError(t, err)
	return conn
}

// When the last slave disconnects, a WaitAck in progress returns ErrNoSlave at once
// instead of waiting for its context (a SYNC_MASTER's haSlaveTimeout); while another
// slave is still connected it goes on waiting.
func TestWaitAckEndsWhenLastSlaveLeaves(t *testing.T) {
	ml := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	appendN(t, ml, 0, 10, 100)
	end := ml.MaxOffset()

	a, b := rawSlave(t, m, end), rawSlave(t, m, end)
	defer func() { _ = a.Close(); _ = b.Close() }()
	testkit.Eventually(t, 5*time.Second, func() bool {
		return m.SlaveCount() == 2 && m.SlaveAckOffset() == end
	}, "two slaves acknowledging the log")
	appendN(t, ml, 10, 1, 100) // never acknowledged
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.WaitAck(ctx, ml.MaxOffset()) }()

	require.NoError(t, a.Close())
	testkit.Eventually(t, 5*time.Second, func() bool { return m.SlaveCount() == 1 }, "one slave left")
	select {
	case err := <-done:
		t.Fatalf("WaitAck returned with a slave still connected: %v", err)
	default:
	}
	require.NoError(t, b.Close())
	err := <-done
	require.ErrorIs(t, err, ErrNoSlave)
	require.NoError(t, ctx.Err(), "WaitAck returned before its context ended")
}

// A slave whose log is ahead of its (restored) master is told so by a frame at the
// master's end, stops replicating for good and keeps its log untouched, even after the
// master has grown past the slave's end with different data.
func TestMasterBehindSlave(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	ml, sl := openLog(t, mdir, testSegSize), openLog(t, sdir, testSegSize)
	defer func() { require.NoError(t, ml.Close()); require.NoError(t, sl.Close()) }()
	appendN(t, sl, 0, 50, 300) // the slave holds more than the master
	appendN(t, ml, 0, 5, 300)
	slaveEnd := sl.MaxOffset()
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	s := newSlave(t, sl, m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()
	select {
	case <-s.Stopped():
	case <-time.After(10 * time.Second):
		t.Fatalf("the slave did not stop; last error: %v", s.LastError())
	}
	require.ErrorIs(t, s.LastError(), ErrDiverged)
	require.Zero(t, m.SlaveAckOffset(), "an ahead slave's report never counts as an ack")

	appendN(t, ml, 5, 100, 300) // the master now ends beyond the slave, with other data
	m.Notify()
	require.Greater(t, ml.MaxOffset(), slaveEnd)
	require.False(t, s.Connected())
	require.Equal(t, slaveEnd, sl.MaxOffset(), "the slave's log is untouched")
	testkit.Eventually(t, 5*time.Second, func() bool { return len(m.Slaves()) == 0 }, "the master forgets the refused slave")
}

// A slave whose disk fills keeps what it has (a valid prefix), reports the error, does
// not acknowledge what it could not store, and catches up once space returns.
func TestSlaveDiskFull(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	ml := openLog(t, mdir, testSegSize)
	efs := mmap.NewErrorFS(mmap.OSFS{})
	o := commitlog.DefaultOptions()
	o.Dir, o.FS, o.SegmentSize = sdir, efs, testSegSize
	o.FlushInterval = 10 * time.Millisecond
	o.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	sl, err := commitlog.Open(o)
	require.NoError(t, err)
	defer func() { require.NoError(t, ml.Close()); require.NoError(t, sl.Close()) }()
	full := efs.Inject(mmap.Rule{Ops: mmap.OpOpenMapped, Err: mmap.ErrNoSpace}) // no new segment fits
	appendN(t, ml, 0, 500, 600)
	end := ml.MaxOffset()
	require.Greater(t, end, int64(3*testSegSize))

	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	s := newSlave(t, sl, m.Addr().String())
	defer func() { require.NoError(t, s.Close()) }()
	testkit.Eventually(t, 10*time.Second, func() bool { return errors.Is(s.LastError(), mmap.ErrNoSpace) }, "the disk-full error")
	have := sl.MaxOffset()
	require.LessOrEqual(t, have, int64(testSegSize), "nothing beyond the first segment")
	requirePrefix(t, mdir, sdir, testSegSize, have)
	require.LessOrEqual(t, m.SlaveAckOffset(), sl.ReplicaOffset(), "never acknowledged beyond what it holds")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, waitAck(ctx, m, end), context.DeadlineExceeded)

	full()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	require.NoError(t, waitAck(ctx2, m, end))
	requirePrefix(t, mdir, sdir, testSegSize, end)
	require.Equal(t, 500, countRecords(t, sl))
}

// A master that restarts (its log closed and recovered, its listener back on the same
// address) is found again by its slave, which continues from its own end.
func TestMasterRestartSlaveReconnects(t *testing.T) {
	mdir, sdir := t.TempDir(), t.TempDir()
	ml, sl := openLog(t, mdir, testSegSize), openLog(t, sdir, testSegSize)
	defer func() { require.NoError(t, sl.Close()) }()
	appendN(t, ml, 0, 200, 400)
	m := newMaster(t, ml)
	addr := m.Addr().String()
	s := newSlave(t, sl, addr)
	defer func() { require.NoError(t, s.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, waitAck(ctx, m, ml.MaxOffset()))
	require.NoError(t, m.Close())
	require.NoError(t, ml.Close())
	testkit.Eventually(t, 5*time.Second, func() bool { return !s.Connected() }, "the slave notices")

	ml = openLog(t, mdir, testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	appendN(t, ml, 200, 200, 400)
	m = newMasterAt(t, ml, addr)
	defer func() { require.NoError(t, m.Close()) }()
	require.NoError(t, waitAck(ctx, m, ml.MaxOffset()))
	requirePrefix(t, mdir, sdir, testSegSize, ml.MaxOffset())
	require.Equal(t, 400, countRecords(t, sl))
}

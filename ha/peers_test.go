package ha

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/testkit"
)

// staleCalls records a master's OnStaleEpoch calls.
type staleCalls struct {
	mu    sync.Mutex
	calls [][2]int64 // slave id, slave epoch
}

func (s *staleCalls) record(id int64, epoch int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, [2]int64{id, int64(epoch)})
}

func (s *staleCalls) get() [][2]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][2]int64(nil), s.calls...)
}

// newCtlMaster is a master of broker-a in controller mode at epoch.
func newCtlMaster(t testing.TB, l *commitlog.Log, epoch int32, stale *staleCalls) *Master {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o := DefaultMasterOptions()
	o.Log, o.Listener, o.Logger = l, ln, testLogger(t)
	o.HeartbeatInterval, o.IdleTimeout, o.PollInterval = 50*time.Millisecond, 2*time.Second, 5*time.Millisecond
	o.BrokerName, o.HandshakeTimeout, o.Epoch = "broker-a", 2*time.Second, epoch
	o.OnStaleEpoch = stale.record
	m, err := NewMaster(o)
	require.NoError(t, err)
	return m
}

// newIDSlave is a slave of broker-a identified as id at epoch, without credentials.
func newIDSlave(t testing.TB, l *commitlog.Log, addr string, id int64, epoch int32) *Slave {
	t.Helper()
	o := DefaultSlaveOptions()
	o.Log, o.MasterAddr, o.Logger = l, addr, testLogger(t)
	o.ReportInterval, o.IdleTimeout = 20*time.Millisecond, 2*time.Second
	o.RetryFloor, o.RetryMax = 10*time.Millisecond, 50*time.Millisecond
	o.BrokerName, o.BrokerID, o.Epoch = "broker-a", id, epoch
	s, err := NewSlave(o)
	require.NoError(t, err)
	return s
}

// identityHello is an identity hello of broker name, id and epoch, signed with creds.
func identityHello(t *testing.T, creds sign.Credentials, name string, id int64, epoch int32) []byte {
	t.Helper()
	s := &Slave{opts: SlaveOptions{Credentials: creds, BrokerName: name, BrokerID: id, Epoch: epoch}}
	b, err := s.hello()
	require.NoError(t, err)
	return b
}

// A master in controller mode streams only to slaves of its epoch that identify
// themselves; one of a higher epoch is refused and reported as proof that the master is
// stale; it knows each slave's acknowledgement by broker id, also once it left.
func TestControllerModeMasterKnowsItsSlaves(t *testing.T) {
	ml := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	appendN(t, ml, 0, 40, 300)
	var stale staleCalls
	m := newCtlMaster(t, ml, 2, &stale)
	defer func() { require.NoError(t, m.Close()) }()

	require.Zero(t, received(t, m, nil, nil), "anonymous slave")
	require.Zero(t, received(t, m, nil, helloFor(t, admin, "broker-a")), "a plain hello")
	require.Zero(t, received(t, m, nil, identityHello(t, sign.Credentials{}, "broker-a", 1, 1)), "a slave of an older epoch")
	require.Zero(t, received(t, m, nil, identityHello(t, sign.Credentials{}, "broker-b", 1, 2)), "another group's slave")
	require.Empty(t, stale.get())
	require.Zero(t, received(t, m, nil, identityHello(t, sign.Credentials{}, "broker-a", 3, 7)), "a slave of a newer epoch")
	require.Equal(t, [][2]int64{{3, 7}}, stale.get())
	require.Greater(t, received(t, m, nil, identityHello(t, sign.Credentials{}, "broker-a", 1, 2)), FrameHeaderSize, "a slave of its epoch")

	l1, l2 := openLog(t, t.TempDir(), testSegSize), openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, l1.Close()) }()
	defer func() { require.NoError(t, l2.Close()) }()
	s1 := newIDSlave(t, l1, m.Addr().String(), 1, 2)
	defer func() { require.NoError(t, s1.Close()) }()
	s2 := newIDSlave(t, l2, m.Addr().String(), 2, 2)
	end := ml.MaxOffset()
	testkit.Eventually(t, 5*time.Second, func() bool { return m.AckedBy([]int64{1, 2}, end) }, "both slaves acknowledged the log")
	require.False(t, m.AckedBy([]int64{1, 2, 3}, end), "slave 3 never connected")
	peers := m.Peers()
	require.Len(t, peers, 2)
	for i, p := range peers {
		require.EqualValues(t, i+1, p.BrokerID)
		require.EqualValues(t, 2, p.Epoch)
		require.Equal(t, end, p.Ack)
		require.True(t, p.Connected)
		require.False(t, p.CaughtUp.IsZero())
	}
	ids := map[int64]bool{}
	for _, si := range m.Slaves() {
		ids[si.BrokerID] = true
	}
	require.Equal(t, map[int64]bool{1: true, 2: true}, ids)

	// Slave 2 leaves: it is remembered, disconnected, with its last acknowledgement and
	// catch-up time, which the master's later writes do not move.
	require.NoError(t, s2.Close())
	testkit.Eventually(t, 5*time.Second, func() bool { return !m.Peers()[1].Connected }, "slave 2 disconnected")
	left := m.Peers()[1]
	appendN(t, ml, 40, 20, 300)
	m.Notify()
	end = ml.MaxOffset()
	testkit.Eventually(t, 5*time.Second, func() bool { return m.AckedBy([]int64{1}, end) }, "slave 1 acknowledged the new records")
	require.False(t, m.AckedBy([]int64{2}, end))
	require.Equal(t, left, m.Peers()[1])
	require.True(t, m.Peers()[0].CaughtUp.After(left.CaughtUp), "slave 1 caught up again")
}

// The ring of end samples keeps the newest sampleCap, and a report passing samples
// yields the newest one it passed.
func TestSampleRing(t *testing.T) {
	var r sampleRing
	t0 := time.Unix(1000, 0)
	_, ok := r.passed(1 << 40)
	require.False(t, ok)
	for i := range sampleCap + 10 {
		r.push(endSample{off: int64(i * 100), at: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	require.Equal(t, sampleCap, r.n)
	_, ok = r.passed(5*100 + 99)
	require.False(t, ok, "the oldest samples were dropped")
	at, ok := r.passed(20*100 + 50)
	require.True(t, ok)
	require.Equal(t, t0.Add(20*time.Millisecond), at)
	last, ok := r.last()
	require.True(t, ok)
	require.EqualValues(t, (sampleCap+9)*100, last.off)
	_, ok = r.passed(20*100 + 99)
	require.False(t, ok, "passed samples are gone")
	at, ok = r.passed(1 << 40)
	require.True(t, ok)
	require.Equal(t, t0.Add(time.Duration(sampleCap+9)*time.Millisecond), at)
	require.Zero(t, r.n)
}

// An identity hello round-trips, its signature covers the identity, and an id or epoch
// below 1 is refused both ways.
func TestIdentityHelloCodec(t *testing.T) {
	b := identityHello(t, admin, "broker-a", 3, 9)
	require.True(t, isIdentityMagic(b))
	require.False(t, isHelloMagic(b))
	h, signed, err := ReadIdentityHello(bytes.NewReader(b[4:]))
	require.NoError(t, err)
	require.True(t, h.Identified)
	require.EqualValues(t, 3, h.BrokerID)
	require.EqualValues(t, 9, h.Epoch)
	require.Equal(t, "ferryAdmin", h.AccessKey)
	require.Equal(t, b[:len(b)-HelloMACSize], signed)
	require.True(t, sign.ReplicationMACMatches("admin-secret", signed, h.MAC[:]))

	_, err = AppendHelloSigned(nil, &Hello{Version: HelloVersion, Identified: true, BrokerID: 0, Epoch: 1})
	require.ErrorIs(t, err, ErrProtocol)
	zero, err := AppendHelloSigned(nil, &Hello{Version: HelloVersion, BrokerName: "broker-a"})
	require.NoError(t, err)
	zero = append(zero, make([]byte, identitySize+HelloMACSize)...) // the plain layout, then zero id and epoch
	_, _, err = ReadIdentityHello(bytes.NewReader(zero[4:]))
	require.ErrorIs(t, err, ErrProtocol)
}

// FuzzReadHello: arbitrary bytes never panic either hello reader, and a hello read back
// encodes to the bytes it was read from.
func FuzzReadHello(f *testing.F) {
	for _, h := range []Hello{
		{Version: HelloVersion, Timestamp: 1, BrokerName: "broker-a", AccessKey: "ak"},
		{Version: HelloVersion, Timestamp: 2, BrokerName: "b", Identified: true, BrokerID: 2, Epoch: 5},
	} {
		b, err := AppendHelloSigned(nil, &h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append(b, make([]byte, HelloMACSize)...)[4:], h.Identified)
	}
	f.Add([]byte{1, 0, 0}, false)
	f.Fuzz(func(t *testing.T, b []byte, identified bool) {
		h, signed, err := readHello(bytes.NewReader(b), identified)
		if err != nil {
			return
		}
		require.Equal(t, identified, h.Identified)
		re, err := AppendHelloSigned(nil, &h)
		require.NoError(t, err)
		require.Equal(t, signed, re)
		require.Equal(t, append(re[4:], h.MAC[:]...), b[:len(re)-4+HelloMACSize])
	})
}

// With ACL on, a master in controller mode wants both: an identity hello without an
// admin account's proof is refused, one with it streams.
func TestControllerModeMasterWithAuthentication(t *testing.T) {
	ml := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	appendN(t, ml, 0, 10, 300)
	a, err := acl.Parse([]byte(authACL))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o := DefaultMasterOptions()
	o.Log, o.Listener, o.Logger = ml, ln, testLogger(t)
	o.HeartbeatInterval, o.IdleTimeout, o.PollInterval = 50*time.Millisecond, 2*time.Second, 5*time.Millisecond
	o.Auth, o.BrokerName, o.Epoch, o.HandshakeTimeout = a, "broker-a", 4, 2*time.Second
	m, err := NewMaster(o)
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()

	require.Zero(t, received(t, m, nil, identityHello(t, sign.Credentials{}, "broker-a", 2, 4)), "no credentials")
	require.Zero(t, received(t, m, nil, helloFor(t, admin, "broker-a")), "credentials without identity")
	require.Greater(t, received(t, m, nil, identityHello(t, admin, "broker-a", 2, 4)), FrameHeaderSize, "both")
}

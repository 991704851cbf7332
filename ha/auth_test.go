package ha

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/remoting"
)

const authACL = `
accounts:
  - accessKey: ferryAdmin
    secretKey: admin-secret
    admin: true
  - accessKey: appUser1
    secretKey: app-secret
    defaultTopicPerm: PUB|SUB
`

var admin = sign.Credentials{AccessKey: "ferryAdmin", SecretKey: "admin-secret"}

// newAuthMaster is a master of broker-a requiring authentication against authACL, with
// tlsConf as its listener's TLS (nil: plain).
func newAuthMaster(t testing.TB, l *commitlog.Log, tlsConf *remoting.TLSConfig) *Master {
	t.Helper()
	a, err := acl.Parse([]byte(authACL))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o := DefaultMasterOptions()
	o.Log, o.Listener, o.Logger = l, ln, testLogger(t)
	o.HeartbeatInterval, o.IdleTimeout, o.PollInterval = 50*time.Millisecond, 2*time.Second, 5*time.Millisecond
	o.Auth, o.BrokerName, o.TLS = a, "broker-a", tlsConf
	o.HandshakeTimeout = 2 * time.Second
	m, err := NewMaster(o)
	require.NoError(t, err)
	return m
}

// newAuthSlave is a slave of broker-a with creds, dialing with tlsConf (nil: plain).
func newAuthSlave(t testing.TB, l *commitlog.Log, addr string, creds sign.Credentials, name string, tlsConf *tls.Config) *Slave {
	t.Helper()
	o := DefaultSlaveOptions()
	o.Log, o.MasterAddr, o.Logger = l, addr, testLogger(t)
	o.ReportInterval, o.IdleTimeout = 50*time.Millisecond, 2*time.Second
	o.RetryFloor, o.RetryMax = 10*time.Millisecond, 50*time.Millisecond
	o.Credentials, o.BrokerName, o.TLS = creds, name, tlsConf
	s, err := NewSlave(o)
	require.NoError(t, err)
	return s
}

// received connects to m, writes first, then an offset report of 0 every 20 ms, and
// returns how many bytes the master sent before it closed the connection, or more than
// FrameHeaderSize once it streams (a master that neither streams nor closes within 5 s
// fails the test: one that refuses closes at once).
func received(t *testing.T, m *Master, wrap func(net.Conn) net.Conn, first []byte) int {
	t.Helper()
	raw, err := net.Dial("tcp", m.Addr().String())
	require.NoError(t, err)
	defer func() { _ = raw.Close() }()
	conn := raw
	if wrap != nil {
		conn = wrap(raw)
	}
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var rep [ReportSize]byte
		PutReport(rep[:], 0)
		if _, err := conn.Write(append(first, rep[:]...)); err != nil {
			return
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write(rep[:]); err != nil {
					return
				}
			}
		}
	}()
	defer func() { close(stop); <-done }()
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the master neither streamed nor closed: %v", err)
			return len(got)
		}
		if len(got) > FrameHeaderSize {
			return len(got) // it streams
		}
	}
}

// helloFor is a hello of broker-a signed with creds.
func helloFor(t *testing.T, creds sign.Credentials, name string) []byte {
	t.Helper()
	s := &Slave{opts: SlaveOptions{Credentials: creds, BrokerName: name}}
	b, err := s.hello()
	require.NoError(t, err)
	return b
}

// With authentication required (ACL on), a client that speaks the plain HA protocol
// gets no byte of the commit log, nor one with a wrong secret, a non-admin account, the
// wrong broker name or a replayed hello; the admin account replicates.
func TestAuthenticatedReplication(t *testing.T) {
	ml := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	appendN(t, ml, 0, 50, 300)
	m := newAuthMaster(t, ml, nil)
	defer func() { require.NoError(t, m.Close()) }()

	require.Zero(t, received(t, m, nil, nil), "anonymous slave")
	require.Zero(t, received(t, m, nil, helloFor(t, sign.Credentials{AccessKey: "ferryAdmin", SecretKey: "wrong-secret"}, "broker-a")),
		"wrong secret")
	require.Zero(t, received(t, m, nil, helloFor(t, sign.Credentials{AccessKey: "appUser1", SecretKey: "app-secret"}, "broker-a")),
		"non-admin account")
	require.Zero(t, received(t, m, nil, helloFor(t, admin, "broker-b")), "another group's slave")
	hello := helloFor(t, admin, "broker-a")
	require.Greater(t, received(t, m, nil, hello), FrameHeaderSize, "the admin account streams")
	require.Zero(t, received(t, m, nil, hello), "the same hello replayed")
	require.Zero(t, m.SlaveAckOffset())

	// Real slaves: a wrong secret never gets a frame; the admin account replicates.
	bad := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, bad.Close()) }()
	sb := newAuthSlave(t, bad, m.Addr().String(), sign.Credentials{AccessKey: "ferryAdmin", SecretKey: "wrong-secret"}, "broker-a", nil)
	testkit.Eventually(t, 5*time.Second, func() bool { return sb.LastError() != nil }, "a refusal")
	require.ErrorIs(t, sb.LastError(), errMasterBehind, "closed before the first frame")
	require.NoError(t, sb.Close())
	require.Zero(t, sb.Frames())
	require.Zero(t, bad.ReplicaOffset())

	sl := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, sl.Close()) }()
	s := newAuthSlave(t, sl, m.Addr().String(), admin, "broker-a", nil)
	defer func() { require.NoError(t, s.Close()) }()
	testkit.Eventually(t, 5*time.Second, func() bool { return m.SlaveAckOffset() == ml.MaxOffset() }, "slave caught up")
	require.Equal(t, 1, m.SlaveCount())
	require.Equal(t, 50, countRecords(t, sl))
}

// Without authentication (ACL off) the master serves plain slaves as RocketMQ does, and a
// slave that sends a hello anyway.
func TestUnauthenticatedMasterServesBoth(t *testing.T) {
	ml := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	appendN(t, ml, 0, 20, 300)
	m := newMaster(t, ml)
	defer func() { require.NoError(t, m.Close()) }()
	require.Greater(t, received(t, m, nil, nil), FrameHeaderSize, "plain slave")
	sl := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, sl.Close()) }()
	s := newAuthSlave(t, sl, m.Addr().String(), admin, "any-name", nil)
	defer func() { require.NoError(t, s.Close()) }()
	testkit.Eventually(t, 5*time.Second, func() bool { return sl.ReplicaOffset() == ml.MaxOffset() }, "slave with a hello caught up")
}

// testServerTLS is a self-signed certificate for 127.0.0.1.
func testServerTLS(t testing.TB) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// An enforcing HA listener replicates to a TLS slave and gives a plain client nothing,
// even one with a valid hello; a permissive one serves both.
func TestTLSReplication(t *testing.T) {
	ml := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, ml.Close()) }()
	appendN(t, ml, 0, 30, 300)
	srv := testServerTLS(t)
	client := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // a test's self-signed certificate
	tlsWrap := func(c net.Conn) net.Conn { return tls.Client(c, client) }

	m := newAuthMaster(t, ml, &remoting.TLSConfig{Mode: remoting.TLSEnforcing, Config: srv})
	defer func() { require.NoError(t, m.Close()) }()
	require.Zero(t, received(t, m, nil, helloFor(t, admin, "broker-a")), "plain client on an enforcing port")
	require.Greater(t, received(t, m, tlsWrap, helloFor(t, admin, "broker-a")), FrameHeaderSize, "TLS client")
	require.Zero(t, received(t, m, tlsWrap, nil), "TLS without a hello")

	sl := openLog(t, t.TempDir(), testSegSize)
	defer func() { require.NoError(t, sl.Close()) }()
	s := newAuthSlave(t, sl, m.Addr().String(), admin, "broker-a", client)
	defer func() { require.NoError(t, s.Close()) }()
	testkit.Eventually(t, 5*time.Second, func() bool { return m.SlaveAckOffset() == ml.MaxOffset() }, "TLS slave caught up")
	require.Equal(t, 30, countRecords(t, sl))

	pm := newAuthMaster(t, ml, &remoting.TLSConfig{Mode: remoting.TLSPermissive, Config: srv})
	defer func() { require.NoError(t, pm.Close()) }()
	require.Greater(t, received(t, pm, nil, helloFor(t, admin, "broker-a")), FrameHeaderSize, "plain on permissive")
	require.Greater(t, received(t, pm, tlsWrap, helloFor(t, admin, "broker-a")), FrameHeaderSize, "TLS on permissive")
	require.Zero(t, received(t, pm, nil, nil), "anonymous on permissive")
}

// The hello's codec round-trips and refuses another version.
func TestHelloCodec(t *testing.T) {
	b := helloFor(t, admin, "broker-a")
	require.True(t, isHelloMagic(b))
	h, signed, err := ReadHello(bytes.NewReader(b[4:]))
	require.NoError(t, err)
	require.Equal(t, "broker-a", h.BrokerName)
	require.Equal(t, "ferryAdmin", h.AccessKey)
	require.Equal(t, b[:len(b)-HelloMACSize], signed)
	require.Equal(t, sign.ReplicationMAC("admin-secret", signed), h.MAC[:])
	a, err := acl.Parse([]byte(authACL))
	require.NoError(t, err)
	require.NoError(t, a.CheckReplication(netip.Addr{}, h.AccessKey, signed, h.MAC[:]))

	b[4] = 2
	_, _, err = ReadHello(bytes.NewReader(b[4:]))
	require.ErrorIs(t, err, ErrProtocol)
	_, _, err = ReadHello(bytes.NewReader(b[4:10]))
	require.Error(t, err)
}

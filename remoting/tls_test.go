package remoting

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/internal/testkit"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client certificate,
// generated per test.
type testPKI struct {
	pool   *x509.CertPool
	caPEM  []byte
	server tls.Certificate
	client tls.Certificate
	// PEM encodings of the server's certificate and key, for LoadServerTLS.
	serverCertPEM, serverKeyPEM []byte
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ferry test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) (tls.Certificate, []byte, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err)
		return cert, certPEM, keyPEM
	}
	p := &testPKI{pool: x509.NewCertPool(), caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	p.pool.AddCert(ca)
	p.server, p.serverCertPEM, p.serverKeyPEM = leaf(2, "ferry test server", x509.ExtKeyUsageServerAuth)
	p.client, _, _ = leaf(3, "ferry test client", x509.ExtKeyUsageClientAuth)
	return p
}

// serverTLS is a TLSConfig with the PKI's server certificate.
func (p *testPKI) serverTLS(mode TLSMode) *TLSConfig {
	return &TLSConfig{Mode: mode, Config: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{p.server}}}
}

// clientTLS is a client configuration that verifies the server against the PKI's CA.
func (p *testPKI) clientTLS() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.pool}
}

// writeFiles writes the server's certificate, key and the CA to dir.
func (p *testPKI) writeFiles(t *testing.T) (cert, key, ca string) {
	t.Helper()
	dir := t.TempDir()
	cert, key, ca = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(cert, p.serverCertPEM, 0o600))
	require.NoError(t, os.WriteFile(key, p.serverKeyPEM, 0o600))
	require.NoError(t, os.WriteFile(ca, p.caPEM, 0o600))
	return cert, key, ca
}

const codeWhoAmI int16 = 1010 // answers with the Channel's RemoteAddr and TLS state

var whoAmI = HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
	resp := NewResponse(req, CodeSuccess, "")
	resp.ExtFields.Set("remote", ch.RemoteAddr())
	st, ok := TLSState(ch)
	resp.ExtFields.Set("tls", strconv.FormatBool(ok))
	if ok && len(st.PeerCertificates) > 0 {
		resp.ExtFields.Set("peer", st.PeerCertificates[0].Subject.CommonName)
	}
	return resp, nil
})

// startServer starts a server on 127.0.0.1:0 (or on ln) with the given TLS setting and
// stops it at cleanup. viaStd serves a permissive port's plain connections on the std path.
func startServer(t *testing.T, ln net.Listener, mutate func(*ServerOptions), viaStd bool, handlers map[int16]Handler) *Server {
	t.Helper()
	opts := DefaultServerOptions()
	if mutate != nil {
		mutate(&opts)
	}
	s, err := NewServer(opts)
	require.NoError(t, err)
	s.plainViaStd = viaStd
	for code, h := range handlers {
		require.NoError(t, s.Handle(code, "", h))
	}
	ServeTest(t, s, ln)
	return s
}

// rawCall sends one request on a raw connection and returns its response.
func rawCall(t *testing.T, conn net.Conn, req *Command) *Command {
	t.Helper()
	var codec Codec
	frame, err := codec.AppendFrame(nil, req)
	require.NoError(t, err)
	_, err = conn.Write(frame)
	require.NoError(t, err)
	return readFrame(t, conn)
}

// transportOf returns the kind of transport serving the connection whose peer is remote.
func transportOf(s *Server, remote string) string {
	for _, c := range s.conns() {
		if c.remote != remote {
			continue
		}
		switch t := c.tr.(type) {
		case *netpollTransport:
			return "netpoll"
		case *stdTransport:
			if _, ok := t.nc.(*tls.Conn); ok {
				return "std-tls"
			}
			return "std-plain"
		}
	}
	return "none"
}

func TestParseTLSMode(t *testing.T) {
	for in, want := range map[string]TLSMode{"disabled": TLSDisabled, "permissive": TLSPermissive, " Enforcing ": TLSEnforcing} {
		got, err := ParseTLSMode(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got)
		text, err := got.MarshalText()
		require.NoError(t, err)
		var back TLSMode
		require.NoError(t, back.UnmarshalText(text))
		require.Equal(t, got, back)
	}
	_, err := ParseTLSMode("strict")
	require.ErrorIs(t, err, ErrUnknownTLSMode)
	require.Contains(t, err.Error(), `"strict"`)
	var m TLSMode
	require.ErrorIs(t, m.UnmarshalText([]byte("on")), ErrUnknownTLSMode)
	require.Equal(t, "TLSMode(7)", TLSMode(7).String())
}

func TestTLSConfigValidate(t *testing.T) {
	pki := newTestPKI(t)
	ok := []*TLSConfig{
		nil,
		{Mode: TLSDisabled},
		pki.serverTLS(TLSPermissive),
		pki.serverTLS(TLSEnforcing),
	}
	for _, c := range ok {
		opts := DefaultServerOptions()
		opts.TLS = c
		require.NoError(t, opts.Validate())
	}
	withAuth := pki.serverTLS(TLSEnforcing)
	withAuth.Config.ClientAuth = tls.RequireAndVerifyClientCert
	bad := map[string]*TLSConfig{
		"no config":         {Mode: TLSEnforcing},
		"no certificate":    {Mode: TLSPermissive, Config: &tls.Config{MinVersion: tls.VersionTLS12}},
		"negative timeout":  {Mode: TLSDisabled, HandshakeTimeout: -time.Second},
		"unknown mode":      {Mode: 9, Config: pki.serverTLS(TLSEnforcing).Config},
		"client auth no CA": withAuth,
	}
	for name, c := range bad {
		opts := DefaultServerOptions()
		opts.TLS = c
		err := opts.Validate()
		require.ErrorIs(t, err, ErrTLSConfig, name)
		_, err = NewServer(opts)
		require.ErrorIs(t, err, ErrTLSConfig, name)
	}
	require.ErrorIs(t, bad["unknown mode"].Validate(), ErrUnknownTLSMode)
}

func TestLoadServerTLS(t *testing.T) {
	pki := newTestPKI(t)
	cert, key, ca := pki.writeFiles(t)
	dir := filepath.Dir(cert)

	cfg, err := LoadServerTLS(cert, key, "", false)
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	require.Equal(t, tls.NoClientCert, cfg.ClientAuth)
	require.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)

	cfg, err = LoadServerTLS(cert, key, ca, false)
	require.NoError(t, err)
	require.Equal(t, tls.VerifyClientCertIfGiven, cfg.ClientAuth)
	cfg, err = LoadServerTLS(cert, key, ca, true)
	require.NoError(t, err)
	require.Equal(t, tls.RequireAndVerifyClientCert, cfg.ClientAuth)
	require.NotNil(t, cfg.ClientCAs)

	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a certificate"), 0o600))
	cases := map[string]struct {
		cert, key, ca string
		require       bool
		notExist      bool
		contains      string
	}{
		"missing cert":          {cert: filepath.Join(dir, "nope.pem"), key: key, notExist: true, contains: "nope.pem"},
		"missing key":           {cert: cert, key: filepath.Join(dir, "nope.key"), notExist: true, contains: "nope.key"},
		"missing CA":            {cert: cert, key: key, ca: filepath.Join(dir, "nope-ca.pem"), notExist: true, contains: "nope-ca.pem"},
		"bad cert":              {cert: garbage, key: key, contains: "garbage.pem"},
		"key of another cert":   {cert: cert, key: garbage, contains: "garbage.pem"},
		"bad CA":                {cert: cert, key: key, ca: garbage, contains: "holds no PEM certificate"},
		"require without CA":    {cert: cert, key: key, require: true, contains: "client CA file"},
		"no files":              {contains: "required"},
		"cert and key swapped":  {cert: key, key: cert, contains: "loading certificate"},
		"CA holds only the key": {cert: cert, key: key, ca: key, contains: "holds no PEM certificate"},
	}
	for name, c := range cases {
		_, err := LoadServerTLS(c.cert, c.key, c.ca, c.require)
		require.ErrorIs(t, err, ErrTLSConfig, name)
		require.Contains(t, err.Error(), c.contains, name)
		if c.notExist {
			require.ErrorIs(t, err, fs.ErrNotExist, name)
		}
	}
}

// In each mode, a TLS client and a plain client on the same port: enforcing serves only
// TLS, permissive both, disabled only plain; each refusal is logged and closes only that
// connection. Channel.RemoteAddr is the peer's real address on every path.
func TestTLSModes(t *testing.T) {
	pki := newTestPKI(t)
	type want struct{ tls, plain string } // transport serving it, or "" when refused
	cases := []struct {
		mode   TLSMode
		viaStd bool
		want   want
	}{
		{TLSDisabled, false, want{"", "netpoll"}},
		{TLSPermissive, false, want{"std-tls", "netpoll"}},
		{TLSPermissive, true, want{"std-tls", "std-plain"}},
		{TLSEnforcing, false, want{"std-tls", ""}},
	}
	for _, tc := range cases {
		name := tc.mode.String()
		if tc.viaStd {
			name += "-plain-via-std"
		}
		t.Run(name, func(t *testing.T) {
			var logs testkit.Buffer
			s := startServer(t, nil, func(o *ServerOptions) {
				o.Logger = zerolog.New(&logs)
				o.TLS = pki.serverTLS(tc.mode)
			}, tc.viaStd, map[int16]Handler{codeEcho: echo, codeWhoAmI: whoAmI})
			addr := s.Addr().String()

			tlsClient := testClient(t, func(o *ClientOptions) { o.TLS = pki.clientTLS() })
			plainClient := testClient(t, nil)
			for _, c := range []struct {
				cl   *Client
				want string
			}{{tlsClient, tc.want.tls}, {plainClient, tc.want.plain}} {
				resp, err := c.cl.Invoke(context.Background(), addr, NewRequest(codeEcho, map[string]string{"k": "v"}))
				if c.want == "" {
					require.ErrorIs(t, err, ErrConnClosed)
					continue
				}
				require.NoError(t, err)
				require.Equal(t, "v", resp.Ext("k"))
			}

			// Raw connections: the handler sees the peer's own address, and the
			// connection is served by the expected transport.
			if tc.want.tls != "" {
				conn, err := tls.Dial("tcp", addr, pki.clientTLS())
				require.NoError(t, err)
				defer conn.Close()
				resp := rawCall(t, conn, NewRequest(codeWhoAmI, nil))
				require.Equal(t, conn.LocalAddr().String(), resp.Ext("remote"))
				require.Equal(t, "true", resp.Ext("tls"))
				require.Equal(t, tc.want.tls, transportOf(s, conn.LocalAddr().String()))
			}
			if tc.want.plain != "" {
				conn := dial(t, s)
				resp := rawCall(t, conn, NewRequest(codeWhoAmI, nil))
				require.Equal(t, conn.LocalAddr().String(), resp.Ext("remote"))
				require.Equal(t, "false", resp.Ext("tls"))
				require.Equal(t, tc.want.plain, transportOf(s, conn.LocalAddr().String()))
			}

			switch tc.mode {
			case TLSDisabled:
				require.Eventually(t, func() bool { return strings.Contains(logs.String(), "TLS is not enabled on this port") },
					5*time.Second, time.Millisecond)
				require.Contains(t, logs.String(), ErrTLSNotEnabled.Error())
			case TLSEnforcing:
				require.Eventually(t, func() bool { return strings.Contains(logs.String(), "this port requires TLS") },
					5*time.Second, time.Millisecond)
				require.Contains(t, logs.String(), ErrTLSRequired.Error())
			}
		})
	}
}

// The official clients dial with InsecureSkipVerify and nothing else.
func TestTLSClientLikeTheOfficialOne(t *testing.T) {
	pki := newTestPKI(t)
	s := startServer(t, nil, func(o *ServerOptions) { o.TLS = pki.serverTLS(TLSEnforcing) }, false,
		map[int16]Handler{codeEcho: echo})
	c := testClient(t, func(o *ClientOptions) {
		o.TLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // what the official clients do
	})
	resp, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, map[string]string{"k": "v"}))
	require.NoError(t, err)
	require.Equal(t, "v", resp.Ext("k"))

	// A client that verifies the server against other roots refuses it.
	other := newTestPKI(t)
	c2 := testClient(t, func(o *ClientOptions) { o.TLS = other.clientTLS() })
	_, err = c2.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, nil))
	require.ErrorIs(t, err, ErrConnClosed)
	var uerr x509.UnknownAuthorityError
	require.ErrorAs(t, err, &uerr)
}

// Server-initiated requests (Invoke and InvokeOneway) and deferred replies work over TLS.
func TestTLSServerInitiatedRequests(t *testing.T) {
	pki := newTestPKI(t)
	for _, mode := range []TLSMode{TLSPermissive, TLSEnforcing} {
		t.Run(mode.String(), func(t *testing.T) {
			var serverSide atomic.Value
			var held atomic.Value
			s := startServer(t, nil, func(o *ServerOptions) { o.TLS = pki.serverTLS(mode) }, false, map[int16]Handler{
				codeCallMe: HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
					serverSide.Store(ch)
					return NewResponse(req, CodeSuccess, ""), nil
				}),
				codeDefer: HandlerFunc(func(_ context.Context, ch Channel, req *Command) (*Command, error) {
					held.Store(func() { _ = ch.Reply(req, NewResponse(req, CodeSuccess, "later")) })
					return nil, nil
				}),
			})
			c := testClient(t, func(o *ClientOptions) {
				o.TLS = pki.clientTLS()
				o.SerializeType = SerializeRocketMQ
			})
			oneway := make(chan string, 1)
			c.Handle(codeAskBack, HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
				return NewResponse(req, CodeSuccess, "client says "+req.Ext("q")), nil
			}))
			c.Handle(codeAskBack+1, HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
				oneway <- req.Ext("q")
				return nil, nil
			}))
			addr := s.Addr().String()
			_, err := c.Invoke(context.Background(), addr, NewRequest(codeCallMe, nil))
			require.NoError(t, err)
			ch := serverSide.Load().(Channel)
			st, ok := TLSState(ch)
			require.True(t, ok)
			require.True(t, st.HandshakeComplete)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for i := range 20 {
				q := strconv.Itoa(i)
				resp, err := ch.Invoke(ctx, NewRequest(codeAskBack, map[string]string{"q": q}))
				require.NoError(t, err)
				require.Equal(t, "client says "+q, resp.Remark)
				require.Equal(t, SerializeRocketMQ, resp.SerializeType, "server request uses the peer's last type")
			}
			require.NoError(t, ch.InvokeOneway(ctx, NewRequest(codeAskBack+1, map[string]string{"q": "fire"})))
			require.Equal(t, "fire", <-oneway)

			done := make(chan *Command, 1)
			require.NoError(t, c.InvokeAsync(context.Background(), addr, NewRequest(codeDefer, nil), func(resp *Command, err error) {
				if err != nil {
					resp = nil
				}
				done <- resp
			}))
			require.Eventually(t, func() bool { return held.Load() != nil }, 5*time.Second, time.Millisecond)
			held.Load().(func())()
			resp := <-done
			require.NotNil(t, resp)
			require.Equal(t, "later", resp.Remark)
		})
	}
}

// Frames of several MiB each way, and many concurrent requests of mixed sizes on TLS
// connections, arrive intact; the request-bytes budget refuses an over-limit frame from
// its header as on the reactor.
func TestTLSBigFramesAndConcurrency(t *testing.T) {
	pki := newTestPKI(t)
	s := startServer(t, nil, func(o *ServerOptions) {
		o.TLS = pki.serverTLS(TLSEnforcing)
		o.Pools[0].Workers = 8
	}, false, map[int16]Handler{codeEcho: echo})
	c := testClient(t, func(o *ClientOptions) {
		o.TLS = pki.clientTLS()
		o.ConnsPerAddr = 2
		o.RequestTimeout = 30 * time.Second
	})
	addr := s.Addr().String()
	big := make([]byte, 7<<20+13)
	for i := range big {
		big[i] = byte(i*31 + i>>11)
	}
	for range 3 {
		req := NewRequest(codeEcho, nil)
		req.Body = big
		resp, err := c.Invoke(context.Background(), addr, req)
		require.NoError(t, err)
		require.Equal(t, big, resp.Body)
	}

	const workers, each = 32, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			rnd := mrand.New(mrand.NewPCG(uint64(w), 1))
			for i := range each {
				n := rnd.IntN(70 << 10)
				if i%10 == 0 {
					n = rnd.IntN(2 << 20)
				}
				req := NewRequest(codeEcho, map[string]string{"w": strconv.Itoa(w), "i": strconv.Itoa(i)})
				req.Body = big[:n]
				resp, err := c.Invoke(context.Background(), addr, req)
				switch {
				case err != nil:
					errs <- err
					return
				case resp.Ext("w") != strconv.Itoa(w) || resp.Ext("i") != strconv.Itoa(i) || len(resp.Body) != n ||
					string(resp.Body) != string(big[:n]):
					errs <- errors.New("response mismatch")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return s.RequestBytes() == 0 }, 5*time.Second, time.Millisecond)
}

func TestTLSRequestBytesLimit(t *testing.T) {
	pki := newTestPKI(t)
	release := make(chan struct{})
	s := startServer(t, nil, func(o *ServerOptions) {
		o.TLS = pki.serverTLS(TLSEnforcing)
		o.MaxFrameSize = 1 << 20
		o.MaxConnRequestBytes = 1 << 20
	}, false, map[int16]Handler{codeEcho: echo, codeBlock: HandlerFunc(func(_ context.Context, _ Channel, req *Command) (*Command, error) {
		<-release
		return NewResponse(req, CodeSuccess, ""), nil
	})})
	t.Cleanup(func() { close(release) }) // before the server's cleanup drains
	conn, err := tls.Dial("tcp", s.Addr().String(), pki.clientTLS())
	require.NoError(t, err)
	defer conn.Close()
	// 700 KiB held by a request being handled; another 700 KiB frame would exceed the
	// connection's 1 MiB, so it is answered SYSTEM_BUSY and its body skipped, and the
	// connection keeps working.
	var codec Codec
	blockReq := NewRequest(codeBlock, nil)
	blockReq.Opaque = 1
	blockReq.Body = make([]byte, 700<<10)
	frame, err := codec.AppendFrame(nil, blockReq)
	require.NoError(t, err)
	frame = append(frame, bigEcho(t, 2, 700<<10)...)
	frame = append(frame, smallEcho(t, 3)...)
	_, err = conn.Write(frame)
	require.NoError(t, err)
	resp := readFrame(t, conn)
	require.Equal(t, int32(2), resp.Opaque)
	require.Equal(t, CodeSystemBusy, resp.Code)
	require.Contains(t, resp.Remark, "MaxConnRequestBytes")
	resp = readFrame(t, conn)
	require.Equal(t, int32(3), resp.Opaque)
	require.Equal(t, CodeSuccess, resp.Code)
	require.Equal(t, "hi!", string(resp.Body))
}

// With client certificates required, a client without one is refused and one with a
// certificate from the configured CA is served; optional verification serves both and
// shows the peer's certificate.
func TestTLSClientCertificate(t *testing.T) {
	pki := newTestPKI(t)
	cert, key, ca := pki.writeFiles(t)
	for _, required := range []bool{true, false} {
		t.Run("required="+strconv.FormatBool(required), func(t *testing.T) {
			cfg, err := LoadServerTLS(cert, key, ca, required)
			require.NoError(t, err)
			var logs testkit.Buffer
			s := startServer(t, nil, func(o *ServerOptions) {
				o.Logger = zerolog.New(&logs)
				o.TLS = &TLSConfig{Mode: TLSEnforcing, Config: cfg}
			}, false, map[int16]Handler{codeWhoAmI: whoAmI})
			addr := s.Addr().String()

			anon := testClient(t, func(o *ClientOptions) { o.TLS = pki.clientTLS() })
			resp, err := anon.Invoke(context.Background(), addr, NewRequest(codeWhoAmI, nil))
			if required {
				require.ErrorIs(t, err, ErrConnClosed)
				require.Eventually(t, func() bool { return strings.Contains(logs.String(), "TLS handshake failed") },
					5*time.Second, time.Millisecond)
			} else {
				require.NoError(t, err)
				require.Empty(t, resp.Ext("peer"))
			}

			withCert := pki.clientTLS()
			withCert.Certificates = []tls.Certificate{pki.client}
			named := testClient(t, func(o *ClientOptions) { o.TLS = withCert })
			resp, err = named.Invoke(context.Background(), addr, NewRequest(codeWhoAmI, nil))
			require.NoError(t, err)
			require.Equal(t, "ferry test client", resp.Ext("peer"))

			// A certificate from another CA is refused either way.
			other := newTestPKI(t)
			foreign := pki.clientTLS()
			foreign.Certificates = []tls.Certificate{other.client}
			stranger := testClient(t, func(o *ClientOptions) { o.TLS = foreign })
			_, err = stranger.Invoke(context.Background(), addr, NewRequest(codeWhoAmI, nil))
			require.ErrorIs(t, err, ErrConnClosed)
		})
	}
}

// Peers that send garbage instead of a ClientHello, a partial handshake, nothing at all,
// or hang up at once are closed (within the handshake timeout), others are unaffected,
// and nothing is left behind: no tracked socket, no connection, no goroutine.
func TestPermissiveGarbageIsClosedWithoutLeaks(t *testing.T) {
	ignore := leaktest.Netpoll(goleak.IgnoreCurrent())
	pki := newTestPKI(t)
	opts := DefaultServerOptions()
	opts.Logger = zerolog.Nop()
	opts.TLS = pki.serverTLS(TLSPermissive)
	opts.TLS.HandshakeTimeout = 300 * time.Millisecond
	s, err := NewServer(opts)
	require.NoError(t, err)
	require.NoError(t, s.Handle(codeEcho, "", echo))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Start(ln))
	addr := s.Addr().String()

	good := testClient(t, func(o *ClientOptions) { o.TLS = pki.clientTLS() })
	hello := clientHello(t, pki)
	rnd := mrand.New(mrand.NewPCG(7, 7))
	var payloads [][]byte
	for i := range 40 {
		n := 16 + rnd.IntN(4096)
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rnd.Uint32())
		}
		switch i % 5 {
		case 0: // a handshake record type, then noise
			p[0] = tlsHandshakeRecord
		case 1: // a plausible record header with a huge length, then noise
			p = append([]byte{tlsHandshakeRecord, 3, 1, 0xff, 0xff}, p...)
		case 2: // the start of a real ClientHello, then silence
			p = hello[:1+rnd.IntN(len(hello)-1)]
		case 3: // a ClientHello with its body corrupted
			p = append([]byte(nil), hello...)
			for k := 10; k < len(p); k += 7 {
				p[k] ^= byte(rnd.Uint32() | 1)
			}
		case 4: // plain noise, not starting like TLS: the reactor closes it as a bad frame
			p[0] = 0x7f
		}
		payloads = append(payloads, p)
	}
	payloads = append(payloads, nil, []byte{}) // nil: silent; empty: hang up at once

	var wg sync.WaitGroup
	for i, p := range payloads {
		wg.Go(func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			if p != nil && len(p) == 0 {
				return
			}
			if len(p) > 0 {
				if _, err := conn.Write(p); err != nil {
					return // already closed by the server: fine
				}
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.Copy(io.Discard, conn) // until the server closes (an alert may come first)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("payload %d (%d bytes) was not closed by the server", i, len(p))
			}
		})
		if i%10 == 0 { // meanwhile, a good client keeps being served
			_, err := good.Invoke(context.Background(), addr, NewRequest(codeEcho, nil))
			require.NoError(t, err)
		}
	}
	wg.Wait()
	require.NoError(t, good.Close())
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.mu.raw) == 0 && len(s.mu.conns) == 0
	}, 5*time.Second, time.Millisecond)
	require.Zero(t, s.RequestBytes())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	goleak.VerifyNone(t, ignore...)
}

// clientHello returns the first flight of a real TLS client.
func clientHello(t *testing.T, pki *testPKI) []byte {
	t.Helper()
	a, b := net.Pipe()
	cfg := pki.clientTLS()
	cfg.ServerName = "127.0.0.1"
	go func() {
		_ = tls.Client(a, cfg).Handshake()
	}()
	var head [5]byte
	_, err := io.ReadFull(b, head[:])
	require.NoError(t, err)
	body := make([]byte, binary.BigEndian.Uint16(head[3:]))
	_, err = io.ReadFull(b, body)
	require.NoError(t, err)
	_ = b.Close()
	_ = a.Close()
	return append(head[:], body...)
}

// Shutdown closes TLS connections too: those being served (their calls fail), those in a
// handshake and those still silent, without waiting for the handshake timeout.
func TestTLSShutdownClosesEverything(t *testing.T) {
	pki := newTestPKI(t)
	for _, mode := range []TLSMode{TLSPermissive, TLSEnforcing} {
		t.Run(mode.String(), func(t *testing.T) {
			opts := DefaultServerOptions()
			opts.TLS = pki.serverTLS(mode)
			opts.TLS.HandshakeTimeout = time.Minute
			closed := make(chan uint64, 8)
			opts.OnClose = func(ch Channel) { closed <- ch.ID() }
			s, err := NewServer(opts)
			require.NoError(t, err)
			entered := make(chan struct{}, 1)
			require.NoError(t, s.Handle(codeDefer, "", HandlerFunc(func(context.Context, Channel, *Command) (*Command, error) {
				entered <- struct{}{}
				return nil, nil // never answered
			})))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			require.NoError(t, s.Start(ln))
			addr := s.Addr().String()

			c := testClient(t, func(o *ClientOptions) {
				o.TLS = pki.clientTLS()
				o.RequestTimeout = time.Minute
			})
			failed := make(chan error, 1)
			require.NoError(t, c.InvokeAsync(context.Background(), addr, NewRequest(codeDefer, nil), func(_ *Command, err error) {
				failed <- err
			}))
			<-entered
			silent, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer silent.Close()
			partial, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer partial.Close()
			_, err = partial.Write(clientHello(t, pki)[:20])
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				s.mu.Lock()
				defer s.mu.Unlock()
				return len(s.mu.raw) == 3
			}, 5*time.Second, time.Millisecond)

			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			require.ErrorIs(t, s.Shutdown(ctx), context.DeadlineExceeded, "the held request was never answered")
			require.Less(t, time.Since(start), 5*time.Second)
			require.ErrorIs(t, <-failed, ErrConnClosed)
			require.Len(t, closed, 1, "OnClose ran for the served connection")
			for _, conn := range []net.Conn{silent, partial} {
				_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, err := io.Copy(io.Discard, conn)
				var ne net.Error
				require.False(t, errors.As(err, &ne) && ne.Timeout(), "closed by the server, not timed out: %v", err)
			}
			_, err = net.DialTimeout("tcp", addr, time.Second)
			require.Error(t, err, "listener closed")
		})
	}
}

// A TLS connection with no traffic is closed after IdleTimeout, like a plain one.
func TestTLSIdleConnectionsAreClosed(t *testing.T) {
	pki := newTestPKI(t)
	closed := make(chan struct{}, 1)
	s := startServer(t, nil, func(o *ServerOptions) {
		o.TLS = pki.serverTLS(TLSEnforcing)
		o.IdleTimeout = 100 * time.Millisecond
		o.OnClose = func(Channel) {
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	}, false, map[int16]Handler{codeEcho: echo})
	c := testClient(t, func(o *ClientOptions) { o.TLS = pki.clientTLS() })
	_, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, nil))
	require.NoError(t, err)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("idle TLS connection not closed")
	}
	require.Eventually(t, func() bool {
		_, err := c.Invoke(context.Background(), s.Addr().String(), NewRequest(codeEcho, nil))
		return err == nil
	}, 5*time.Second, time.Millisecond, "the client reconnects")
}

// opaqueListener hides its connections' descriptors (as a wrapping listener would), so
// permissive routing reads the first byte instead of peeking and plain connections stay
// on the std path.
type opaqueListener struct{ net.Listener }

type opaqueConn struct{ net.Conn }

func (l opaqueListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return opaqueConn{nc}, nil
}

func TestPermissiveWithoutDescriptors(t *testing.T) {
	pki := newTestPKI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := startServer(t, opaqueListener{ln}, func(o *ServerOptions) { o.TLS = pki.serverTLS(TLSPermissive) }, false,
		map[int16]Handler{codeWhoAmI: whoAmI})
	tlsConn, err := tls.Dial("tcp", s.Addr().String(), pki.clientTLS())
	require.NoError(t, err)
	defer tlsConn.Close()
	resp := rawCall(t, tlsConn, NewRequest(codeWhoAmI, nil))
	require.Equal(t, "true", resp.Ext("tls"))
	require.Equal(t, tlsConn.LocalAddr().String(), resp.Ext("remote"))
	plain := dial(t, s)
	for range 3 {
		resp = rawCall(t, plain, NewRequest(codeWhoAmI, nil))
		require.Equal(t, "false", resp.Ext("tls"))
		require.Equal(t, plain.LocalAddr().String(), resp.Ext("remote"))
	}
	require.Equal(t, "std-plain", transportOf(s, plain.LocalAddr().String()))
}

// The client's DialTimeout bounds its TLS handshake: a server that accepts and never
// answers fails the call instead of holding it.
func TestTLSClientHandshakeBoundedByDialTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			accepted <- conn
		}
		close(accepted)
	}()
	pki := newTestPKI(t)
	c := testClient(t, func(o *ClientOptions) {
		o.TLS = pki.clientTLS()
		o.DialTimeout = 200 * time.Millisecond
		o.RequestTimeout = time.Minute
	})
	start := time.Now()
	_, err = c.Invoke(context.Background(), ln.Addr().String(), NewRequest(codeEcho, nil))
	require.ErrorIs(t, err, ErrConnClosed)
	require.Less(t, time.Since(start), 10*time.Second)
	if conn := <-accepted; conn != nil {
		_ = conn.Close()
	}
}

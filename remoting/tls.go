package remoting

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// TLS options and the helpers that build them. How the server serves TLS is in
// server_std.go; the modes are RocketMQ's tls.server.mode.

// Errors of the TLS configuration and of connections refused for their TLS use. Callers
// test them with errors.Is.
var (
	// ErrUnknownTLSMode is returned by ParseTLSMode and TLSConfig.Validate for a mode other
	// than disabled, permissive and enforcing.
	ErrUnknownTLSMode = errors.New("remoting: unknown TLS mode")
	// ErrTLSConfig wraps every error of LoadServerTLS and TLSConfig.Validate: a missing or
	// unreadable file, a bad certificate, a mode without a certificate.
	ErrTLSConfig = errors.New("remoting: invalid TLS configuration")
	// ErrTLSRequired is the reason a plain-text connection is closed on a server in
	// TLSEnforcing mode.
	ErrTLSRequired = errors.New("remoting: plain-text connection on a TLS-only port")
)

// ErrTLSNotEnabled is the reason a connection that starts a TLS handshake is closed: the
// port speaks plain remoting frames.
var ErrTLSNotEnabled = errors.New("remoting: TLS handshake on a plain-text port")

// tlsHandshakeRecord is the first byte of a TLS connection: the content type of a
// handshake record. RocketMQ's permissive mode routes on it alone; as the high byte of a
// frame length it would mean a frame of at least 352 MiB.
const tlsHandshakeRecord = 0x16

// looksLikeTLS reports whether the first bytes of a connection are a TLS handshake record
// (content type 22, protocol version 3.x), which as a frame length reads as ~370 MB.
func looksLikeTLS(head []byte) bool {
	return len(head) >= 2 && head[0] == tlsHandshakeRecord && head[1] == 0x03
}

// DefaultTLSHandshakeTimeout bounds how long a new connection may take to send its first
// byte and finish its TLS handshake (TLSConfig.HandshakeTimeout).
const DefaultTLSHandshakeTimeout = 10 * time.Second

// TLSMode is what a server accepts on its port, as RocketMQ's tls.server.mode.
type TLSMode uint8

const (
	// TLSDisabled serves plain remoting frames only; a TLS handshake is closed with a log
	// line naming ErrTLSNotEnabled. It is the zero value.
	TLSDisabled TLSMode = iota
	// TLSPermissive serves TLS and plain connections on one port, told apart by their
	// first byte: 0x16 starts a TLS handshake record, while a frame starts with the high
	// byte of its length.
	TLSPermissive
	// TLSEnforcing serves TLS only; a plain connection fails its handshake and is closed
	// with a log line naming ErrTLSRequired.
	TLSEnforcing
)

var tlsModeNames = [...]string{TLSDisabled: "disabled", TLSPermissive: "permissive", TLSEnforcing: "enforcing"}

// String returns the mode's RocketMQ name: "disabled", "permissive" or "enforcing".
func (m TLSMode) String() string {
	if int(m) < len(tlsModeNames) {
		return tlsModeNames[m]
	}
	return fmt.Sprintf("TLSMode(%d)", uint8(m))
}

// ParseTLSMode parses a RocketMQ tls.server.mode value: "disabled", "permissive" or
// "enforcing", in any case.
func ParseTLSMode(s string) (TLSMode, error) {
	for m, name := range tlsModeNames {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return TLSMode(m), nil
		}
	}
	return TLSDisabled, fmt.Errorf("%w %q (want disabled, permissive or enforcing)", ErrUnknownTLSMode, s)
}

// MarshalText implements encoding.TextMarshaler.
func (m TLSMode) MarshalText() ([]byte, error) {
	if int(m) >= len(tlsModeNames) {
		return nil, fmt.Errorf("%w: %d", ErrUnknownTLSMode, uint8(m))
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseTLSMode, so configuration
// decoders accept the RocketMQ names.
func (m *TLSMode) UnmarshalText(text []byte) error {
	v, err := ParseTLSMode(string(text))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// TLSConfig is a server's TLS setting (ServerOptions.TLS).
type TLSConfig struct {
	// Mode is what the port accepts.
	Mode TLSMode
	// Config holds the server's certificate and, through ClientAuth and ClientCAs, whether
	// clients must present certificates. It is required unless Mode is TLSDisabled; see
	// LoadServerTLS. The server uses a clone.
	Config *tls.Config
	// HandshakeTimeout bounds, from accept, how long a connection may take to send its
	// first byte (permissive mode) and complete its TLS handshake; such a connection is
	// then closed. 0 selects DefaultTLSHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// Validate reports the first invalid setting, wrapping ErrTLSConfig (or ErrUnknownTLSMode).
func (c *TLSConfig) Validate() error {
	switch {
	case c.Mode > TLSEnforcing:
		return fmt.Errorf("%w: %w: %d", ErrTLSConfig, ErrUnknownTLSMode, uint8(c.Mode))
	case c.HandshakeTimeout < 0:
		return fmt.Errorf("%w: HandshakeTimeout must not be negative, got %v", ErrTLSConfig, c.HandshakeTimeout)
	case c.Mode == TLSDisabled:
		return nil
	case c.Config == nil:
		return fmt.Errorf("%w: TLS mode %s needs a tls.Config with the server certificate", ErrTLSConfig, c.Mode)
	case len(c.Config.Certificates) == 0 && c.Config.GetCertificate == nil && c.Config.GetConfigForClient == nil:
		return fmt.Errorf("%w: TLS mode %s needs a server certificate (tls.Config has none)", ErrTLSConfig, c.Mode)
	case c.Config.ClientAuth >= tls.VerifyClientCertIfGiven && c.Config.ClientCAs == nil && c.Config.GetConfigForClient == nil:
		return fmt.Errorf("%w: ClientAuth %v verifies client certificates but ClientCAs is empty", ErrTLSConfig, c.Config.ClientAuth)
	}
	return nil
}

// mode is the configured mode; a nil config is TLSDisabled.
func (c *TLSConfig) mode() TLSMode {
	if c == nil {
		return TLSDisabled
	}
	return c.Mode
}

// handshakeTimeout is the effective HandshakeTimeout.
func (c *TLSConfig) handshakeTimeout() time.Duration {
	if c == nil || c.HandshakeTimeout == 0 {
		return DefaultTLSHandshakeTimeout
	}
	return c.HandshakeTimeout
}

// LoadServerTLS builds a server tls.Config (TLS 1.2 and later) from PEM files: the
// server's certificate chain and private key and, if clientCAFile is not empty, the
// certificate authorities that client certificates are verified against. With
// requireClientCert a client must present a certificate signed by one of them (it needs
// clientCAFile); without it a certificate is verified only if a client presents one.
// Errors wrap ErrTLSConfig and the underlying error (fs.ErrNotExist for a missing file).
func LoadServerTLS(certFile, keyFile, clientCAFile string, requireClientCert bool) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%w: a certificate file and a key file are required (got %q and %q)", ErrTLSConfig, certFile, keyFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: loading certificate %s and key %s: %w", ErrTLSConfig, certFile, keyFile, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.NoClientCert,
	}
	if clientCAFile == "" {
		if requireClientCert {
			return nil, fmt.Errorf("%w: requiring client certificates needs a client CA file", ErrTLSConfig)
		}
		return cfg, nil
	}
	pem, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("%w: reading client CA file: %w", ErrTLSConfig, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: client CA file %s holds no PEM certificate", ErrTLSConfig, clientCAFile)
	}
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.VerifyClientCertIfGiven
	if requireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// TLSState returns the TLS state of ch's connection, and false for a plain connection (or a
// Channel not made by this package).
func TLSState(ch Channel) (tls.ConnectionState, bool) {
	var nc any
	switch c := ch.(type) {
	case *serverConn:
		if t, ok := c.tr.(*stdTransport); ok {
			nc = t.nc
		}
	case *clientConn:
		nc = c.nc
	}
	if tc, ok := nc.(*tls.Conn); ok {
		return tc.ConnectionState(), true
	}
	return tls.ConnectionState{}, false
}

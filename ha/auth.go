package ha

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/remoting"
)

// ErrRefused means the master refused a connection before streaming: a plain one on a
// TLS-enforcing port, one without a hello while authentication is required, or a hello
// that does not prove an account allowed to replicate (the layout is in frame.go).
var ErrRefused = errors.New("ha: slave refused")

// ErrEpoch means a master in controller mode refused a slave of another master epoch
// (wrapped with ErrRefused).
var ErrEpoch = errors.New("ha: master epoch mismatch")

// Authenticator checks a slave's proof of an account (*acl.ACL and *acl.Watcher
// implement it): mac must be sign.ReplicationMAC of msg under the account's secret, and
// the account must be allowed to replicate.
type Authenticator interface {
	CheckReplication(addr netip.Addr, accessKey string, msg, mac []byte) error
}

// tlsRecordHandshake is the first byte of a TLS connection (a handshake record).
const tlsRecordHandshake = 0x16

// prefixConn reads prefix before the connection (a byte read to choose TLS or plain).
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// handshake runs the listener's TLS mode and the authentication on a new connection,
// within HandshakeTimeout, and sets c.conn and c.rd for the loops. Nothing is written to
// the connection before it succeeds (but a TLS handshake's own records).
func (c *masterConn) handshake() error {
	o := &c.m.opts
	if err := c.raw.SetDeadline(time.Now().Add(o.HandshakeTimeout)); err != nil {
		return fmt.Errorf("ha: set handshake deadline: %w", err)
	}
	conn, rd := c.raw, io.Reader(c.raw)
	if o.TLS != nil && o.TLS.Mode != remoting.TLSDisabled {
		var first [1]byte
		if _, err := io.ReadFull(c.raw, first[:]); err != nil {
			return fmt.Errorf("ha: read the first byte: %w", err)
		}
		pc := &prefixConn{Conn: c.raw, prefix: first[:]}
		switch {
		case first[0] == tlsRecordHandshake:
			tc := tls.Server(pc, o.TLS.Config)
			if err := tc.HandshakeContext(context.Background()); err != nil {
				return fmt.Errorf("%w: TLS handshake: %w", ErrRefused, err)
			}
			conn, rd = tc, tc
			c.tls = true
		case o.TLS.Mode == remoting.TLSEnforcing:
			return fmt.Errorf("%w: a plain connection on a TLS-enforcing HA port (the slave needs broker.tlsToNamesrv)", ErrRefused)
		default:
			rd = pc
		}
	}
	var magic [4]byte
	if _, err := io.ReadFull(rd, magic[:]); err != nil {
		return fmt.Errorf("ha: read the slave's first bytes: %w", err)
	}
	switch {
	case isHelloMagic(magic[:]) || isIdentityMagic(magic[:]):
		h, signed, err := readHello(rd, isIdentityMagic(magic[:]))
		if err != nil {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
		if o.Auth != nil {
			if err := c.m.checkHello(c.raw.RemoteAddr(), &h, signed); err != nil {
				return err
			}
			c.account = h.AccessKey
		}
		if o.Epoch > 0 {
			if err := c.m.checkIdentity(&h); err != nil {
				return err
			}
			c.peerID, c.epoch = h.BrokerID, h.Epoch
			c.samples = &sampleRing{}
		}
	case magic[0] == tlsRecordHandshake && !c.tls:
		return fmt.Errorf("%w: a TLS handshake on a plain HA port (broker.tlsMode is disabled here)", ErrRefused)
	case o.Auth != nil:
		return fmt.Errorf("%w: no credentials (ACL is on: the slave needs broker.accessKey/secretKey of an admin account)", ErrRefused)
	case o.Epoch > 0:
		return fmt.Errorf("%w: an anonymous slave of a master in controller mode (the slave needs broker.controllerMode)", ErrRefused)
	default: // a plain slave's first offset report
		rd = io.MultiReader(bytes.NewReader(magic[:]), rd)
	}
	if err := c.raw.SetDeadline(time.Time{}); err != nil {
		return fmt.Errorf("ha: clear handshake deadline: %w", err)
	}
	c.conn, c.rd = conn, rd
	return nil
}

// checkHello checks a hello's broker name, age, nonce and account (see frame.go).
func (m *Master) checkHello(addr net.Addr, h *Hello, signed []byte) error {
	o := &m.opts
	if o.BrokerName != "" && h.BrokerName != o.BrokerName {
		return fmt.Errorf("%w: the slave is of broker %q, this master is %q", ErrRefused, h.BrokerName, o.BrokerName)
	}
	now := time.Now()
	if skew := now.Sub(time.UnixMilli(h.Timestamp)).Abs(); skew > o.MaxClockSkew {
		return fmt.Errorf("%w: the hello's time is %v off this master's clock (at most %v; replayed, or the clocks differ)",
			ErrRefused, skew.Round(time.Millisecond), o.MaxClockSkew)
	}
	var ip netip.Addr
	if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
		ip = ap.Addr()
	}
	if err := o.Auth.CheckReplication(ip, h.AccessKey, signed, h.MAC[:]); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	m.nonceMu.Lock()
	defer m.nonceMu.Unlock()
	for n, exp := range m.nonces {
		if now.After(exp) {
			delete(m.nonces, n)
		}
	}
	if _, seen := m.nonces[h.Nonce]; seen {
		return fmt.Errorf("%w: the hello of access key %q was used before (replayed)", ErrRefused, h.AccessKey)
	}
	m.nonces[h.Nonce] = now.Add(2 * o.MaxClockSkew)
	return nil
}

// checkIdentity admits, in controller mode, only an identity hello of this master's
// broker name and epoch; a slave of a higher epoch shows that this master is stale
// (MasterOptions.OnStaleEpoch).
func (m *Master) checkIdentity(h *Hello) error {
	o := &m.opts
	switch {
	case !h.Identified:
		return fmt.Errorf("%w: a slave without an identity hello on a master in controller mode (the slave needs broker.controllerMode)",
			ErrRefused)
	case o.BrokerName != "" && h.BrokerName != o.BrokerName:
		return fmt.Errorf("%w: the slave is of broker %q, this master is %q", ErrRefused, h.BrokerName, o.BrokerName)
	case h.Epoch > o.Epoch:
		if o.OnStaleEpoch != nil {
			o.OnStaleEpoch(h.BrokerID, h.Epoch)
		}
		return fmt.Errorf("%w: %w: slave %d serves epoch %d, this master only %d (this master is stale)",
			ErrRefused, ErrEpoch, h.BrokerID, h.Epoch, o.Epoch)
	case h.Epoch < o.Epoch:
		return fmt.Errorf("%w: %w: slave %d serves epoch %d, this master %d (the slave must check its log against the new epoch first)",
			ErrRefused, ErrEpoch, h.BrokerID, h.Epoch, o.Epoch)
	}
	return nil
}

// hello builds the slave's hello: an identity hello in controller mode (Epoch > 0).
func (s *Slave) hello() ([]byte, error) {
	h := Hello{Version: HelloVersion, Timestamp: time.Now().UnixMilli(), BrokerName: s.opts.BrokerName,
		AccessKey: s.opts.Credentials.AccessKey}
	if s.opts.Epoch > 0 {
		h.Identified, h.BrokerID, h.Epoch = true, s.opts.BrokerID, s.opts.Epoch
	}
	if _, err := rand.Read(h.Nonce[:]); err != nil {
		return nil, fmt.Errorf("ha: hello nonce: %w", err)
	}
	b, err := AppendHelloSigned(make([]byte, 0, MaxHelloSize), &h)
	if err != nil {
		return nil, err
	}
	return append(b, sign.ReplicationMAC(s.opts.Credentials.SecretKey, b)...), nil
}

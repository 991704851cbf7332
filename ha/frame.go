package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Wire format (RocketMQ 4.x HAService / HAConnection; raw TCP, no remoting framing).
// These constants are part of the protocol. All integers are big-endian.
//
// Slave → master: a stream of offset reports, each 8 bytes.
//
//	+--------------------------------+
//	| maxPhyOffset int64 (8 bytes)   |  the slave's replica end
//	+--------------------------------+
//
// The master reads whatever has arrived and takes the last complete 8-byte value
// (values are aligned to 8 from the start of the connection). The first report is the
// offset the master starts streaming from; later ones acknowledge.
//
// Master → slave: a stream of frames.
//
//	+-------------------------+---------------------+-------------------------+
//	| phyOffset int64 (8)     | bodySize int32 (4)  | body (bodySize bytes)   |
//	+-------------------------+---------------------+-------------------------+
//
// body is the master's commit-log bytes [phyOffset, phyOffset+bodySize), a slice of one
// segment, not aligned to records. bodySize 0 is a heartbeat; its phyOffset is where
// the next body will start.
const (
	// ReportSize is the size of a slave's offset report.
	ReportSize = 8
	// FrameHeaderSize is the size of a frame header.
	FrameHeaderSize = 12
	// DefaultMaxFrame is RocketMQ's haTransferBatchSize, the largest body a master sends.
	DefaultMaxFrame = 32 << 10
)

// ErrProtocol means the peer sent bytes that are not valid HA protocol.
var ErrProtocol = errors.New("ha: protocol error")

// FrameHeader is the header of a master → slave frame.
type FrameHeader struct {
	Offset int64 // commit-log offset of the body's first byte
	Size   int32 // body length; 0 for a heartbeat
}

// PutFrameHeader encodes h into b[:FrameHeaderSize].
func PutFrameHeader(b []byte, h FrameHeader) {
	binary.BigEndian.PutUint64(b[0:8], uint64(h.Offset))
	binary.BigEndian.PutUint32(b[8:12], uint32(h.Size))
}

// DecodeFrameHeader decodes a frame header and checks it: a non-negative offset and a
// body size in [0, maxBody].
func DecodeFrameHeader(b []byte, maxBody int) (FrameHeader, error) {
	if len(b) < FrameHeaderSize {
		return FrameHeader{}, fmt.Errorf("%w: frame header of %d bytes", ErrProtocol, len(b))
	}
	h := FrameHeader{
		Offset: int64(binary.BigEndian.Uint64(b[0:8])),
		Size:   int32(binary.BigEndian.Uint32(b[8:12])),
	}
	switch {
	case h.Offset < 0:
		return FrameHeader{}, fmt.Errorf("%w: frame offset %d", ErrProtocol, h.Offset)
	case h.Size < 0 || int(h.Size) > maxBody:
		return FrameHeader{}, fmt.Errorf("%w: frame body of %d bytes (at most %d)", ErrProtocol, h.Size, maxBody)
	case h.Offset > (1<<63-1)-int64(h.Size):
		return FrameHeader{}, fmt.Errorf("%w: frame [%d, +%d) overflows", ErrProtocol, h.Offset, h.Size)
	}
	return h, nil
}

// ReadFrame reads one frame from r into buf (grown as needed) and returns its header and
// body (aliasing buf). hdr is scratch space of FrameHeaderSize bytes.
func ReadFrame(r io.Reader, hdr []byte, buf []byte, maxBody int) (FrameHeader, []byte, error) {
	if _, err := io.ReadFull(r, hdr[:FrameHeaderSize]); err != nil {
		return FrameHeader{}, buf, err
	}
	h, err := DecodeFrameHeader(hdr, maxBody)
	if err != nil {
		return FrameHeader{}, buf, err
	}
	if cap(buf) < int(h.Size) {
		buf = make([]byte, h.Size)
	}
	buf = buf[:h.Size]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // cut inside a frame
		}
		return FrameHeader{}, buf, err
	}
	return h, buf, nil
}

// PutReport encodes an offset report into b[:ReportSize].
func PutReport(b []byte, off int64) { binary.BigEndian.PutUint64(b, uint64(off)) }

// ReportDecoder decodes the slave → master stream, which arrives in arbitrary chunks.
type ReportDecoder struct {
	part [ReportSize]byte
	n    int // bytes of an incomplete report held in part
}

// Feed consumes a chunk and returns the last complete report it finished (ok false when
// none). A negative offset is a protocol error.
func (d *ReportDecoder) Feed(b []byte) (last int64, ok bool, err error) {
	for len(b) > 0 {
		c := copy(d.part[d.n:], b)
		d.n += c
		b = b[c:]
		if d.n < ReportSize {
			break
		}
		d.n = 0
		// Skip to the last complete report in the rest of the chunk.
		if whole := len(b) / ReportSize * ReportSize; whole > 0 {
			copy(d.part[:], b[whole-ReportSize:whole])
			b = b[whole:]
		}
		last, ok = int64(binary.BigEndian.Uint64(d.part[:])), true
		if last < 0 {
			return 0, false, fmt.Errorf("%w: offset report %d", ErrProtocol, last)
		}
	}
	return last, ok, nil
}

// Authentication and TLS (Ferry's additions; a RocketMQ slave or master knows neither).
//
// A master whose listener runs TLS (MasterOptions.TLS, the broker's tlsMode) tells the
// two apart by the first byte, as the broker port does: 0x16 starts a TLS handshake,
// after which everything below runs inside TLS; in enforcing mode any other first byte
// closes the connection. Plain or TLS, an authenticating slave (SlaveOptions.AccessKey
// set) then sends one hello before its first offset report:
//
//	+-------------+-------------+-------------------+--------------+
//	| magic (4)   | version (1) | timestamp int64   | nonce (16)   |
//	| FE 46 48 41 | 1           | (8, Unix ms)      | random       |
//	+-------------+-------------+-------------------+--------------+
//	| nameLen (1) | brokerName (nameLen bytes, UTF-8)                |
//	+-------------+--------------------------------------------------+
//	| keyLen (1)  | accessKey (keyLen bytes, UTF-8)                  |
//	+-------------+--------------------------------------------------+
//	| mac (32): HMAC-SHA256(secretKey, every byte of the hello before it) |
//	+--------------------------------------------------------------------+
//
// The magic's first byte 0xFE can start neither an offset report (it would be a
// negative offset) nor a TLS record. A master that requires authentication
// (MasterOptions.Auth, the broker's ACL) reads the hello within HandshakeTimeout and
// accepts it when the version is 1, brokerName is its own, the timestamp is within
// MaxClockSkew of its clock, the nonce was not used in that window (no replay), and
// Auth accepts the access key and MAC (acl.ACL.CheckReplication: an admin account).
// Otherwise, or when the connection starts with anything but a hello, it logs why and
// closes the connection without having sent a byte of its own. The master answers
// nothing to the hello itself: its first frame is the acceptance. A master that does not
// require authentication reads a hello and ignores it.
//
// Identity hello (controller mode, Ferry's). A slave whose role comes from the controller
// (SlaveOptions.Epoch > 0) always sends a hello, credentials or not, with another magic and
// its identity after the access key:
//
//	+-------------+-------------+-------------------+--------------+
//	| magic (4)   | version (1) | timestamp int64   | nonce (16)   |
//	| FE 46 48 49 | 1           | (8, Unix ms)      | random       |
//	+-------------+-------------+-------------------+--------------+
//	| nameLen (1) | brokerName  | keyLen (1) | accessKey            |
//	+-------------+-------------+------------+----------------------+
//	| brokerId int64 (8)        | epoch int32 (4)                   |
//	+---------------------------+-----------------------------------+
//	| mac (32): HMAC-SHA256(secretKey, every byte before it; an empty |
//	|           key and secret without credentials)                  |
//	+-----------------------------------------------------------------+
//
// brokerId (≥ 1) is the slave's id assigned by the controller and epoch (≥ 1) the master
// epoch it serves under. The signature is checked as a plain hello's when the master
// requires authentication; brokerName is always checked when the master knows its own.
// A master in controller mode (MasterOptions.Epoch > 0) admits only slaves with an
// identity hello of exactly its epoch: a higher epoch means the master itself is stale (it
// calls MasterOptions.OnStaleEpoch and refuses the slave), a lower one that the slave has
// not yet checked its log against the current epoch's history (refused). A master not in
// controller mode reads an identity hello as a plain one.
const (
	// HelloVersion is the hello's version.
	HelloVersion = 1
	// HelloNonceSize is the size of the hello's nonce.
	HelloNonceSize = 16
	// HelloMACSize is the size of the hello's MAC (HMAC-SHA256).
	HelloMACSize = 32
	// helloFixed is the size of the hello up to brokerName's length byte.
	helloFixed = 4 + 1 + 8 + HelloNonceSize
	// identitySize is the size of an identity hello's brokerId and epoch.
	identitySize = 8 + 4
	// MaxHelloSize bounds a hello (an identity hello included).
	MaxHelloSize = helloFixed + 1 + 255 + 1 + 255 + identitySize + HelloMACSize
)

// helloMagic starts a hello; identityMagic an identity hello.
var (
	helloMagic    = [4]byte{0xFE, 'F', 'H', 'A'}
	identityMagic = [4]byte{0xFE, 'F', 'H', 'I'}
)

// Hello is a slave's proof of an account and, in an identity hello, its identity.
type Hello struct {
	Version    byte
	Timestamp  int64 // Unix milliseconds
	Nonce      [HelloNonceSize]byte
	BrokerName string
	AccessKey  string
	// Identified marks an identity hello (controller mode), which carries BrokerID and
	// Epoch.
	Identified bool
	BrokerID   int64 // the slave's broker id, assigned by the controller (≥ 1)
	Epoch      int32 // the master epoch the slave serves under (≥ 1)
	MAC        [HelloMACSize]byte
}

// AppendHelloSigned appends the signed part of h (everything but the MAC) to dst.
func AppendHelloSigned(dst []byte, h *Hello) ([]byte, error) {
	if len(h.BrokerName) > 255 || len(h.AccessKey) > 255 {
		return dst, fmt.Errorf("%w: broker name (%d bytes) or access key (%d bytes) longer than 255",
			ErrProtocol, len(h.BrokerName), len(h.AccessKey))
	}
	if h.Identified && (h.BrokerID < 1 || h.Epoch < 1) {
		return dst, fmt.Errorf("%w: identity hello of broker id %d, epoch %d (both must be ≥ 1)", ErrProtocol, h.BrokerID, h.Epoch)
	}
	magic := helloMagic
	if h.Identified {
		magic = identityMagic
	}
	dst = append(dst, magic[:]...)
	dst = append(dst, h.Version)
	dst = binary.BigEndian.AppendUint64(dst, uint64(h.Timestamp))
	dst = append(dst, h.Nonce[:]...)
	dst = append(dst, byte(len(h.BrokerName)))
	dst = append(dst, h.BrokerName...)
	dst = append(dst, byte(len(h.AccessKey)))
	dst = append(dst, h.AccessKey...)
	if h.Identified {
		dst = binary.BigEndian.AppendUint64(dst, uint64(h.BrokerID))
		dst = binary.BigEndian.AppendUint32(dst, uint32(h.Epoch))
	}
	return dst, nil
}

// isHelloMagic reports whether b (4 bytes) starts a hello.
func isHelloMagic(b []byte) bool { return len(b) >= 4 && [4]byte(b[:4]) == helloMagic }

// isIdentityMagic reports whether b (4 bytes) starts an identity hello.
func isIdentityMagic(b []byte) bool { return len(b) >= 4 && [4]byte(b[:4]) == identityMagic }

// ReadHello reads the rest of a hello whose 4 magic bytes were read already, and returns
// it with its signed bytes (magic included).
func ReadHello(r io.Reader) (Hello, []byte, error) { return readHello(r, false) }

// ReadIdentityHello is ReadHello for an identity hello (its magic read already).
func ReadIdentityHello(r io.Reader) (Hello, []byte, error) { return readHello(r, true) }

// readHello reads a hello, an identity hello when identified.
func readHello(r io.Reader, identified bool) (Hello, []byte, error) {
	buf := make([]byte, 0, MaxHelloSize)
	if identified {
		buf = append(buf, identityMagic[:]...)
	} else {
		buf = append(buf, helloMagic[:]...)
	}
	read := func(n int) ([]byte, error) {
		start := len(buf)
		buf = buf[:start+n]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return nil, fmt.Errorf("ha: read hello: %w", err)
		}
		return buf[start:], nil
	}
	var h Hello
	b, err := read(helloFixed - 4 + 1)
	if err != nil {
		return h, nil, err
	}
	h.Version = b[0]
	if h.Version != HelloVersion {
		return h, nil, fmt.Errorf("%w: hello version %d (want %d)", ErrProtocol, h.Version, HelloVersion)
	}
	h.Timestamp = int64(binary.BigEndian.Uint64(b[1:9]))
	copy(h.Nonce[:], b[9:9+HelloNonceSize])
	nameLen := int(b[len(b)-1])
	if b, err = read(nameLen + 1); err != nil {
		return h, nil, err
	}
	h.BrokerName = string(b[:nameLen])
	keyLen := int(b[nameLen])
	if b, err = read(keyLen); err != nil {
		return h, nil, err
	}
	h.AccessKey = string(b)
	if identified {
		if b, err = read(identitySize); err != nil {
			return h, nil, err
		}
		h.Identified = true
		h.BrokerID = int64(binary.BigEndian.Uint64(b[:8]))
		h.Epoch = int32(binary.BigEndian.Uint32(b[8:]))
		if h.BrokerID < 1 || h.Epoch < 1 {
			return h, nil, fmt.Errorf("%w: identity hello of broker id %d, epoch %d (both must be ≥ 1)", ErrProtocol, h.BrokerID, h.Epoch)
		}
	}
	signed := buf
	if _, err := io.ReadFull(r, h.MAC[:]); err != nil {
		return h, nil, fmt.Errorf("ha: read hello MAC: %w", err)
	}
	return h, signed, nil
}

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

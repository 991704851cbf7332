package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Frame layout. These constants are part of the wire format.
//
//	 0               4   5           8
//	+---------------+---+-----------+----------------+--------------+
//	| length        | T | headerLen | header         | body         |
//	| int32 BE      |u8 | uint24 BE | headerLen B    | rest         |
//	+---------------+---+-----------+----------------+--------------+
//
// length counts everything after itself: 4 + headerLen + len(body). T is the
// SerializeType of the header. The length is checked against the configured maximum
// before anything is allocated for the frame.
const (
	// LengthFieldSize is the size of the leading length field.
	LengthFieldSize = 4
	// frameFixed is the size of the length field plus the type/headerLen word.
	frameFixed = 8
	// maxHeaderLen is the largest header the 24-bit field can describe.
	maxHeaderLen = 1<<24 - 1
	// DefaultMaxFrameSize is the default limit for the length field (16 MiB), as in RocketMQ.
	DefaultMaxFrameSize = 16 << 20
)

// Errors returned by the frame and header codecs. Callers test them with errors.Is.
var (
	// ErrFrameTooLarge means a frame's length field exceeds the configured maximum.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrMalformedFrame means a frame's length fields are inconsistent.
	ErrMalformedFrame = errors.New("remoting: malformed frame")
	// ErrUnknownSerializeType means byte 4 names no known header codec.
	ErrUnknownSerializeType = errors.New("remoting: unknown serialize type")
	// ErrMalformedHeader means a header could not be decoded by its codec.
	ErrMalformedHeader = errors.New("remoting: malformed header")
	// ErrHeaderTooLarge means an encoded header does not fit the 24-bit length field.
	ErrHeaderTooLarge = errors.New("remoting: header too large")
)

// ParseLength reads the length field at the start of b (which must hold at least 4 bytes)
// and checks it against maxFrame. It returns the number of bytes that follow the field.
func ParseLength(b []byte, maxFrame int) (int, error) {
	n := int(int32(binary.BigEndian.Uint32(b)))
	if n < frameFixed-LengthFieldSize {
		return 0, fmt.Errorf("%w: length field %d is below the minimum 4", ErrMalformedFrame, n)
	}
	if n > maxFrame {
		return 0, fmt.Errorf("%w: length field %d exceeds limit %d", ErrFrameTooLarge, n, maxFrame)
	}
	return n, nil
}

// Codec encodes and decodes frames with all three header codecs. It pools reusable msgpack
// state, is safe for concurrent use, and its zero value is ready to use.
type Codec struct {
	mp sync.Pool // of *msgpackState
}

// DecodeFrame decodes the bytes that follow a frame's length field. The returned Command
// aliases frame (its body and, where possible, its strings), so frame must not be reused.
func (c *Codec) DecodeFrame(frame []byte) (*Command, error) {
	return c.decodeFrameInto(frame, nil)
}

// decodeFrameInto is DecodeFrame into cmd, a zero Command (nil: a new one).
func (c *Codec) decodeFrameInto(frame []byte, cmd *Command) (*Command, error) {
	if len(frame) < frameFixed-LengthFieldSize {
		return nil, fmt.Errorf("%w: %d bytes cannot hold the header length", ErrMalformedFrame, len(frame))
	}
	word := binary.BigEndian.Uint32(frame)
	st := SerializeType(word >> 24)
	hlen := int(word & maxHeaderLen)
	if hlen > len(frame)-4 {
		return nil, fmt.Errorf("%w: header length %d exceeds frame length %d", ErrMalformedFrame, hlen, len(frame))
	}
	if cmd == nil {
		cmd = new(Command)
	}
	cmd.SerializeType = st
	header := frame[4 : 4+hlen]
	var err error
	switch st {
	case SerializeJSON:
		err = decodeJSONHeader(header, cmd)
	case SerializeRocketMQ:
		err = decodeBinaryHeader(header, cmd)
	case SerializeMsgpack:
		err = c.decodeMsgpackHeader(header, cmd)
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnknownSerializeType, st)
	}
	if err != nil {
		return nil, err
	}
	if body := frame[4+hlen:]; len(body) > 0 {
		cmd.Body = body[:len(body):len(body)]
	}
	return cmd, nil
}

// AppendFrame appends the whole frame for cmd (length field included) to dst, encoding the
// header with cmd.SerializeType.
func (c *Codec) AppendFrame(dst []byte, cmd *Command) ([]byte, error) {
	start := len(dst)
	dst, err := c.appendFrameHead(dst, cmd)
	if err != nil {
		return dst[:start], err
	}
	dst = append(dst, cmd.Body...)
	for _, p := range cmd.BodyVec {
		dst = append(dst, p...)
	}
	return dst, nil
}

// appendFrameHead appends the length fields and the header, with the length field already
// accounting for cmd's whole body (which the caller writes next).
func (c *Codec) appendFrameHead(dst []byte, cmd *Command) ([]byte, error) {
	if !cmd.SerializeType.valid() {
		return dst, fmt.Errorf("%w: %d", ErrUnknownSerializeType, cmd.SerializeType)
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	switch cmd.SerializeType {
	case SerializeJSON:
		dst = appendJSONHeader(dst, cmd)
	case SerializeRocketMQ:
		dst, err = appendBinaryHeader(dst, cmd)
	case SerializeMsgpack:
		dst, err = c.appendMsgpackHeader(dst, cmd)
	}
	if err != nil {
		return dst[:start], err
	}
	hlen := len(dst) - start - frameFixed
	if hlen > maxHeaderLen {
		return dst[:start], fmt.Errorf("%w: %d bytes", ErrHeaderTooLarge, hlen)
	}
	total := 4 + hlen + cmd.bodyLen()
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(cmd.SerializeType)<<24|uint32(hlen))
	return dst, nil
}

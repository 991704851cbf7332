package remoting

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// Msgpack header (serialize type 2), Ferry's native format. It is one msgpack array; the
// element order is part of the wire format:
//
//	[ code:int, language:int, version:int, opaque:int, flag:int, remark:str|nil, ext:map[str]str|nil ]
//
// Integers use msgpack's compact encodings. A decoder accepts longer arrays and skips the
// extra elements, so fields can be appended later without breaking old peers.
const msgpackFields = 7

// appendBuf is an io.Writer (and io.ByteWriter) that appends to a slice, so the msgpack
// encoder writes straight into the frame buffer.
type appendBuf struct{ b []byte }

func (w *appendBuf) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

func (w *appendBuf) WriteByte(c byte) error { w.b = append(w.b, c); return nil }

// msgpackState is reusable encoder and decoder state, pooled by Codec.
type msgpackState struct {
	w   appendBuf
	enc *msgpack.Encoder
	r   bytes.Reader
	dec *msgpack.Decoder
}

func newMsgpackState() *msgpackState {
	s := &msgpackState{}
	s.enc = msgpack.NewEncoder(&s.w)
	s.dec = msgpack.NewDecoder(&s.r)
	return s
}

// appendMsgpackHeader appends cmd's header as msgpack using pooled state from c.
func (c *Codec) appendMsgpackHeader(dst []byte, cmd *Command) ([]byte, error) {
	s := c.msgpackState()
	defer c.mp.Put(s)
	s.w.b = dst
	s.enc.Reset(&s.w)
	e := s.enc
	err := e.EncodeArrayLen(msgpackFields)
	for _, v := range [...]int64{int64(cmd.Code), int64(cmd.Language), int64(cmd.Version), int64(cmd.Opaque), int64(cmd.Flag)} {
		if err == nil {
			err = e.EncodeInt(v)
		}
	}
	if err == nil {
		err = e.EncodeString(cmd.Remark)
	}
	if err == nil {
		err = e.EncodeMapLen(len(cmd.ExtFields))
	}
	for _, f := range cmd.ExtFields {
		if err == nil {
			err = e.EncodeString(f.Key)
		}
		if err == nil {
			err = e.EncodeString(f.Value)
		}
	}
	out := s.w.b
	s.w.b = nil
	if err != nil {
		return dst, fmt.Errorf("remoting: msgpack header: %w", err)
	}
	return out, nil
}

// decodeMsgpackHeader decodes a msgpack header into cmd. Strings alias b.
func (c *Codec) decodeMsgpackHeader(b []byte, cmd *Command) error {
	s := c.msgpackState()
	defer func() {
		s.r.Reset(nil)
		c.mp.Put(s)
	}()
	s.r.Reset(b)
	s.dec.Reset(&s.r)
	d := mpDecoder{b: b, s: s}
	n, err := s.dec.DecodeArrayLen()
	if err != nil {
		return d.fail(err)
	}
	if n < msgpackFields {
		return fmt.Errorf("%w: msgpack header has %d fields, want %d", ErrMalformedHeader, n, msgpackFields)
	}
	var v int64
	if v, err = d.int(math.MinInt16, math.MaxInt16); err != nil {
		return err
	}
	cmd.Code = int16(v)
	if v, err = d.int(0, math.MaxUint8); err != nil {
		return err
	}
	cmd.Language = LanguageCode(v)
	if v, err = d.int(math.MinInt16, math.MaxInt16); err != nil {
		return err
	}
	cmd.Version = int16(v)
	if v, err = d.int(math.MinInt32, math.MaxInt32); err != nil {
		return err
	}
	cmd.Opaque = int32(v)
	if v, err = d.int(math.MinInt32, math.MaxInt32); err != nil {
		return err
	}
	cmd.Flag = int32(v)
	if cmd.Remark, err = d.str(); err != nil {
		return err
	}
	m, err := s.dec.DecodeMapLen()
	if err != nil {
		return d.fail(err)
	}
	if m > 0 {
		if m > len(b) {
			return fmt.Errorf("%w: msgpack ext map of %d entries exceeds header", ErrMalformedHeader, m)
		}
		cmd.ExtFields = cmd.extBuf[:0]
		for range m {
			k, err := d.str()
			if err != nil {
				return err
			}
			v, err := d.str()
			if err != nil {
				return err
			}
			cmd.ExtFields.Set(k, v)
		}
	}
	for range n - msgpackFields {
		if err := s.dec.Skip(); err != nil {
			return d.fail(err)
		}
	}
	if s.r.Len() != 0 {
		return fmt.Errorf("%w: %d trailing bytes after msgpack header", ErrMalformedHeader, s.r.Len())
	}
	return nil
}

func (c *Codec) msgpackState() *msgpackState {
	if s, ok := c.mp.Get().(*msgpackState); ok {
		return s
	}
	return newMsgpackState()
}

// mpDecoder reads typed values from the pooled decoder, aliasing strings into b.
type mpDecoder struct {
	b []byte
	s *msgpackState
}

func (d mpDecoder) fail(err error) error {
	return fmt.Errorf("%w: msgpack: %w", ErrMalformedHeader, err)
}

func (d mpDecoder) int(lo, hi int64) (int64, error) {
	v, err := d.s.dec.DecodeInt64()
	if err != nil {
		return 0, d.fail(err)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%w: msgpack integer %d out of range [%d, %d]", ErrMalformedHeader, v, lo, hi)
	}
	return v, nil
}

// str reads a string (or nil, as "") without copying it.
func (d mpDecoder) str() (string, error) {
	n, err := d.s.dec.DecodeBytesLen()
	if err != nil {
		return "", d.fail(err)
	}
	if n <= 0 {
		return "", nil
	}
	if n > d.s.r.Len() {
		return "", fmt.Errorf("%w: msgpack string of %d bytes exceeds header", ErrMalformedHeader, n)
	}
	pos := len(d.b) - d.s.r.Len()
	if _, err := d.s.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return "", d.fail(err)
	}
	return aliasString(d.b[pos : pos+n]), nil
}

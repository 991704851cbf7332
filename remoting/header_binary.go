package remoting

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// ROCKETMQ binary header (serialize type 1). These offsets are part of the wire format.
//
//	+------+----+---------+--------+------+-----------+--------+--------+------------------+
//	| code |lang| version | opaque | flag | remarkLen | remark | extLen | ext entries      |
//	| i16  | u8 | i16     | i32    | i32  | i32       | bytes  | i32    | extLen bytes     |
//	+------+----+---------+--------+------+-----------+--------+--------+------------------+
//
// Each ext entry is `i16 keyLen | key | i32 valLen | value`. All integers are big-endian.
// Java decodes a zero-length remark or value as null; Ferry decodes it as "".

// binaryFixed is the size of the header fields before the remark bytes.
const binaryFixed = 2 + 1 + 2 + 4 + 4 + 4

// appendBinaryHeader appends cmd's header in the ROCKETMQ binary format.
func appendBinaryHeader(dst []byte, cmd *Command) ([]byte, error) {
	dst = binary.BigEndian.AppendUint16(dst, uint16(cmd.Code))
	dst = append(dst, byte(cmd.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(cmd.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmd.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(cmd.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(cmd.Remark)))
	dst = append(dst, cmd.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for _, f := range cmd.ExtFields {
		k, v := f.Key, f.Value
		if len(k) > 1<<15-1 {
			return dst, fmt.Errorf("%w: ext key of %d bytes exceeds int16", ErrHeaderTooLarge, len(k))
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	binary.BigEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst, nil
}

// aliasString returns b as a string without copying; b must never be modified afterwards.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// decodeBinaryHeader decodes a ROCKETMQ binary header into cmd. Strings alias b.
func decodeBinaryHeader(b []byte, cmd *Command) error {
	if len(b) < binaryFixed {
		return fmt.Errorf("%w: binary header of %d bytes is shorter than %d", ErrMalformedHeader, len(b), binaryFixed)
	}
	cmd.Code = int16(binary.BigEndian.Uint16(b))
	cmd.Language = LanguageCode(b[2])
	cmd.Version = int16(binary.BigEndian.Uint16(b[3:]))
	cmd.Opaque = int32(binary.BigEndian.Uint32(b[5:]))
	cmd.Flag = int32(binary.BigEndian.Uint32(b[9:]))
	rlen := int64(int32(binary.BigEndian.Uint32(b[13:])))
	p := b[binaryFixed:]
	if rlen < 0 || rlen > int64(len(p)) {
		return fmt.Errorf("%w: remark length %d exceeds header", ErrMalformedHeader, rlen)
	}
	cmd.Remark = aliasString(p[:rlen])
	p = p[rlen:]
	if len(p) < 4 {
		return fmt.Errorf("%w: missing ext length", ErrMalformedHeader)
	}
	elen := int64(int32(binary.BigEndian.Uint32(p)))
	p = p[4:]
	if elen < 0 || elen != int64(len(p)) {
		return fmt.Errorf("%w: ext length %d does not match the %d bytes left", ErrMalformedHeader, elen, len(p))
	}
	if elen == 0 {
		return nil
	}
	cmd.ExtFields = cmd.extBuf[:0]
	for len(p) > 0 {
		if len(p) < 2 {
			return fmt.Errorf("%w: truncated ext key length", ErrMalformedHeader)
		}
		klen := int(int16(binary.BigEndian.Uint16(p)))
		p = p[2:]
		if klen < 0 || klen+4 > len(p) {
			return fmt.Errorf("%w: ext key length %d exceeds header", ErrMalformedHeader, klen)
		}
		k := aliasString(p[:klen])
		p = p[klen:]
		vlen := int64(int32(binary.BigEndian.Uint32(p)))
		p = p[4:]
		if vlen < 0 || vlen > int64(len(p)) {
			return fmt.Errorf("%w: ext value length %d exceeds header", ErrMalformedHeader, vlen)
		}
		cmd.ExtFields.Set(k, aliasString(p[:vlen]))
		p = p[vlen:]
	}
	return nil
}

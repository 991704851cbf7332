package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ferrymq/ferry/message"
)

// Batch body of SEND_BATCH_MESSAGE (320): the producer's messages laid end
// to end, each encoded as one item (RocketMQ MessageDecoder.encodeMessage).
// All integers are big-endian. These constants are part of the format.
//
//	offset 0        4        8        12       16       20              20+B      22+B
//	       +--------+--------+--------+--------+--------+---------------+---------+------------------+
//	       | TOTAL  | MAGIC  | BODY   | FLAG   | BODY   | BODY          | PROPS   | PROPERTIES       |
//	       | SIZE   |        | CRC    |        | LEN B  | (B bytes)     | LEN P   | (P bytes)        |
//	       | int32  | int32  | int32  | int32  | int32  |               | uint16  |                  |
//	       +--------+--------+--------+--------+--------+---------------+---------+------------------+
//	       |<------------------------------ TOTAL SIZE = 22 + B + P ----------------------------->|
//
// TOTAL SIZE counts the whole item, itself included: it is at least 22
// (BatchItemOverhead) and must equal 22 + B + P exactly. MAGIC and BODY CRC
// are ignored on decode; clients write 0, and so does AppendBatchItem. FLAG
// is the message's user flag, stored verbatim. B is signed and must be ≥ 0
// and fit the item. P is read unsigned (as Ferry's broker always has), but
// encoders write at most 32767 (MaxBatchPropertiesLength) because Java reads
// it as a signed short. PROPERTIES is the message properties encoding (key
// 0x01 value 0x02 …).
//
// Example (Go client, body "hi", TAGS=A):
//
//	0000001f 00000000 00000000 00000000 00000002 6869 0007 54414753014102
//
// The header is the V2 send header with batch=true; every item becomes one
// record of the header's topic and queue, with its own flag, body and
// properties.
const (
	// BatchItemOverhead is the size of an item with an empty body and no
	// properties: five int32 fields and the uint16 properties length.
	BatchItemOverhead = 22
	// MaxBatchPropertiesLength is the longest properties AppendBatchItem
	// writes (a signed 16-bit length for Java peers).
	MaxBatchPropertiesLength = math.MaxInt16

	batchPosTotalSize = 0
	batchPosMagic     = 4
	batchPosBodyCRC   = 8
	batchPosFlag      = 12
	batchPosBodyLen   = 16
	batchPosBody      = 20
	batchPropsLenSize = 2
)

// Batch decoding errors. A [*BatchError] wraps one of them and ErrBadBody.
var (
	// ErrBatchTruncated means the body ends inside an item: fewer than
	// BatchItemOverhead bytes are left, or the item's total size runs past
	// the end of the body.
	ErrBatchTruncated = errors.New("protocol: batch item truncated")
	// ErrBatchBadLength means an item's total size is below
	// BatchItemOverhead, its body length is negative or larger than the
	// item, or the total size disagrees with the body and properties
	// lengths.
	ErrBatchBadLength = errors.New("protocol: batch item length out of range")
)

// BatchError describes a malformed batch item. errors.Is sees both Err
// (ErrBatchTruncated or ErrBatchBadLength) and ErrBadBody.
type BatchError struct {
	Index  int    // item number, from 0
	Offset int    // byte offset of the item in the body
	Left   int    // bytes of the body from Offset on
	Field  string // "item" (too few bytes for a header), "totalSize", "bodyLength" or "propertiesLength"
	Value  int64  // the offending value (for "item": Left)
	Err    error  // ErrBatchTruncated or ErrBatchBadLength
}

// Error implements error.
func (e *BatchError) Error() string {
	return fmt.Sprintf("%v: item %d at byte %d (%d bytes left): %s %d", e.Err, e.Index, e.Offset, e.Left, e.Field, e.Value)
}

// Unwrap returns Err and ErrBadBody.
func (e *BatchError) Unwrap() []error { return []error{e.Err, ErrBadBody} }

// BatchItem is one message of a batch body. A decoded item's slices alias
// the body (with capacity limited to their length); encoding reads them.
type BatchItem struct {
	Flag       int32
	Body       []byte
	Properties []byte
}

// BatchReader iterates over the items of a batch body without allocating:
//
//	r := protocol.NewBatchReader(body)
//	for r.Next() {
//		it := r.Item()
//		…
//	}
//	if err := r.Err(); err != nil { … }
//
// An empty body yields no items and no error; whether that is acceptable is
// the caller's decision (Ferry's broker answers MESSAGE_ILLEGAL).
type BatchReader struct {
	body []byte
	off  int
	n    int
	item BatchItem
	err  error
}

// NewBatchReader returns a reader over body. The items alias body.
func NewBatchReader(body []byte) BatchReader {
	return BatchReader{body: body}
}

// Next advances to the next item and reports whether there is one. It
// returns false at the end of the body and after the first error.
func (r *BatchReader) Next() bool {
	if r.err != nil || r.off >= len(r.body) {
		return false
	}
	p := r.body[r.off:]
	if len(p) < BatchItemOverhead {
		return r.fail("item", int64(len(p)), ErrBatchTruncated)
	}
	size := int64(int32(binary.BigEndian.Uint32(p[batchPosTotalSize:])))
	if size < BatchItemOverhead {
		return r.fail("totalSize", size, ErrBatchBadLength)
	}
	if size > int64(len(p)) {
		return r.fail("totalSize", size, ErrBatchTruncated)
	}
	blen := int64(int32(binary.BigEndian.Uint32(p[batchPosBodyLen:])))
	if blen < 0 || BatchItemOverhead+blen > size {
		return r.fail("bodyLength", blen, ErrBatchBadLength)
	}
	propsAt := batchPosBody + int(blen)
	plen := int64(binary.BigEndian.Uint16(p[propsAt:]))
	if BatchItemOverhead+blen+plen != size {
		return r.fail("propertiesLength", plen, ErrBatchBadLength)
	}
	end := int(size)
	r.item = BatchItem{
		Flag:       int32(binary.BigEndian.Uint32(p[batchPosFlag:])),
		Body:       p[batchPosBody:propsAt:propsAt],
		Properties: p[propsAt+batchPropsLenSize : end : end],
	}
	r.off += end
	r.n++
	return true
}

func (r *BatchReader) fail(field string, v int64, err error) bool {
	r.err = &BatchError{Index: r.n, Offset: r.off, Left: len(r.body) - r.off, Field: field, Value: v, Err: err}
	r.item = BatchItem{}
	return false
}

// Item returns the item the last successful Next decoded.
func (r *BatchReader) Item() BatchItem { return r.item }

// Err returns the [*BatchError] that stopped the reader, or nil.
func (r *BatchReader) Err() error { return r.err }

// Count returns how many items Next has returned so far.
func (r *BatchReader) Count() int { return r.n }

// CountBatchItems checks a whole batch body and returns its number of
// items, or the first item's error.
func CountBatchItems(body []byte) (int, error) {
	r := NewBatchReader(body)
	for r.Next() {
	}
	return r.n, r.err
}

// BatchItemSize returns the encoded size of an item with the given body and
// properties lengths.
func BatchItemSize(bodyLen, propertiesLen int) int {
	return BatchItemOverhead + bodyLen + propertiesLen
}

// AppendBatchItem appends the encoding of it to dst, with magic and body CRC
// 0 like the clients. Properties longer than MaxBatchPropertiesLength (error
// wrapping message.ErrPropertiesTooLong) or an item larger than a signed
// 32-bit size (message.ErrBodyTooLarge) are rejected; both errors also wrap
// ErrBadBody. dst is returned unchanged on error.
func AppendBatchItem(dst []byte, it BatchItem) ([]byte, error) {
	if len(it.Properties) > MaxBatchPropertiesLength {
		return dst, fmt.Errorf("%w: batch item: %w: %d bytes, at most %d",
			ErrBadBody, message.ErrPropertiesTooLong, len(it.Properties), MaxBatchPropertiesLength)
	}
	size := int64(BatchItemOverhead) + int64(len(it.Body)) + int64(len(it.Properties))
	if size > math.MaxInt32 {
		return dst, fmt.Errorf("%w: batch item: %w: item of %d bytes exceeds %d",
			ErrBadBody, message.ErrBodyTooLarge, size, math.MaxInt32)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	dst = binary.BigEndian.AppendUint32(dst, 0) // magic, ignored
	dst = binary.BigEndian.AppendUint32(dst, 0) // body CRC, ignored
	dst = binary.BigEndian.AppendUint32(dst, uint32(it.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(it.Body)))
	dst = append(dst, it.Body...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(it.Properties)))
	return append(dst, it.Properties...), nil
}

// EncodeBatch encodes items as a SEND_BATCH_MESSAGE body. Errors are those
// of AppendBatchItem, naming the item.
func EncodeBatch(items []BatchItem) ([]byte, error) {
	n := 0
	for _, it := range items {
		n += BatchItemSize(len(it.Body), len(it.Properties))
	}
	out := make([]byte, 0, n)
	for i, it := range items {
		var err error
		if out, err = AppendBatchItem(out, it); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
	}
	return out, nil
}

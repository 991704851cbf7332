package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"slices"
)

// Magic codes at byte 4 of a record. They are part of the on-disk format.
const (
	// MagicV1 marks a V1 record (1-byte topic length). Ferry writes only V1,
	// the layout every 4.x client understands.
	MagicV1 uint32 = 0xDAA320A7
	// MagicV2 marks a V2 record (2-byte topic length), written by RocketMQ
	// 5.1+ for topics longer than 127 bytes. Ferry does not read or write V2.
	MagicV2 uint32 = 0xDAA320AB
	// MagicBlank marks the blank filler that pads the end of a commit-log
	// segment: TOTALSIZE = bytes left in the segment, then this magic; the
	// rest of the segment is not meaningful.
	MagicBlank uint32 = 0xCBD43194
	// MagicQuarantine is Ferry's own: it marks a damaged range of a commit-log segment
	// that recovery set aside (TOTALSIZE = the range's length, at least 8, never past
	// the segment end; then this magic; the rest of the range is the damaged bytes,
	// kept as found). Readers skip the range as they skip a blank filler. RocketMQ
	// does not know it: a store with quarantined ranges is Ferry's alone.
	MagicQuarantine uint32 = 0xFE44A7E1
)

// Size limits of the V1 format. They are part of the on-disk format, except
// DefaultMaxBodySize, which is the broker's default policy.
const (
	// MinRecordSize is the size of a V1 record with IPv4 born and store hosts
	// and empty body, topic and properties: the fixed overhead.
	MinRecordSize = 91
	// IPv6HostExtra is the extra size of each IPv6 host (16-byte instead of
	// 4-byte address).
	IPv6HostExtra = 12
	// BlankHeaderSize is the size of the blank filler header (TOTALSIZE and
	// MagicBlank).
	BlankHeaderSize = 8
	// MaxTopicLength is the longest topic a V1 record holds: its length byte
	// is read as a signed byte by Java.
	MaxTopicLength = 127
	// MaxPropertiesLength is the longest encoded properties a record holds:
	// the length is a signed 16-bit integer.
	MaxPropertiesLength = math.MaxInt16
	// MaxRecordSize is the largest record TOTALSIZE (a signed 32-bit integer)
	// can describe.
	MaxRecordSize = math.MaxInt32
	// DefaultMaxBodySize is the default largest stored body (RocketMQ
	// maxMessageSize, 4 MiB). Brokers may configure another value; see
	// Record.Validate.
	DefaultMaxBodySize = 4 << 20
)

// Fixed byte positions inside a record, used to patch fields in place. They
// are part of the on-disk format. Fields after the born host move when the
// born host is IPv6; see StoreTimestampPos.
const (
	// PosTotalSize is the position of TOTALSIZE (int32).
	PosTotalSize = 0
	// PosMagic is the position of the magic code (uint32).
	PosMagic = 4
	// PosBodyCRC is the position of BODYCRC (int32, masked CRC-32).
	PosBodyCRC = 8
	// PosQueueID is the position of QUEUEID (int32).
	PosQueueID = 12
	// PosFlag is the position of FLAG (int32).
	PosFlag = 16
	// PosQueueOffset is the position of QUEUEOFFSET (int64), patched by the
	// store under its append lock.
	PosQueueOffset = 20
	// PosPhysicalOffset is the position of PHYSICALOFFSET (int64), patched
	// by the store under its append lock.
	PosPhysicalOffset = 28
	// PosSysFlag is the position of SYSFLAG (int32).
	PosSysFlag = 36
	// PosBornTimestamp is the position of BORNTIMESTAMP (int64 ms).
	PosBornTimestamp = 40
	// PosBornHost is the position of BORNHOST: a 4- or 16-byte IP, then an
	// int32 port.
	PosBornHost = 48
)

// Record is one V1 commit-log record, the unit of storage and of the pull
// wire format.
//
// A Record produced by DecodeRecord aliases the decoded buffer: Body, Topic
// and Properties point into it (with capacity clipped to their length), so
// they are only valid as long as that buffer is, and must be copied before
// the buffer is reused or unmapped.
type Record struct {
	// QueueID is the queue id within the topic.
	QueueID int32
	// Flag is the producer's opaque user flag.
	Flag int32
	// QueueOffset is the logical offset of the record in its topic-queue (0
	// for prepared and rolled-back transactional records).
	QueueOffset int64
	// PhysicalOffset is the commit-log offset of the record itself.
	PhysicalOffset int64
	// SysFlag holds the SysFlag* bits. On encode its IPv6 host bits are
	// ignored and derived from BornHost and StoreHost instead.
	SysFlag int32
	// BornTimestamp is the producer's timestamp in Unix milliseconds.
	BornTimestamp int64
	// BornHost is the producer's address. An IPv6 address (including an
	// IPv4-mapped one) is encoded in 16 bytes and sets SysFlagBornHostV6; an
	// IPv4 address is encoded in 4 bytes. The zero AddrPort encodes as
	// 0.0.0.0:0. Zones are dropped.
	BornHost netip.AddrPort
	// StoreTimestamp is the broker's store time in Unix milliseconds.
	StoreTimestamp int64
	// StoreHost is the broker's address, encoded like BornHost (bit
	// SysFlagStoreHostV6).
	StoreHost netip.AddrPort
	// ReconsumeTimes is the number of redeliveries so far.
	ReconsumeTimes int32
	// PreparedTxOffset is, for a committed transactional message, the
	// commit-log offset of its half message; otherwise 0.
	PreparedTxOffset int64
	// Body is the stored body (compressed if SysFlagCompressed is set).
	Body []byte
	// Topic is the topic name, at most MaxTopicLength bytes.
	Topic []byte
	// Properties is the raw encoded properties (see ParseProperties), at most
	// MaxPropertiesLength bytes.
	Properties []byte
	// BodyCRC is the stored masked body CRC. It is set by decoding and
	// ignored by encoding, which always writes BodyCRC(Body).
	BodyCRC int32
	// StoreSize is the stored TOTALSIZE. It is set by decoding and ignored by
	// encoding, which always writes Size().
	StoreSize int32
}

// BodyCRC returns the BODYCRC of body: IEEE CRC-32 masked with 0x7FFFFFFF.
func BodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// hostIPLen is the encoded length of a host address: 16 for IPv6 (including
// IPv4-mapped IPv6), else 4.
func hostIPLen(a netip.Addr) int {
	if a.Is6() {
		return 16
	}
	return 4
}

// hostFlags returns the IPv6 sysflag bits matching the record's hosts.
func (r *Record) hostFlags() int32 {
	var f int32
	if r.BornHost.Addr().Is6() {
		f |= SysFlagBornHostV6
	}
	if r.StoreHost.Addr().Is6() {
		f |= SysFlagStoreHostV6
	}
	return f
}

// Size returns the encoded size of the record: MinRecordSize plus the body,
// topic and properties lengths, plus IPv6HostExtra per IPv6 host.
func (r *Record) Size() int {
	return MinRecordSize - 8 + hostIPLen(r.BornHost.Addr()) + hostIPLen(r.StoreHost.Addr()) +
		len(r.Body) + len(r.Topic) + len(r.Properties)
}

// checkFormat reports limits the V1 format itself imposes.
func (r *Record) checkFormat() error {
	if len(r.Topic) > MaxTopicLength {
		return fmt.Errorf("%w: %d bytes, max %d", ErrTopicTooLong, len(r.Topic), MaxTopicLength)
	}
	if len(r.Properties) > MaxPropertiesLength {
		return fmt.Errorf("%w: %d bytes, max %d", ErrPropertiesTooLong, len(r.Properties), MaxPropertiesLength)
	}
	if int64(len(r.Body)) > MaxRecordSize-int64(r.Size()-len(r.Body)) {
		return fmt.Errorf("%w: %d bytes do not fit a record", ErrBodyTooLarge, len(r.Body))
	}
	return nil
}

// Validate checks the record against the format limits and the broker policy:
// a non-empty topic of at most MaxTopicLength bytes, properties of at most
// MaxPropertiesLength bytes and a body of at most maxBodySize bytes
// (DefaultMaxBodySize if maxBodySize <= 0). EncodeTo checks only the format
// limits.
func (r *Record) Validate(maxBodySize int) error {
	if len(r.Topic) == 0 {
		return ErrTopicEmpty
	}
	if err := r.checkFormat(); err != nil {
		return err
	}
	if maxBodySize <= 0 {
		maxBodySize = DefaultMaxBodySize
	}
	if len(r.Body) > maxBodySize {
		return fmt.Errorf("%w: %d bytes, max %d", ErrBodyTooLarge, len(r.Body), maxBodySize)
	}
	return nil
}

// V1 record layout. All integers are big-endian and signed. B is the born
// host address length and S the store host address length: 4, or 16 when
// SysFlag has SysFlagBornHostV6 / SysFlagStoreHostV6. L, T and P are the
// body, topic and properties lengths. These positions and sizes are part of
// the on-disk format (and of the pull wire format): do not change them.
//
//	 0        4        8        12       16       20                28
//	+--------+--------+--------+--------+--------+-----------------+-----------------+
//	| TOTAL  | MAGIC  | BODY   | QUEUE  | FLAG   | QUEUE OFFSET    | PHYSICAL OFFSET |
//	| SIZE   | V1     | CRC    | ID     |        | int64           | int64           |
//	+--------+--------+--------+--------+--------+-----------------+-----------------+
//	 36       40                48                 48+B     52+B
//	+--------+-----------------+------------------+--------+-----------------+
//	| SYS    | BORN TIMESTAMP  | BORN HOST IP     | BORN   | STORE TIMESTAMP |
//	| FLAG   | int64 (ms)      | B bytes          | PORT   | int64 (ms)      |
//	+--------+-----------------+------------------+--------+-----------------+
//	 60+B               60+B+S   64+B+S   68+B+S            76+B+S
//	+------------------+--------+--------+-----------------+--------+
//	| STORE HOST IP    | STORE  | RECON- | PREPARED TX     | BODY   |
//	| S bytes          | PORT   | SUMES  | OFFSET int64    | LEN L  |
//	+------------------+--------+--------+-----------------+--------+
//	 80+B+S    80+B+S+L  81+B+S+L   81+B+S+L+T  83+B+S+L+T
//	+---------+---------+----------+-----------+------------+
//	| BODY    | TOPIC   | TOPIC    | PROPS     | PROPERTIES |
//	| L bytes | LEN (T) | T bytes  | LEN int16 | P bytes    |
//	+---------+---------+----------+-----------+------------+
//
// TOTALSIZE = 83 + B + S + L + T + P (91 + L + T + P with IPv4 hosts).
// BODY CRC = CRC-32 (IEEE) of the body & 0x7FFFFFFF. The topic length is one
// byte holding 0..127 (Java reads it signed). The blank filler that ends a
// segment is only TOTALSIZE (bytes left in the segment) and MagicBlank.

// EncodeTo writes the record as V1 into dst and returns the number of bytes
// written, Size(). It computes BODYCRC from Body and TOTALSIZE from the
// lengths, derives the IPv6 sysflag bits from the hosts, and does not
// allocate: the store encodes straight into a mapped segment with it. It
// fails with ErrTopicTooLong, ErrPropertiesTooLong or ErrBodyTooLarge when
// the record does not fit the format, and with ErrShortBuffer when dst is
// shorter than Size(); dst is not modified on error.
func (r *Record) EncodeTo(dst []byte) (int, error) {
	if err := r.checkFormat(); err != nil {
		return 0, err
	}
	size := r.Size()
	if len(dst) < size {
		return 0, fmt.Errorf("%w: need %d bytes, have %d", ErrShortBuffer, size, len(dst))
	}
	d := dst[:size:size]
	be := binary.BigEndian
	be.PutUint32(d[PosTotalSize:], uint32(size))
	be.PutUint32(d[PosMagic:], MagicV1)
	be.PutUint32(d[PosBodyCRC:], uint32(BodyCRC(r.Body)))
	be.PutUint32(d[PosQueueID:], uint32(r.QueueID))
	be.PutUint32(d[PosFlag:], uint32(r.Flag))
	be.PutUint64(d[PosQueueOffset:], uint64(r.QueueOffset))
	be.PutUint64(d[PosPhysicalOffset:], uint64(r.PhysicalOffset))
	sysFlag := r.SysFlag&^(SysFlagBornHostV6|SysFlagStoreHostV6) | r.hostFlags()
	be.PutUint32(d[PosSysFlag:], uint32(sysFlag))
	be.PutUint64(d[PosBornTimestamp:], uint64(r.BornTimestamp))
	p := putHost(d, PosBornHost, r.BornHost)
	be.PutUint64(d[p:], uint64(r.StoreTimestamp))
	p = putHost(d, p+8, r.StoreHost)
	be.PutUint32(d[p:], uint32(r.ReconsumeTimes))
	be.PutUint64(d[p+4:], uint64(r.PreparedTxOffset))
	be.PutUint32(d[p+12:], uint32(len(r.Body)))
	p += 16
	p += copy(d[p:], r.Body)
	d[p] = byte(len(r.Topic))
	p++
	p += copy(d[p:], r.Topic)
	be.PutUint16(d[p:], uint16(len(r.Properties)))
	copy(d[p+2:], r.Properties)
	return size, nil
}

// putHost writes h's address (4 or 16 bytes) and port at d[p:] and returns
// the position after it.
func putHost(d []byte, p int, h netip.AddrPort) int {
	a := h.Addr()
	switch {
	case a.Is6():
		ip := a.As16()
		p += copy(d[p:], ip[:])
	case a.Is4():
		ip := a.As4()
		p += copy(d[p:], ip[:])
	default: // zero Addr
		clear(d[p : p+4])
		p += 4
	}
	binary.BigEndian.PutUint32(d[p:], uint32(h.Port()))
	return p + 4
}

// AppendTo appends the V1 encoding of the record to dst and returns the
// extended slice. Errors are those of EncodeTo (except ErrShortBuffer).
func (r *Record) AppendTo(dst []byte) ([]byte, error) {
	if err := r.checkFormat(); err != nil {
		return dst, err
	}
	size := r.Size()
	dst = slices.Grow(dst, size)
	n, err := r.EncodeTo(dst[len(dst) : len(dst)+size])
	return dst[:len(dst)+n], err
}

// DecodeRecord decodes the V1 record at the start of b without copying: the
// returned Record's Body, Topic and Properties alias b. It returns the record
// and its size n (so the next record starts at b[n:]).
//
// Every length is bounds-checked, so no input makes it panic. It fails with
// ErrTruncated if b is shorter than the record (a torn tail), ErrBlank on a
// blank filler, ErrBadMagic on any other magic (including V2),
// ErrSizeMismatch if TOTALSIZE disagrees with the size recomputed from the
// length fields, and ErrCorrupt on impossible field values. On
// ErrSizeMismatch and ErrCorrupt, n is TOTALSIZE when that lies between
// MinRecordSize and len(b), so a scanner may skip the damaged record as
// RocketMQ's dispatcher does; on every other error n is 0.
//
// The body CRC is not verified; call Record.VerifyBodyCRC for that.
func DecodeRecord(b []byte) (Record, int, error) {
	var r Record
	n, err := r.Decode(b)
	return r, n, err
}

// Decode is DecodeRecord into r, for callers that reuse a Record. On error r
// is reset to the zero Record.
func (r *Record) Decode(b []byte) (int, error) {
	n, err := r.decode(b)
	if err != nil {
		*r = Record{}
	}
	return n, err
}

func (r *Record) decode(b []byte) (int, error) {
	if len(b) < BlankHeaderSize {
		return 0, fmt.Errorf("%w: %d bytes, the header needs %d", ErrTruncated, len(b), BlankHeaderSize)
	}
	be := binary.BigEndian
	total := int32(be.Uint32(b[PosTotalSize:]))
	switch magic := be.Uint32(b[PosMagic:]); magic {
	case MagicV1:
	case MagicBlank:
		return 0, fmt.Errorf("%w (declared size %d)", ErrBlank, total)
	case MagicV2:
		return 0, fmt.Errorf("%w: V2 magic %#08x is not supported", ErrBadMagic, magic)
	default:
		return 0, fmt.Errorf("%w: %#08x", ErrBadMagic, magic)
	}
	if total < MinRecordSize {
		return 0, fmt.Errorf("%w: TOTALSIZE %d is below the minimum %d", ErrSizeMismatch, total, MinRecordSize)
	}
	n := int(total)
	if n > len(b) {
		return 0, fmt.Errorf("%w: TOTALSIZE %d, %d bytes available", ErrTruncated, total, len(b))
	}
	rec := b[:n:n]

	r.StoreSize = total
	r.BodyCRC = int32(be.Uint32(rec[PosBodyCRC:]))
	r.QueueID = int32(be.Uint32(rec[PosQueueID:]))
	r.Flag = int32(be.Uint32(rec[PosFlag:]))
	r.QueueOffset = int64(be.Uint64(rec[PosQueueOffset:]))
	r.PhysicalOffset = int64(be.Uint64(rec[PosPhysicalOffset:]))
	r.SysFlag = int32(be.Uint32(rec[PosSysFlag:]))
	r.BornTimestamp = int64(be.Uint64(rec[PosBornTimestamp:]))

	bornLen, storeLen := 4, 4
	if r.SysFlag&SysFlagBornHostV6 != 0 {
		bornLen = 16
	}
	if r.SysFlag&SysFlagStoreHostV6 != 0 {
		storeLen = 16
	}
	// fixed = everything but body, topic and properties.
	fixed := MinRecordSize - 8 + bornLen + storeLen
	if n < fixed {
		return n, fmt.Errorf("%w: TOTALSIZE %d is below the %d fixed bytes", ErrSizeMismatch, total, fixed)
	}

	var err error
	p := PosBornHost
	if r.BornHost, p, err = readHost(rec, p, bornLen); err != nil {
		return n, fmt.Errorf("born host: %w", err)
	}
	r.StoreTimestamp = int64(be.Uint64(rec[p:]))
	if r.StoreHost, p, err = readHost(rec, p+8, storeLen); err != nil {
		return n, fmt.Errorf("store host: %w", err)
	}
	r.ReconsumeTimes = int32(be.Uint32(rec[p:]))
	r.PreparedTxOffset = int64(be.Uint64(rec[p+4:]))
	bodyLen := int32(be.Uint32(rec[p+12:]))
	p += 16
	if bodyLen < 0 {
		return n, fmt.Errorf("%w: negative body length %d", ErrCorrupt, bodyLen)
	}
	if int(bodyLen) > n-fixed {
		return n, fmt.Errorf("%w: body length %d exceeds TOTALSIZE %d", ErrSizeMismatch, bodyLen, total)
	}
	// Empty fields are set too (to nil): a reused Record must not keep the previous
	// record's body, topic or properties.
	r.Body = nil
	if bodyLen > 0 {
		r.Body = rec[p : p+int(bodyLen) : p+int(bodyLen)]
		p += int(bodyLen)
	}
	// p <= n-3 here: fixed counts the topic and properties length fields.
	topicLen := int(rec[p])
	p++
	if topicLen > MaxTopicLength {
		return n, fmt.Errorf("%w: topic length %d exceeds %d", ErrCorrupt, topicLen, MaxTopicLength)
	}
	if p+topicLen+2 > n {
		return n, fmt.Errorf("%w: topic length %d exceeds TOTALSIZE %d", ErrSizeMismatch, topicLen, total)
	}
	r.Topic = nil
	if topicLen > 0 {
		r.Topic = rec[p : p+topicLen : p+topicLen]
		p += topicLen
	}
	propsLen := int(int16(be.Uint16(rec[p:])))
	p += 2
	if propsLen < 0 {
		return n, fmt.Errorf("%w: negative properties length %d", ErrCorrupt, propsLen)
	}
	if p+propsLen != n {
		return n, fmt.Errorf("%w: TOTALSIZE %d, fields add up to %d", ErrSizeMismatch, total, p+propsLen)
	}
	r.Properties = nil
	if propsLen > 0 {
		r.Properties = rec[p:n:n]
	}
	return n, nil
}

// readHost reads an ipLen-byte address and an int32 port at rec[p:]; the
// caller has checked the bounds.
func readHost(rec []byte, p, ipLen int) (netip.AddrPort, int, error) {
	var a netip.Addr
	if ipLen == 16 {
		a = netip.AddrFrom16([16]byte(rec[p : p+16]))
	} else {
		a = netip.AddrFrom4([4]byte(rec[p : p+4]))
	}
	port := int32(binary.BigEndian.Uint32(rec[p+ipLen:]))
	if port < 0 || port > math.MaxUint16 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: port %d out of range", ErrCorrupt, port)
	}
	return netip.AddrPortFrom(a, uint16(port)), p + ipLen + 4, nil
}

// VerifyBodyCRC reports, as ErrCRC, whether the stored BodyCRC differs from
// the CRC of Body. Recovery uses it on every record it scans.
func (r *Record) VerifyBodyCRC() error {
	if got := BodyCRC(r.Body); got != r.BodyCRC {
		return fmt.Errorf("%w: stored %#08x, computed %#08x", ErrCRC, uint32(r.BodyCRC), uint32(got))
	}
	return nil
}

// Property looks key up in the record's raw properties without allocating;
// see LookupProperty.
func (r *Record) Property(key string) ([]byte, bool) {
	return LookupProperty(r.Properties, key)
}

// PeekHeader reads TOTALSIZE and the magic code at the start of b without
// validating them. It fails with ErrTruncated when b is shorter than
// BlankHeaderSize.
func PeekHeader(b []byte) (totalSize int32, magic uint32, err error) {
	if len(b) < BlankHeaderSize {
		return 0, 0, fmt.Errorf("%w: %d bytes, the header needs %d", ErrTruncated, len(b), BlankHeaderSize)
	}
	return int32(binary.BigEndian.Uint32(b[PosTotalSize:])), binary.BigEndian.Uint32(b[PosMagic:]), nil
}

// QuarantineSize returns the length of the quarantined range b starts with, or 0 when b
// does not start with a quarantine header (MagicQuarantine and a TOTALSIZE of at least 8
// that fits in b).
func QuarantineSize(b []byte) int {
	if len(b) < BlankHeaderSize || binary.BigEndian.Uint32(b[PosMagic:]) != MagicQuarantine {
		return 0
	}
	n := int64(binary.BigEndian.Uint32(b[PosTotalSize:]))
	if n < BlankHeaderSize || n > int64(len(b)) {
		return 0
	}
	return int(n)
}

// EncodeQuarantine writes the 8-byte quarantine header of an n-byte range at the start
// of b.
func EncodeQuarantine(b []byte, n int) {
	binary.BigEndian.PutUint32(b[PosTotalSize:], uint32(n))
	binary.BigEndian.PutUint32(b[PosMagic:], MagicQuarantine)
}

// IsBlank reports whether b starts with a blank filler header (MagicBlank).
func IsBlank(b []byte) bool {
	return len(b) >= BlankHeaderSize && binary.BigEndian.Uint32(b[PosMagic:]) == MagicBlank
}

// EncodeBlank writes the 8-byte blank filler header that pads the rest of a
// segment: TOTALSIZE = totalSize (the bytes left in the segment, at least
// BlankHeaderSize) and MagicBlank. It returns BlankHeaderSize, or
// ErrShortBuffer when dst or totalSize is below BlankHeaderSize.
func EncodeBlank(dst []byte, totalSize int) (int, error) {
	if len(dst) < BlankHeaderSize || totalSize < BlankHeaderSize || totalSize > MaxRecordSize {
		return 0, fmt.Errorf("%w: blank of %d bytes into %d bytes", ErrShortBuffer, totalSize, len(dst))
	}
	binary.BigEndian.PutUint32(dst[PosTotalSize:], uint32(totalSize))
	binary.BigEndian.PutUint32(dst[PosMagic:], MagicBlank)
	return BlankHeaderSize, nil
}

// StoreTimestampPos returns the byte position of STORETIMESTAMP in a record
// with the given sysflag: 56, or 68 when the born host is IPv6.
func StoreTimestampPos(sysFlag int32) int {
	if sysFlag&SysFlagBornHostV6 != 0 {
		return PosBornHost + 16 + 4
	}
	return PosBornHost + 4 + 4
}

// PutQueueOffset patches QUEUEOFFSET of the encoded record rec in place. It
// panics if rec is shorter than the fixed header.
func PutQueueOffset(rec []byte, v int64) {
	binary.BigEndian.PutUint64(rec[PosQueueOffset:], uint64(v))
}

// PutPhysicalOffset patches PHYSICALOFFSET of the encoded record rec in
// place. It panics if rec is shorter than the fixed header.
func PutPhysicalOffset(rec []byte, v int64) {
	binary.BigEndian.PutUint64(rec[PosPhysicalOffset:], uint64(v))
}

// PutStoreTimestamp patches STORETIMESTAMP of the encoded record rec in
// place, finding it from the record's sysflag. It panics if rec is shorter
// than the fixed header.
func PutStoreTimestamp(rec []byte, v int64) {
	pos := StoreTimestampPos(int32(binary.BigEndian.Uint32(rec[PosSysFlag:])))
	binary.BigEndian.PutUint64(rec[pos:], uint64(v))
}

// RecordProperties returns the properties of the V1 record at the start of b, aliasing
// b, without decoding its other fields: the pull path's SQL92 filter reads a record's
// properties this way. It checks only the sizes it walks (magic, TOTALSIZE, the body,
// topic and properties lengths), so on a record Decode accepts it returns exactly
// Record.Properties; on damaged bytes it returns an error matching ErrTruncated,
// ErrBadMagic or ErrSizeMismatch.
func RecordProperties(b []byte) ([]byte, error) {
	if len(b) < MinRecordSize {
		return nil, fmt.Errorf("%w: %d bytes, a record needs %d", ErrTruncated, len(b), MinRecordSize)
	}
	be := binary.BigEndian
	if magic := be.Uint32(b[PosMagic:]); magic != MagicV1 {
		return nil, fmt.Errorf("%w: %#08x", ErrBadMagic, magic)
	}
	n := int(int32(be.Uint32(b[PosTotalSize:])))
	if n < MinRecordSize || n > len(b) {
		return nil, fmt.Errorf("%w: TOTALSIZE %d, %d bytes available", ErrSizeMismatch, n, len(b))
	}
	sys := int32(be.Uint32(b[PosSysFlag:]))
	bornLen, storeLen := 4, 4
	if sys&SysFlagBornHostV6 != 0 {
		bornLen = 16
	}
	if sys&SysFlagStoreHostV6 != 0 {
		storeLen = 16
	}
	// born host + port, store timestamp, store host + port, reconsume times, prepared offset
	p := PosBornHost + bornLen + 4 + 8 + storeLen + 4 + 4 + 8
	if p+4+1+2 > n {
		return nil, fmt.Errorf("%w: TOTALSIZE %d is below the fixed bytes", ErrSizeMismatch, n)
	}
	bodyLen := int(int32(be.Uint32(b[p:])))
	p += 4
	if bodyLen < 0 || p+bodyLen+1+2 > n {
		return nil, fmt.Errorf("%w: body length %d in a %d-byte record", ErrSizeMismatch, bodyLen, n)
	}
	p += bodyLen
	topicLen := int(b[p])
	p++
	if topicLen > MaxTopicLength || p+topicLen+2 > n {
		return nil, fmt.Errorf("%w: topic length %d in a %d-byte record", ErrSizeMismatch, topicLen, n)
	}
	p += topicLen
	propsLen := int(int16(be.Uint16(b[p:])))
	p += 2
	if propsLen < 0 || p+propsLen != n {
		return nil, fmt.Errorf("%w: properties length %d in a %d-byte record", ErrSizeMismatch, propsLen, n)
	}
	if propsLen == 0 {
		return nil, nil
	}
	return b[p:n:n], nil
}

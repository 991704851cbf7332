package message

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// Offset message id lengths in hex characters.
const (
	// OffsetMsgIDLenV4 is the length of an offset message id with an IPv4
	// store host: hex of 4 (IP) + 4 (port) + 8 (offset) bytes.
	OffsetMsgIDLenV4 = 32
	// OffsetMsgIDLenV6 is the length of an offset message id with an IPv6
	// store host: hex of 16 + 4 + 8 bytes.
	OffsetMsgIDLenV6 = 56
)

const upperHex = "0123456789ABCDEF"

func appendUpperHex(dst, src []byte) []byte {
	for _, c := range src {
		dst = append(dst, upperHex[c>>4], upperHex[c&0x0F])
	}
	return dst
}

// AppendOffsetMsgID appends the offset message id of the record at commit-log
// offset offset, stored by host, to dst: uppercase hex of the store host IP
// (4 bytes for IPv4, 16 for IPv6, as in the record), the int32 port and the
// int64 offset. It does not allocate when dst has room for
// OffsetMsgIDLenV6 more bytes.
func AppendOffsetMsgID(dst []byte, host netip.AddrPort, offset int64) []byte {
	var raw [16 + 4 + 8]byte
	n := putHost(raw[:], 0, host)
	binary.BigEndian.PutUint64(raw[n:], uint64(offset))
	return appendUpperHex(dst, raw[:n+8])
}

// OffsetMsgID returns the offset message id of the record at commit-log
// offset offset stored by host; see AppendOffsetMsgID. It is 32 characters
// for an IPv4 host and 56 for an IPv6 host.
func OffsetMsgID(host netip.AddrPort, offset int64) string {
	var buf [OffsetMsgIDLenV6]byte
	return string(AppendOffsetMsgID(buf[:0], host, offset))
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// DecodeOffsetMsgID decodes an offset message id (hex in either case) into
// the store host and the commit-log offset. A 32-character id holds an IPv4
// host and a 56-character id an IPv6 host; anything else, a non-hex
// character or a port outside 0..65535 fails with ErrBadMsgID.
func DecodeOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	var ipLen int
	switch len(id) {
	case OffsetMsgIDLenV4:
		ipLen = 4
	case OffsetMsgIDLenV6:
		ipLen = 16
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("%w: length %d, want %d or %d",
			ErrBadMsgID, len(id), OffsetMsgIDLenV4, OffsetMsgIDLenV6)
	}
	var raw [16 + 4 + 8]byte
	for i := range len(id) / 2 {
		hi, ok1 := unhex(id[2*i])
		lo, ok2 := unhex(id[2*i+1])
		if !ok1 || !ok2 {
			return netip.AddrPort{}, 0, fmt.Errorf("%w: non-hex character near position %d", ErrBadMsgID, 2*i)
		}
		raw[i] = hi<<4 | lo
	}
	var addr netip.Addr
	if ipLen == 16 {
		addr = netip.AddrFrom16([16]byte(raw[:16]))
	} else {
		addr = netip.AddrFrom4([4]byte(raw[:4]))
	}
	port := int32(binary.BigEndian.Uint32(raw[ipLen:]))
	if port < 0 || port > math.MaxUint16 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: port %d out of range", ErrBadMsgID, port)
	}
	offset := int64(binary.BigEndian.Uint64(raw[ipLen+4:]))
	return netip.AddrPortFrom(addr, uint16(port)), offset, nil
}

// OffsetMsgID returns the record's offset message id, from its store host
// and physical offset.
func (r *Record) OffsetMsgID() string { return OffsetMsgID(r.StoreHost, r.PhysicalOffset) }

// MsgID returns the id clients show for the record: its UNIQ_KEY property
// if present and non-empty, else its offset message id.
func (r *Record) MsgID() string {
	if v, ok := LookupProperty(r.Properties, PropertyUniqKey); ok && len(v) > 0 {
		return string(v)
	}
	return r.OffsetMsgID()
}

// UniqKeyGenerator produces client message ids (UNIQ_KEY values) in the
// RocketMQ layout, as uppercase hex of:
//
//	IP (4 bytes, 16 for IPv6) | pid int16 | 4-byte value | ms since month start int32 | counter int16
//
// which is 32 characters for an IPv4 address (56 for IPv6). The 4-byte value
// (Java: a class-loader hash, Go client: 0) is random per generator, which
// keeps generators with the same IP and pid apart. The month start is in the
// clock's location (local time for time.Now).
//
// Ids from one generator are unique within a calendar month: the
// (time, counter) pair never repeats, even when more than 65,536 ids are
// made in one millisecond (the time field then runs ahead of the clock) or
// the clock steps back. Across months, as in RocketMQ, an id can repeat only
// if the counter has wrapped to the same value at the same millisecond
// offset. A UniqKeyGenerator is safe for concurrent use.
type UniqKeyGenerator struct {
	prefix []byte // uppercase hex of IP | pid | value; immutable
	now    func() time.Time

	mu struct {
		sync.Mutex
		monthStart int64  // Unix ms of the current month's start
		nextMonth  int64  // Unix ms of the next month's start
		last       int64  // largest time field used in this month, -1 if none
		first      uint16 // counter value of the first id at last
		counter    uint16
	}
}

// NewUniqKeyGenerator returns a generator for a process with the given IP
// and process id (truncated to int16 as RocketMQ does). An IPv4-mapped IPv6
// address is used as IPv4; the zero Addr is written as 0.0.0.0.
func NewUniqKeyGenerator(ip netip.Addr, pid int) *UniqKeyGenerator {
	return newUniqKeyGenerator(ip, pid, rand.Uint32(), time.Now)
}

func newUniqKeyGenerator(ip netip.Addr, pid int, value uint32, now func() time.Time) *UniqKeyGenerator {
	var raw [16 + 2 + 4]byte
	ip = ip.Unmap()
	n := 4
	switch {
	case ip.Is6():
		b := ip.As16()
		n = copy(raw[:], b[:])
	case ip.Is4():
		b := ip.As4()
		copy(raw[:], b[:])
	}
	binary.BigEndian.PutUint16(raw[n:], uint16(int16(pid)))
	binary.BigEndian.PutUint32(raw[n+2:], value)
	g := &UniqKeyGenerator{
		prefix: appendUpperHex(nil, raw[:n+6]),
		now:    now,
	}
	g.mu.last = -1
	return g
}

// Next returns a new unique id.
func (g *UniqKeyGenerator) Next() string {
	var buf [OffsetMsgIDLenV6]byte
	return string(g.AppendNext(buf[:0]))
}

// AppendNext appends a new unique id to dst.
func (g *UniqKeyGenerator) AppendNext(dst []byte) []byte {
	now := g.now()
	ms := now.UnixMilli()

	g.mu.Lock()
	if ms >= g.mu.nextMonth {
		start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())
		g.mu.monthStart = start.UnixMilli()
		g.mu.nextMonth = start.AddDate(0, 1, 0).UnixMilli()
		g.mu.last = -1
	}
	t := ms - g.mu.monthStart
	g.mu.counter++
	switch {
	case t > g.mu.last:
		g.mu.last, g.mu.first = t, g.mu.counter
	case g.mu.counter == g.mu.first:
		// Every counter value has been used at last: move on to an unused
		// time value (last is the largest used so far).
		g.mu.last++
	}
	t, c := g.mu.last, g.mu.counter
	g.mu.Unlock()

	var raw [6]byte
	binary.BigEndian.PutUint32(raw[:], uint32(t))
	binary.BigEndian.PutUint16(raw[4:], c)
	dst = append(dst, g.prefix...)
	return appendUpperHex(dst, raw[:])
}

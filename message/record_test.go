package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	hostV4  = netip.MustParseAddrPort("192.168.1.20:54321")
	storeV4 = netip.MustParseAddrPort("10.0.0.7:10911")
	hostV6  = netip.MustParseAddrPort("[2001:db8::1234:5678]:40000")
	storeV6 = netip.MustParseAddrPort("[fe80::1]:10911")
)

func sampleRecord() Record {
	return Record{
		QueueID:          3,
		Flag:             -7,
		QueueOffset:      1234567,
		PhysicalOffset:   987654321012,
		SysFlag:          SysFlagMultiTags | TransactionCommitType,
		BornTimestamp:    1700000000123,
		BornHost:         hostV4,
		StoreTimestamp:   1700000000456,
		StoreHost:        storeV4,
		ReconsumeTimes:   2,
		PreparedTxOffset: 4242,
		Body:             []byte("hello, ferry"),
		Topic:            []byte("TopicTest"),
		Properties:       []byte("TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C0A8011400002A9F0000000000001234\x02"),
	}
}

func encode(t testing.TB, r *Record) []byte {
	t.Helper()
	b := make([]byte, r.Size())
	n, err := r.EncodeTo(b)
	require.NoError(t, err)
	require.Equal(t, len(b), n)
	return b
}

// expectDecoded is what decoding an encoding of r yields.
func expectDecoded(r Record) Record {
	r.SysFlag = r.SysFlag&^(SysFlagBornHostV6|SysFlagStoreHostV6) | r.hostFlags()
	r.BodyCRC = BodyCRC(r.Body)
	r.StoreSize = int32(r.Size())
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	maxTopic := bytes.Repeat([]byte("t"), MaxTopicLength)
	maxProps := append(bytes.Repeat([]byte("p"), MaxPropertiesLength-3), 0x01, 'v', 0x02)
	cases := []struct {
		name   string
		mutate func(*Record)
		extra  int // IPv6 host bytes
	}{
		{"ipv4", func(*Record) {}, 0},
		{"born ipv6", func(r *Record) { r.BornHost = hostV6 }, 12},
		{"store ipv6", func(r *Record) { r.StoreHost = storeV6 }, 12},
		{"both ipv6", func(r *Record) { r.BornHost, r.StoreHost = hostV6, storeV6 }, 24},
		{"ipv4-mapped ipv6", func(r *Record) { r.BornHost = netip.MustParseAddrPort("[::ffff:1.2.3.4]:80") }, 12},
		{"stale v6 flags are ignored", func(r *Record) { r.SysFlag |= SysFlagBornHostV6 | SysFlagStoreHostV6 }, 0},
		{"empty body topic props", func(r *Record) { r.Body, r.Topic, r.Properties = nil, nil, nil }, 0},
		{"max topic", func(r *Record) { r.Topic = maxTopic }, 0},
		{"max properties", func(r *Record) { r.Properties = maxProps }, 0},
		{"negative values", func(r *Record) {
			r.QueueID, r.QueueOffset, r.PhysicalOffset, r.SysFlag = -1, -2, -3, -1
			r.BornTimestamp, r.StoreTimestamp, r.ReconsumeTimes, r.PreparedTxOffset = -4, -5, -6, -7
		}, 0},
		{"compressed flag", func(r *Record) { r.SysFlag |= SysFlagCompressed }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleRecord()
			tc.mutate(&r)
			want := MinRecordSize + len(r.Body) + len(r.Topic) + len(r.Properties) + tc.extra
			require.Equal(t, want, r.Size())

			b := encode(t, &r)
			got, n, err := DecodeRecord(b)
			require.NoError(t, err)
			require.Equal(t, len(b), n)
			require.Equal(t, expectDecoded(r), got)
			require.NoError(t, got.VerifyBodyCRC())

			// Re-encoding the decoded record reproduces the bytes.
			require.Equal(t, b, encode(t, &got))
			// AppendTo agrees with EncodeTo and keeps the prefix.
			app, err := r.AppendTo([]byte("prefix"))
			require.NoError(t, err)
			require.Equal(t, append([]byte("prefix"), b...), app)
			// Decoded slices have clipped capacity (appending never
			// overwrites the next field).
			require.Equal(t, len(got.Body), cap(got.Body))
			require.Equal(t, len(got.Topic), cap(got.Topic))
			require.Equal(t, len(got.Properties), cap(got.Properties))
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	r := sampleRecord()
	dst := bytes.Repeat([]byte{0xEE}, r.Size()-1)
	_, err := r.EncodeTo(dst)
	require.ErrorIs(t, err, ErrShortBuffer)
	require.Equal(t, bytes.Repeat([]byte{0xEE}, r.Size()-1), dst, "dst untouched on error")

	r.Topic = bytes.Repeat([]byte("t"), MaxTopicLength+1)
	_, err = r.EncodeTo(make([]byte, r.Size()))
	require.ErrorIs(t, err, ErrTopicTooLong)
	_, err = r.AppendTo(nil)
	require.ErrorIs(t, err, ErrTopicTooLong)
	require.ErrorIs(t, r.Validate(0), ErrTopicTooLong)

	r = sampleRecord()
	r.Properties = bytes.Repeat([]byte("p"), MaxPropertiesLength+1)
	_, err = r.EncodeTo(make([]byte, r.Size()))
	require.ErrorIs(t, err, ErrPropertiesTooLong)
	require.ErrorIs(t, r.Validate(0), ErrPropertiesTooLong)

	r = sampleRecord()
	r.Topic = nil
	require.ErrorIs(t, r.Validate(0), ErrTopicEmpty)

	r = sampleRecord()
	r.Body = make([]byte, DefaultMaxBodySize)
	require.NoError(t, r.Validate(0))
	r.Body = make([]byte, DefaultMaxBodySize+1)
	require.ErrorIs(t, r.Validate(0), ErrBodyTooLarge)
	require.NoError(t, r.Validate(8<<20))
	require.ErrorIs(t, r.Validate(100), ErrBodyTooLarge)
}

// corrupt returns an encoded sample record after fn has modified it.
func corrupt(t *testing.T, fn func(b []byte) []byte) []byte {
	r := sampleRecord()
	return fn(encode(t, &r))
}

func TestDecodeErrors(t *testing.T) {
	be := binary.BigEndian
	r := sampleRecord()
	good := encode(t, &r)
	total := len(good)
	// Position of the body length field for IPv4 hosts.
	const bodyLenPos = 84
	topicLenPos := 88 + len(r.Body)
	propsLenPos := topicLenPos + 1 + len(r.Topic)

	cases := []struct {
		name  string
		input []byte
		err   error
		n     int
	}{
		{"empty", nil, ErrTruncated, 0},
		{"seven bytes", good[:7], ErrTruncated, 0},
		{"zeroed space", make([]byte, 200), ErrBadMagic, 0},
		{"v2 magic", corrupt(t, func(b []byte) []byte { be.PutUint32(b[4:], MagicV2); return b }), ErrBadMagic, 0},
		{"blank", corrupt(t, func(b []byte) []byte { _, _ = EncodeBlank(b, 4096); return b }), ErrBlank, 0},
		{"total below minimum", corrupt(t, func(b []byte) []byte { be.PutUint32(b, 90); return b }), ErrSizeMismatch, 0},
		{"negative total", corrupt(t, func(b []byte) []byte { be.PutUint32(b, 0x80000000); return b }), ErrSizeMismatch, 0},
		{"total beyond input", corrupt(t, func(b []byte) []byte { be.PutUint32(b, uint32(len(b)+1)); return b }), ErrTruncated, 0},
		{"total larger than fields", corrupt(t, func(b []byte) []byte {
			be.PutUint32(b, uint32(len(b)+3))
			return append(b, 1, 2, 3)
		}), ErrSizeMismatch, total + 3},
		{"total smaller than fields", corrupt(t, func(b []byte) []byte { be.PutUint32(b, uint32(len(b)-1)); return b }), ErrSizeMismatch, total - 1},
		{"v6 flag without room", corrupt(t, func(b []byte) []byte {
			be.PutUint32(b[PosSysFlag:], 0x30)
			be.PutUint32(b, 100)
			return b
		}), ErrSizeMismatch, 100},
		{"body length too large", corrupt(t, func(b []byte) []byte { be.PutUint32(b[bodyLenPos:], uint32(total)); return b }), ErrSizeMismatch, total},
		{"negative body length", corrupt(t, func(b []byte) []byte { be.PutUint32(b[bodyLenPos:], 0xFFFFFFFF); return b }), ErrCorrupt, total},
		{"topic length above 127", corrupt(t, func(b []byte) []byte { b[topicLenPos] = 200; return b }), ErrCorrupt, total},
		{"topic length too large", corrupt(t, func(b []byte) []byte { b[topicLenPos] = 120; return b }), ErrSizeMismatch, total},
		{"negative properties length", corrupt(t, func(b []byte) []byte { be.PutUint16(b[propsLenPos:], 0x8000); return b }), ErrCorrupt, total},
		{"properties length off", corrupt(t, func(b []byte) []byte { be.PutUint16(b[propsLenPos:], 1); return b }), ErrSizeMismatch, total},
		{"born port out of range", corrupt(t, func(b []byte) []byte { be.PutUint32(b[52:], 70000); return b }), ErrCorrupt, total},
		{"store port negative", corrupt(t, func(b []byte) []byte { be.PutUint32(b[68:], 0xFFFFFFFF); return b }), ErrCorrupt, total},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := DecodeRecord(tc.input)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.n, n)
			require.Equal(t, Record{}, got)

			// Decode resets a reused Record.
			reused := sampleRecord()
			_, err = reused.Decode(tc.input)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, Record{}, reused)
		})
	}
}

// TestDecodeTornTail cuts a valid record at every byte: every prefix must
// fail as truncated, never decode, never panic.
func TestDecodeTornTail(t *testing.T) {
	for _, born := range []netip.AddrPort{hostV4, hostV6} {
		r := sampleRecord()
		r.BornHost = born
		b := encode(t, &r)
		for i := range len(b) {
			_, n, err := DecodeRecord(b[:i])
			require.ErrorIs(t, err, ErrTruncated, "cut at %d", i)
			require.Zero(t, n)
		}
	}
}

func TestVerifyBodyCRC(t *testing.T) {
	r := sampleRecord()
	b := encode(t, &r)
	b[88] ^= 0xFF // first body byte
	got, _, err := DecodeRecord(b)
	require.NoError(t, err, "decode does not check the CRC")
	require.ErrorIs(t, got.VerifyBodyCRC(), ErrCRC)

	r.Body = nil
	got, _, err = DecodeRecord(encode(t, &r))
	require.NoError(t, err)
	require.NoError(t, got.VerifyBodyCRC())
	require.Equal(t, int32(0), got.BodyCRC)
}

func TestScanConcatenatedWithBlank(t *testing.T) {
	var log []byte
	var want []Record
	for i := range 5 {
		r := sampleRecord()
		r.QueueOffset = int64(i)
		r.PhysicalOffset = int64(len(log))
		r.Body = nil
		if i > 0 {
			r.Body = []byte(strings.Repeat("x", i*10))
		}
		if i%2 == 1 {
			r.BornHost = hostV6
		}
		var err error
		log, err = r.AppendTo(log)
		require.NoError(t, err)
		want = append(want, expectDecoded(r))
	}
	blank := make([]byte, 64)
	n, err := EncodeBlank(blank, len(blank))
	require.NoError(t, err)
	require.Equal(t, BlankHeaderSize, n)
	log = append(log, blank...)

	var got []Record
	for pos := 0; ; {
		r, n, err := DecodeRecord(log[pos:])
		if err != nil {
			require.ErrorIs(t, err, ErrBlank)
			require.True(t, IsBlank(log[pos:]))
			size, magic, err := PeekHeader(log[pos:])
			require.NoError(t, err)
			require.Equal(t, int32(64), size)
			require.Equal(t, MagicBlank, magic)
			break
		}
		require.False(t, IsBlank(log[pos:]))
		got = append(got, r)
		pos += n
	}
	require.Equal(t, want, got)

	_, err = EncodeBlank(make([]byte, 7), 100)
	require.ErrorIs(t, err, ErrShortBuffer)
	_, err = EncodeBlank(make([]byte, 8), 7)
	require.ErrorIs(t, err, ErrShortBuffer)
	_, _, err = PeekHeader([]byte{1, 2, 3})
	require.ErrorIs(t, err, ErrTruncated)
	require.False(t, IsBlank([]byte{0, 0, 0, 8, 0xCB, 0xD4, 0x31}))
}

func TestRecordPropertyAndIDs(t *testing.T) {
	r := sampleRecord()
	v, ok := r.Property(PropertyTags)
	require.True(t, ok)
	require.Equal(t, "TagA", string(v))
	require.Equal(t, "C0A8011400002A9F0000000000001234", r.MsgID())
	require.Equal(t, OffsetMsgID(storeV4, r.PhysicalOffset), r.OffsetMsgID())
	r.Properties = nil
	require.Equal(t, r.OffsetMsgID(), r.MsgID())
}

func TestSysFlagHelpers(t *testing.T) {
	f := SysFlagCompressed | SysFlagMultiTags | SysFlagBornHostV6
	require.Equal(t, TransactionNotType, TransactionType(f))
	f = WithTransactionType(f, TransactionPreparedType)
	require.Equal(t, TransactionPreparedType, TransactionType(f))
	require.Equal(t, SysFlagCompressed|SysFlagMultiTags|SysFlagBornHostV6|TransactionPreparedType, f)
	require.False(t, IsConsumable(f))
	f = WithTransactionType(f, TransactionCommitType)
	require.True(t, IsConsumable(f))
	require.False(t, IsConsumable(WithTransactionType(f, TransactionRollbackType)))
	require.True(t, IsConsumable(0))

	require.True(t, IsCompressed(f))
	require.True(t, IsZlibCompressed(f))
	require.Equal(t, CompressionLegacyZlib, CompressionType(f))
	require.True(t, IsZlibCompressed(f|CompressionZlib<<SysFlagCompressionTypeShift))
	lz4 := f | CompressionLZ4<<SysFlagCompressionTypeShift
	require.Equal(t, CompressionLZ4, CompressionType(lz4))
	require.False(t, IsZlibCompressed(lz4))
	require.Equal(t, CompressionZstd, CompressionType(CompressionZstd<<SysFlagCompressionTypeShift))
	require.False(t, IsZlibCompressed(0))
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrTruncated, ErrBadMagic, ErrBlank, ErrSizeMismatch, ErrCorrupt, ErrCRC,
		ErrShortBuffer, ErrTopicTooLong, ErrTopicEmpty, ErrPropertiesTooLong, ErrBodyTooLarge,
		ErrBodyEmpty, ErrInvalidProperty, ErrBadMsgID, ErrCompress, ErrBadCompressed, ErrDecompressedTooLarge}
	for i, a := range all {
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(a, b))
		}
	}
}

func TestCodecDoesNotAllocate(t *testing.T) {
	r := sampleRecord()
	r.BornHost = hostV6
	buf := make([]byte, r.Size())
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, err := r.EncodeTo(buf); err != nil {
			panic(err)
		}
	}))
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, _, err := DecodeRecord(buf); err != nil {
			panic(err)
		}
	}))
	require.Zero(t, testing.AllocsPerRun(100, func() {
		PutQueueOffset(buf, 1)
		PutPhysicalOffset(buf, 2)
		PutStoreTimestamp(buf, 3)
	}))
}

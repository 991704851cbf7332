package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
)

// goClientBatchItem is the spec's example item (Go client, body "hi",
// TAGS=A).
const goClientBatchItem = "0000001f" + "00000000" + "00000000" + "00000000" + "00000002" + "6869" + "0007" + "54414753014102"

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

func sampleBatchItems() []BatchItem {
	return []BatchItem{
		{Flag: 0, Body: []byte("hi"), Properties: []byte("TAGS\x01A\x02")},
		{Flag: -7, Body: nil, Properties: nil},
		{Flag: 1 << 30, Body: bytes.Repeat([]byte{0xAB}, 300), Properties: []byte("KEYS\x01k1 k2\x02UNIQ_KEY\x01X\x02")},
		{Flag: 3, Body: []byte{0}, Properties: bytes.Repeat([]byte("p"), MaxBatchPropertiesLength)},
	}
}

func readAllBatch(body []byte) ([]BatchItem, error) {
	var out []BatchItem
	r := NewBatchReader(body)
	for r.Next() {
		out = append(out, r.Item())
	}
	return out, r.Err()
}

func TestBatchGoClientExample(t *testing.T) {
	body := mustHex(t, goClientBatchItem)
	items, err := readAllBatch(body)
	require.NoError(t, err)
	require.Equal(t, []BatchItem{{Flag: 0, Body: []byte("hi"), Properties: []byte("TAGS\x01A\x02")}}, items)

	enc, err := AppendBatchItem(nil, items[0])
	require.NoError(t, err)
	require.Equal(t, body, enc)
	require.Equal(t, len(body), BatchItemSize(2, 7))
}

func TestBatchRoundTrip(t *testing.T) {
	items := sampleBatchItems()
	body, err := EncodeBatch(items)
	require.NoError(t, err)

	got, err := readAllBatch(body)
	require.NoError(t, err)
	require.Len(t, got, len(items))
	for i := range items {
		require.Equal(t, items[i].Flag, got[i].Flag)
		require.True(t, bytes.Equal(items[i].Body, got[i].Body), "item %d body", i)
		require.True(t, bytes.Equal(items[i].Properties, got[i].Properties), "item %d properties", i)
		// Items alias the body and cannot grow into the next field.
		require.Equal(t, len(got[i].Body), cap(got[i].Body))
		require.Equal(t, len(got[i].Properties), cap(got[i].Properties))
	}
	n, err := CountBatchItems(body)
	require.NoError(t, err)
	require.Equal(t, len(items), n)

	// Appending to a decoded body must not clobber the properties length.
	r := NewBatchReader(body)
	require.True(t, r.Next())
	_ = append(r.Item().Body, 'X', 'X')
	got2, err := readAllBatch(body)
	require.NoError(t, err)
	require.Equal(t, got, got2)
}

func TestBatchEmpty(t *testing.T) {
	for _, body := range [][]byte{nil, {}} {
		r := NewBatchReader(body)
		require.False(t, r.Next())
		require.NoError(t, r.Err())
		require.Zero(t, r.Count())
	}
	enc, err := EncodeBatch(nil)
	require.NoError(t, err)
	require.Empty(t, enc)
}

func TestBatchIgnoresMagicAndCRC(t *testing.T) {
	body := mustHex(t, goClientBatchItem)
	binary.BigEndian.PutUint32(body[batchPosMagic:], 0xDAA320A7)
	binary.BigEndian.PutUint32(body[batchPosBodyCRC:], 0x12345678)
	items, err := readAllBatch(body)
	require.NoError(t, err)
	require.Equal(t, []byte("hi"), items[0].Body)
}

// putBatchField overwrites one int32 (or the uint16 properties length) of
// the item at off.
func putBatchField(b []byte, pos int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.BigEndian.PutUint32(b[pos:], v)
	return b
}

func TestBatchCorrupt(t *testing.T) {
	good := mustHex(t, goClientBatchItem) // 31 bytes: body 2, properties 7
	two := append(bytes.Clone(good), good...)
	neg := func(v int32) uint32 { return uint32(v) }
	for _, tc := range []struct {
		name  string
		body  []byte
		want  error
		field string
		index int
	}{
		{"short header", good[:21], ErrBatchTruncated, "item", 0},
		{"one byte", good[:1], ErrBatchTruncated, "item", 0},
		{"size past end", good[:30], ErrBatchTruncated, "totalSize", 0},
		{"second item short", two[:31+10], ErrBatchTruncated, "item", 1},
		{"second item past end", two[:len(two)-1], ErrBatchTruncated, "totalSize", 1},
		{"size below overhead", putBatchField(good, batchPosTotalSize, 21), ErrBatchBadLength, "totalSize", 0},
		{"negative size", putBatchField(good, batchPosTotalSize, neg(-31)), ErrBatchBadLength, "totalSize", 0},
		{"huge size", putBatchField(good, batchPosTotalSize, 0x7fffffff), ErrBatchTruncated, "totalSize", 0},
		{"negative body length", putBatchField(good, batchPosBodyLen, neg(-1)), ErrBatchBadLength, "bodyLength", 0},
		{"min body length", putBatchField(good, batchPosBodyLen, 0x80000000), ErrBatchBadLength, "bodyLength", 0},
		{"body past item", putBatchField(good, batchPosBodyLen, 10), ErrBatchBadLength, "bodyLength", 0},
		{"huge body length", putBatchField(good, batchPosBodyLen, 0x7fffffff), ErrBatchBadLength, "bodyLength", 0},
		{"body shorter than stated size", putBatchField(good, batchPosBodyLen, 1), ErrBatchBadLength, "propertiesLength", 0},
		{"properties length disagrees", func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint16(b[22:], 6)
			return b
		}(), ErrBatchBadLength, "propertiesLength", 0},
		{"size larger than fields", append(putBatchField(good, batchPosTotalSize, 32), 0), ErrBatchBadLength, "propertiesLength", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewBatchReader(tc.body)
			for r.Next() {
			}
			err := r.Err()
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, ErrBadBody)
			other := ErrBatchBadLength
			if errors.Is(tc.want, ErrBatchBadLength) {
				other = ErrBatchTruncated
			}
			require.NotErrorIs(t, err, other)
			var be *BatchError
			require.ErrorAs(t, err, &be)
			require.Equal(t, tc.field, be.Field)
			require.Equal(t, tc.index, be.Index)
			require.Equal(t, tc.index*len(good), be.Offset)
			require.Contains(t, err.Error(), fmt.Sprintf("item %d", tc.index))
			require.Equal(t, tc.index, r.Count())
			require.False(t, r.Next(), "a failed reader stays failed")
			require.Equal(t, BatchItem{}, r.Item())

			n, cerr := CountBatchItems(tc.body)
			require.Equal(t, tc.index, n)
			require.Equal(t, err.Error(), cerr.Error())
			requireSameAsBrokerDecoder(t, tc.body)
		})
	}
}

// TestBatchTornTail cuts a valid batch at every byte: a cut at an item
// boundary yields the whole items before it; any other cut is truncation.
func TestBatchTornTail(t *testing.T) {
	items := sampleBatchItems()[:3]
	body, err := EncodeBatch(items)
	require.NoError(t, err)
	boundaries := map[int]int{0: 0}
	off := 0
	for i, it := range items {
		off += BatchItemSize(len(it.Body), len(it.Properties))
		boundaries[off] = i + 1
	}
	for cut := 0; cut <= len(body); cut++ {
		got, err := readAllBatch(body[:cut])
		if n, ok := boundaries[cut]; ok {
			require.NoError(t, err, "cut %d", cut)
			require.Len(t, got, n)
			continue
		}
		require.ErrorIs(t, err, ErrBatchTruncated, "cut %d", cut)
		requireSameAsBrokerDecoder(t, body[:cut])
	}
}

func TestAppendBatchItemLimits(t *testing.T) {
	_, err := AppendBatchItem(nil, BatchItem{Properties: make([]byte, MaxBatchPropertiesLength+1)})
	require.ErrorIs(t, err, ErrBadBody)
	require.ErrorIs(t, err, message.ErrPropertiesTooLong)

	dst := []byte("keep")
	out, err := AppendBatchItem(dst, BatchItem{Properties: make([]byte, MaxBatchPropertiesLength+1)})
	require.Error(t, err)
	require.Equal(t, dst, out)

	_, err = EncodeBatch([]BatchItem{{}, {Properties: make([]byte, 1<<16)}})
	require.ErrorIs(t, err, message.ErrPropertiesTooLong)
	require.Contains(t, err.Error(), "item 1")
}

// TestBatchReaderAcceptsUnsignedPropertiesLength documents that, like the
// broker decoder it replaces, the reader takes the properties length as
// unsigned although encoders never write more than 32767.
func TestBatchReaderAcceptsUnsignedPropertiesLength(t *testing.T) {
	props := bytes.Repeat([]byte{'x'}, 40000)
	body := binary.BigEndian.AppendUint32(nil, uint32(BatchItemOverhead+len(props)))
	body = append(body, make([]byte, 12)...)
	body = binary.BigEndian.AppendUint32(body, 0)
	body = binary.BigEndian.AppendUint16(body, uint16(len(props)))
	body = append(body, props...)
	items, err := readAllBatch(body)
	require.NoError(t, err)
	require.Len(t, items[0].Properties, 40000)
	requireSameAsBrokerDecoder(t, body)
}

func TestBatchReaderZeroAlloc(t *testing.T) {
	items := make([]BatchItem, 100)
	for i := range items {
		items[i] = BatchItem{Flag: int32(i), Body: bytes.Repeat([]byte{byte(i)}, i), Properties: []byte("TAGS\x01A\x02")}
	}
	body, err := EncodeBatch(items)
	require.NoError(t, err)
	var sink int
	allocs := testing.AllocsPerRun(100, func() {
		r := NewBatchReader(body)
		for r.Next() {
			it := r.Item()
			sink += len(it.Body) + len(it.Properties) + int(it.Flag)
		}
		if r.Err() != nil {
			panic(r.Err())
		}
	})
	require.Zero(t, allocs)
	require.NotZero(t, sink)

	dst := make([]byte, 0, len(body))
	allocs = testing.AllocsPerRun(100, func() {
		dst = dst[:0]
		for _, it := range items {
			dst, _ = AppendBatchItem(dst, it)
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, body, dst)
}

func BenchmarkBatchReader(b *testing.B) {
	items := make([]BatchItem, 32)
	for i := range items {
		items[i] = BatchItem{Body: make([]byte, 1024), Properties: []byte("TAGS\x01A\x02KEYS\x01order-1\x02")}
	}
	body, err := EncodeBatch(items)
	require.NoError(b, err)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewBatchReader(body)
		for r.Next() {
		}
		if r.Err() != nil {
			b.Fatal(r.Err())
		}
	}
}

// brokerBatchItem and brokerDecodeBatch restate the batch parsing the broker
// did before BatchReader existed (broker/send.go decodeBatch at commit
// cbc6947), minus the UNIQ_KEY handling: the reader must accept exactly the
// same bodies and yield the same items.
type brokerBatchItem struct {
	flag        int32
	body, props []byte
}

func brokerDecodeBatch(body []byte) ([]brokerBatchItem, error) {
	var out []brokerBatchItem
	for p := body; len(p) > 0; {
		if len(p) < 22 {
			return nil, fmt.Errorf("batch item truncated: %d bytes left", len(p))
		}
		size := int(int32(binary.BigEndian.Uint32(p)))
		if size < 22 || size > len(p) {
			return nil, fmt.Errorf("batch item size %d invalid (%d bytes left)", size, len(p))
		}
		item := p[:size]
		flag := int32(binary.BigEndian.Uint32(item[12:]))
		blen := int(int32(binary.BigEndian.Uint32(item[16:])))
		if blen < 0 || 20+blen+2 > size {
			return nil, fmt.Errorf("batch item body length %d invalid", blen)
		}
		plen := int(binary.BigEndian.Uint16(item[20+blen:]))
		if 22+blen+plen != size {
			return nil, fmt.Errorf("batch item sizes disagree: total %d, body %d, properties %d", size, blen, plen)
		}
		out = append(out, brokerBatchItem{flag, item[20 : 20+blen], item[22+blen:]})
		p = p[size:]
	}
	return out, nil
}

// requireSameAsBrokerDecoder checks BatchReader against brokerDecodeBatch.
func requireSameAsBrokerDecoder(t testing.TB, body []byte) {
	t.Helper()
	want, werr := brokerDecodeBatch(body)
	got, gerr := readAllBatch(body)
	require.Equal(t, werr == nil, gerr == nil, "broker decoder: %v, BatchReader: %v", werr, gerr)
	if werr != nil {
		return
	}
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].flag, got[i].Flag)
		require.True(t, bytes.Equal(want[i].body, got[i].Body))
		require.True(t, bytes.Equal(want[i].props, got[i].Properties))
	}
}

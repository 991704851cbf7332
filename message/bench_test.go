package message

import (
	"net/netip"
	"testing"
)

func benchRecord(b *testing.B) Record {
	r := sampleRecord()
	r.Body = make([]byte, 1024)
	for i := range r.Body {
		r.Body[i] = byte(i)
	}
	props, err := EncodeProperties(map[string]string{
		PropertyTags: "TagA", PropertyKeys: "order-1 order-2", PropertyUniqKey: "C0A8011400002A9F0000000000001234",
		PropertyCluster: "DefaultCluster", PropertyWaitStoreMsgOK: "true", PropertyDelayLevel: "3",
	})
	if err != nil {
		b.Fatal(err)
	}
	r.Properties = props
	return r
}

// BenchmarkEncodeRecord encodes a 1 KiB-body record into a reused buffer, as
// the store does into a mapped segment; it must not allocate.
func BenchmarkEncodeRecord(b *testing.B) {
	r := benchRecord(b)
	buf := make([]byte, r.Size())
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.EncodeTo(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecord decodes the same record (zero-copy, no CRC check).
func BenchmarkDecodeRecord(b *testing.B) {
	r := benchRecord(b)
	buf, err := r.AppendTo(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	var out Record
	for b.Loop() {
		if _, err := out.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecordVerifyCRC is decode plus the body CRC check recovery
// does.
func BenchmarkDecodeRecordVerifyCRC(b *testing.B) {
	r := benchRecord(b)
	buf, err := r.AppendTo(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		out, _, err := DecodeRecord(buf)
		if err != nil {
			b.Fatal(err)
		}
		if err := out.VerifyBodyCRC(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookupProperty looks up the four keys the dispatcher needs in raw
// properties; it must not allocate.
func BenchmarkLookupProperty(b *testing.B) {
	r := benchRecord(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range [...]string{PropertyTags, PropertyKeys, PropertyUniqKey, PropertyDelayLevel} {
			if _, ok := LookupProperty(r.Properties, k); !ok {
				b.Fatal(k)
			}
		}
	}
}

func BenchmarkParseProperties(b *testing.B) {
	r := benchRecord(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = ParseProperties(r.Properties)
	}
}

func BenchmarkTagsHash(b *testing.B) {
	b.ReportAllocs()
	b.Run("ascii", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = TagsHash("TagA||order-created")
		}
	})
	b.Run("non-ascii", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = TagsHash("标签-订单创建😀")
		}
	})
}

func BenchmarkOffsetMsgID(b *testing.B) {
	host := netip.MustParseAddrPort("10.0.0.7:10911")
	buf := make([]byte, 0, OffsetMsgIDLenV6)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendOffsetMsgID(buf[:0], host, 123456789)
	}
}

func BenchmarkUniqKeyNext(b *testing.B) {
	g := NewUniqKeyGenerator(netip.MustParseAddr("10.0.0.1"), 1)
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = g.AppendNext(buf[:0])
	}
}

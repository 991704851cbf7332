package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// An independent reader of the on-disk formats, written from the storage spec's byte
// tables and deliberately sharing no code with the packages that write them. The format
// test decodes a store written through the public API with these functions, field by field.

// specRecord is one commit-log record as the spec's table lists it.
type specRecord struct {
	TotalSize, Magic, BodyCRC, QueueID, Flag int32
	QueueOffset, PhysicalOffset              int64
	SysFlag                                  int32
	BornTimestamp                            int64
	BornHost                                 []byte // IP then 4-byte port
	StoreTimestamp                           int64
	StoreHost                                []byte
	ReconsumeTimes                           int32
	PreparedTxOffset                         int64
	Body                                     []byte
	Topic                                    string
	Properties                               string
}

const (
	specMagicV1    = int32(-626843481) // 0xDAA320A7
	specMagicBlank = int32(-875286124) // 0xCBD43194
)

// specDecodeRecord decodes the record at b[0:], returning it and its size.
func specDecodeRecord(b []byte) (specRecord, error) {
	var r specRecord
	be := binary.BigEndian
	if len(b) < 8 {
		return r, fmt.Errorf("short: %d bytes", len(b))
	}
	r.TotalSize = int32(be.Uint32(b[0:]))
	r.Magic = int32(be.Uint32(b[4:]))
	if r.Magic == specMagicBlank {
		return r, nil
	}
	if r.Magic != specMagicV1 {
		return r, fmt.Errorf("magic %#x", uint32(r.Magic))
	}
	if int(r.TotalSize) > len(b) || r.TotalSize < 91 {
		return r, fmt.Errorf("total size %d with %d bytes", r.TotalSize, len(b))
	}
	p := 8
	i32 := func() int32 { v := int32(be.Uint32(b[p:])); p += 4; return v }
	i64 := func() int64 { v := int64(be.Uint64(b[p:])); p += 8; return v }
	r.BodyCRC = i32()
	r.QueueID = i32()
	r.Flag = i32()
	r.QueueOffset = i64()
	r.PhysicalOffset = i64()
	r.SysFlag = i32()
	r.BornTimestamp = i64()
	bornLen := 8
	if r.SysFlag&0x10 != 0 {
		bornLen = 20
	}
	r.BornHost = b[p : p+bornLen]
	p += bornLen
	r.StoreTimestamp = i64()
	storeLen := 8
	if r.SysFlag&0x20 != 0 {
		storeLen = 20
	}
	r.StoreHost = b[p : p+storeLen]
	p += storeLen
	r.ReconsumeTimes = i32()
	r.PreparedTxOffset = i64()
	bodyLen := int(i32())
	r.Body = b[p : p+bodyLen]
	p += bodyLen
	topicLen := int(b[p])
	p++
	r.Topic = string(b[p : p+topicLen])
	p += topicLen
	propLen := int(be.Uint16(b[p:]))
	p += 2
	r.Properties = string(b[p : p+propLen])
	p += propLen
	if p != int(r.TotalSize) {
		return r, fmt.Errorf("fields end at %d, total size says %d", p, r.TotalSize)
	}
	if got := int32(crc32.ChecksumIEEE(r.Body) & 0x7FFFFFFF); got != r.BodyCRC {
		return r, fmt.Errorf("body crc %d, stored %d", got, r.BodyCRC)
	}
	return r, nil
}

// specUnit is one consume-queue unit.
type specUnit struct {
	PhysicalOffset int64
	Size           int32
	TagsCode       int64
}

func specDecodeUnit(b []byte) specUnit {
	be := binary.BigEndian
	return specUnit{int64(be.Uint64(b[0:])), int32(be.Uint32(b[8:])), int64(be.Uint64(b[12:]))}
}

// specIndexHeader is the 40-byte index file header.
type specIndexHeader struct {
	BeginTimestamp, EndTimestamp, BeginPhyOffset, EndPhyOffset int64
	HashSlotCount, IndexCount                                  int32
}

func specDecodeIndexHeader(b []byte) specIndexHeader {
	be := binary.BigEndian
	return specIndexHeader{
		int64(be.Uint64(b[0:])), int64(be.Uint64(b[8:])), int64(be.Uint64(b[16:])), int64(be.Uint64(b[24:])),
		int32(be.Uint32(b[32:])), int32(be.Uint32(b[36:])),
	}
}

// specIndexEntry is one 20-byte index entry.
type specIndexEntry struct {
	KeyHash        int32
	PhysicalOffset int64
	TimeDiff       int32
	PrevIndex      int32
}

// specIndexLookup walks the index file b (slotNum slots) for key the way the spec says:
// slot = abs(javaHash) % slotNum, then the entry chain via prevIndex.
func specIndexLookup(b []byte, slotNum int, key string) []specIndexEntry {
	be := binary.BigEndian
	hash := specJavaHash(key)
	if hash < 0 {
		hash = -hash
	}
	if hash < 0 { // Math.abs(Integer.MIN_VALUE)
		hash = 0
	}
	slot := int(hash) % slotNum
	head := int32(be.Uint32(b[40+slot*4:]))
	entries := 40 + slotNum*4
	var out []specIndexEntry
	for idx, steps := head, 0; idx > 0 && steps < 1<<20; steps++ {
		e := b[entries+int(idx)*20:]
		ent := specIndexEntry{int32(be.Uint32(e[0:])), int64(be.Uint64(e[4:])), int32(be.Uint32(e[12:])), int32(be.Uint32(e[16:]))}
		if ent.KeyHash == hash {
			out = append(out, ent)
		}
		if ent.PrevIndex >= idx {
			break
		}
		idx = ent.PrevIndex
	}
	return out
}

// specJavaHash is String.hashCode over UTF-16 code units.
func specJavaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

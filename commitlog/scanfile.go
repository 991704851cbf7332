package commitlog

import (
	"errors"
	"fmt"

	"github.com/ferrymq/ferry/message"
)

// ParseSegmentName returns the physical start offset a segment file name encodes (20
// decimal digits), or false when name is not a segment name.
func ParseSegmentName(name string) (int64, bool) { return parseSegmentName(name) }

// ScanSegment checks the bytes of one segment file offline, as recovery does, without
// changing them: data is the whole file and start the physical offset of its first byte
// (its name). It is meant for tools that read a store's files without opening the store
// (ferryctl dump), so it takes no lock and trusts nothing in data.
//
// From the start of data it calls fn for each valid record (Record set; it aliases data
// and is valid only during the callback), each blank filler (Filler), each quarantined
// range (Quarantined) and each damaged range (Err set), in order, until fn returns false.
// A damaged range reaches to where valid data resumes in this segment (found as recovery
// finds it: a record with its magic and a self-referencing PHYSICALOFFSET), or to the end
// of data. verifyCRC checks every record's body CRC as well.
//
// The scan ends at a filler (the rest of the segment is its), at the end of data, or at
// zero bytes where a record would start with nothing valid after them in the segment —
// the write position of a live log, or the end recovery left. Zero bytes followed by
// valid data are a damaged range. ScanSegment returns where the scan ended (the segment
// end after a filler; the position of the zero bytes at the end of the data; the event's
// offset when fn stopped it) and whether fn stopped it.
func ScanSegment(data []byte, start int64, verifyCRC bool, fn func(ScanEvent) bool) (end int64, stopped bool) {
	seg := &segment{start: start, end: start + int64(len(data)), data: data}
	list := &segList{segs: []*segment{seg}}
	var rec message.Record
	pos := start
	for pos < seg.end {
		b := data[pos-start:]
		if q := message.QuarantineSize(b); q > 0 {
			if !fn(ScanEvent{Offset: pos, Size: int64(q), Quarantined: true}) {
				return pos, true
			}
			pos += int64(q)
			continue
		}
		size, blank, err := checkRecord(b, pos, verifyCRC, &rec)
		switch {
		case err == nil && blank:
			if !fn(ScanEvent{Offset: pos, Size: size, Filler: true}) {
				return pos, true
			}
			return seg.end, false
		case err == nil:
			if !fn(ScanEvent{Offset: pos, Size: size, Record: &rec}) {
				return pos, true
			}
			pos += size
		default:
			next, ok := resync(list, pos, verifyCRC)
			if errors.Is(err, errEndOfData) {
				if !ok {
					return pos, false
				}
				err = fmt.Errorf("%w at %d: zero bytes where a record should start, valid records after them", ErrCorrupt, pos)
			}
			if !ok {
				next = seg.end
			}
			if !fn(ScanEvent{Offset: pos, Size: next - pos, Err: err}) {
				return pos, true
			}
			pos = next
		}
	}
	return pos, false
}

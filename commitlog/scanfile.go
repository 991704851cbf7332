package commitlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ferrymq/ferry/internal/mmap"
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

// SegmentSizeOf returns the segment size of the log in dir as its files record it, 0 when
// dir holds no segment (or only an empty one). With two or more segments it is the
// distance between the first two names (segment names are contiguous offsets, so this
// holds even when the last file was cut short); with one, that file's size. Tools that
// open a store they did not configure (ferry scrub) take it from here instead of a
// default that may not match.
func SegmentSizeOf(fsys mmap.FS, dir string) (int64, error) {
	names, err := fsys.ReadDir(dir) // a missing directory is empty
	if err != nil {
		return 0, fmt.Errorf("commitlog: segment size: %w", err)
	}
	var starts []int64
	var first string
	for _, name := range names {
		if start, ok := parseSegmentName(name); ok {
			if len(starts) == 0 {
				first = name
			}
			starts = append(starts, start)
		}
	}
	switch {
	case len(starts) == 0:
		return 0, nil
	case len(starts) >= 2:
		slices.Sort(starts)
		return starts[1] - starts[0], nil
	}
	size, err := fsys.Size(filepath.Join(dir, first))
	if err != nil {
		return 0, fmt.Errorf("commitlog: segment size: %w", err)
	}
	return size, nil
}

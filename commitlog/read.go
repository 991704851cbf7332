package commitlog

import (
	"fmt"

	"github.com/ferrymq/ferry/message"
)

// acquire returns the segment holding off with a reader reference, and the end of the
// readable bytes in it (the segment end or the write position).
func (l *Log) acquire(off int64) (*segment, int64, error) {
	if l.closed.Load() {
		return nil, 0, ErrClosed
	}
	// wrote before the list: a segment is listed before any byte of it is published.
	wrote := l.wrote.Load()
	list := l.segs.Load()
	if off < 0 || off >= wrote {
		return nil, 0, fmt.Errorf("%w: %d, the log ends at %d", ErrOutOfRange, off, wrote)
	}
	seg := list.find(off, l.segSize)
	if seg == nil {
		return nil, 0, fmt.Errorf("%w: offset %d is below the first segment (%d)", ErrDeleted, off, list.first())
	}
	if !seg.acquire() {
		return nil, 0, fmt.Errorf("%w: segment %s is being deleted", ErrDeleted, seg.name)
	}
	return seg, min(seg.end, wrote), nil
}

// Read returns a View of up to n bytes at off (all readable bytes of the segment when
// n <= 0), clipped to the end of off's segment and to MaxOffset: bytes of one segment,
// never of two. Release the View when done. It fails with ErrOutOfRange when off is not
// below MaxOffset and ErrDeleted when off's segment is gone.
func (l *Log) Read(off int64, n int) (*View, error) {
	seg, limit, err := l.acquire(off)
	if err != nil {
		return nil, err
	}
	rel := off - seg.start
	avail := limit - off
	if n <= 0 || int64(n) > avail {
		n = int(avail)
	}
	return &View{seg: seg, off: off, b: seg.data[rel : rel+int64(n) : rel+int64(n)]}, nil
}

// ReadRecord decodes the record at off. The Record aliases the returned View (whose bytes
// are exactly the record); release the View after the last use of the Record. The body
// CRC is not verified. Errors: ErrOutOfRange, ErrDeleted, message.ErrBlank when off holds
// a filler (use Next), or ErrCorrupt wrapping the decode error.
func (l *Log) ReadRecord(off int64) (message.Record, *View, error) {
	v, err := l.Read(off, 0)
	if err != nil {
		return message.Record{}, nil, err
	}
	if message.IsBlank(v.b) {
		v.Release()
		return message.Record{}, nil, fmt.Errorf("commitlog: offset %d: %w", off, message.ErrBlank)
	}
	rec, n, err := message.DecodeRecord(v.b)
	if err != nil {
		v.Release()
		return message.Record{}, nil, fmt.Errorf("%w at %d: %w", ErrCorrupt, off, err)
	}
	v.b = v.b[:n:n]
	return rec, v, nil
}

// Next returns the offset after the record or filler at off: off + TOTALSIZE for a
// record, the next segment start for a filler (or when fewer than 8 bytes are left in the
// segment). Only the 8-byte header is read.
func (l *Log) Next(off int64) (int64, error) {
	seg, limit, err := l.acquire(off)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := seg.release(); err != nil {
			l.log.Error().Err(err).Msg("unmap after last reader")
		}
	}()
	return nextIn(seg, limit, off)
}

// nextIn is Next within a held segment.
func nextIn(seg *segment, limit, off int64) (int64, error) {
	rel := off - seg.start
	if seg.end-off < message.BlankHeaderSize {
		return seg.end, nil
	}
	total, magic, err := message.PeekHeader(seg.data[rel:])
	if err != nil {
		return 0, fmt.Errorf("%w at %d: %w", ErrCorrupt, off, err)
	}
	switch {
	case magic == message.MagicBlank:
		return seg.end, nil
	case magic != message.MagicV1 || total < message.MinRecordSize || off+int64(total) > limit:
		return 0, fmt.Errorf("%w at %d: magic %#08x, TOTALSIZE %d", ErrCorrupt, off, magic, total)
	}
	return off + int64(total), nil
}

// Iterator walks records from an offset up to MaxOffset, skipping blank fillers, holding
// one segment at a time; the dispatcher tails the log with it. When Next returns false
// with a nil Err the iterator has caught up; call Next again later to continue. It is not
// safe for concurrent use.
type Iterator struct {
	l   *Log
	seg *segment
	pos int64
	off int64
	rec message.Record
	err error
}

// populateMax bounds what an Iterator maps ahead when it enters a segment.
const populateMax = 64 << 20

// NewIterator returns an Iterator whose first record is the one at from (a record or
// filler boundary).
func (l *Log) NewIterator(from int64) *Iterator {
	return &Iterator{l: l, pos: from}
}

// Next advances to the next record below MaxOffset. It returns false when caught up or on
// an error (see Err). The iterator stops at a record that does not decode (ErrCorrupt)
// rather than skipping it.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	for {
		wrote := it.l.wrote.Load()
		if it.pos >= wrote {
			return false
		}
		if it.seg == nil || it.pos >= it.seg.end {
			it.drop()
			seg, _, err := it.l.acquire(it.pos)
			if err != nil {
				it.err = err
				return false
			}
			it.seg = seg
			// A fresh iterator or segment usually starts a long read of pages this process
			// has not mapped (recovery re-dispatching the tail, a slave catching up): map
			// what is there in one call instead of a fault per page. Advice: an error
			// costs only speed.
			rel := it.pos - seg.start
			_ = seg.m.Populate(rel, min(min(seg.end, wrote)-it.pos, populateMax))
		}
		seg := it.seg
		limit := min(seg.end, wrote)
		rel := it.pos - seg.start
		b := seg.data[rel : limit-seg.start]
		if len(b) < message.BlankHeaderSize || message.IsBlank(b) {
			it.pos = seg.end
			continue
		}
		if n := message.QuarantineSize(b); n > 0 {
			it.pos += int64(n) // a damaged range recovery set aside
			continue
		}
		n, err := it.rec.Decode(b)
		if err != nil {
			it.err = fmt.Errorf("%w at %d: %w", ErrCorrupt, it.pos, err)
			return false
		}
		it.off = it.pos
		it.pos += int64(n)
		return true
	}
}

// Record returns the current record. It aliases the mapping and is valid until the next
// call to Next or Close.
func (it *Iterator) Record() *message.Record { return &it.rec }

// Offset returns the physical offset of the current record.
func (it *Iterator) Offset() int64 { return it.off }

// Pos returns where the next call to Next starts: the offset after the current record.
func (it *Iterator) Pos() int64 { return it.pos }

// Err returns the error that stopped the iterator, if any.
func (it *Iterator) Err() error { return it.err }

// Close releases the held segment.
func (it *Iterator) Close() {
	it.drop()
	it.rec = message.Record{}
}

func (it *Iterator) drop() {
	if it.seg != nil {
		if err := it.seg.release(); err != nil {
			it.l.log.Error().Err(err).Msg("unmap after last reader")
		}
		it.seg = nil
	}
}

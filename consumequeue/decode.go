package consumequeue

import "fmt"

// Read-only helpers for tools that read queue files without opening a Store (ferryctl
// dump): they decode what is on disk and judge it as recovery does, and never write.

// ErrShortUnit means DecodeUnit was given fewer than UnitSize bytes.
var ErrShortUnit = fmt.Errorf("%w: fewer than %d bytes", ErrInvalidUnit, UnitSize)

// DecodeUnit reads the unit in b[:UnitSize] (the layout is drawn above Unit), failing
// with ErrShortUnit when b is shorter.
func DecodeUnit(b []byte) (Unit, error) {
	if len(b) < UnitSize {
		return Unit{}, ErrShortUnit
	}
	return decodeUnit(b), nil
}

// Zero reports whether u is all zero: the unit that ends a queue.
func (u Unit) Zero() bool { return u == Unit{} }

// Valid reports whether u may be a stored unit: a physical offset ≥ 0 and a positive
// size (pre-blank and hole units included). Recovery ends a queue at its first unit that
// is not valid.
func (u Unit) Valid() bool { return u.valid() }

// PreBlank reports whether u is a pre-blank filler unit: one of the units that pad a
// queue's first segment before its first real unit (physical offset 0, size
// math.MaxInt32, tags code 0).
func (u Unit) PreBlank() bool { return u.preBlank() }

// Follows reports whether u may come right after prev in a queue: both valid, and u's
// record starts at or after the end of prev's (units point to records in commit-log
// order). Recovery ends a queue at a unit that does not follow its predecessor.
func (u Unit) Follows(prev Unit) bool { return u.follows(prev) }

// ParseSegmentName returns the queue offset of the first unit of a segment file name (the
// byte offset of that unit as 20 decimal digits, a multiple of UnitSize), or false when
// name is not a segment name.
func ParseSegmentName(name string) (int64, bool) {
	return parseSegmentName(name, UnitSize)
}

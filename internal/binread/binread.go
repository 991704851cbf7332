// Package binread reads big-endian fields from a byte slice for the decoders of Ferry's
// small binary files (the store's queue table, a broadcasting consumer's offsets file):
// every length is checked before use, and the first overrun is remembered, so a decoder
// reads a whole structure and checks Err once.
package binread

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrTruncated is wrapped by the error of a read past the end of the bytes.
var ErrTruncated = errors.New("binread: truncated")

// Reader reads big-endian fields from the front of a byte slice. After the first error
// every read returns zero values and Err reports that error.
type Reader struct {
	rest []byte
	err  error
}

// New returns a Reader of b (which it does not copy).
func New(b []byte) *Reader { return &Reader{rest: b} }

// Err is the first error, or nil.
func (r *Reader) Err() error { return r.err }

// Len is how many bytes are left.
func (r *Reader) Len() int { return len(r.rest) }

// Fail records err as the reader's error unless it already has one (a decoder's own
// checks, so that Err reports the first problem, whichever it was).
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Take returns the next n bytes (aliasing the input), or nil past the end.
func (r *Reader) Take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.rest) < n {
		r.err = fmt.Errorf("%w: %d bytes left, %d needed", ErrTruncated, len(r.rest), n)
		return nil
	}
	b := r.rest[:n]
	r.rest = r.rest[n:]
	return b
}

// Uint16 reads a big-endian uint16.
func (r *Reader) Uint16() uint16 {
	if b := r.Take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

// Uint32 reads a big-endian uint32.
func (r *Reader) Uint32() uint32 {
	if b := r.Take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// Uint64 reads a big-endian uint64.
func (r *Reader) Uint64() uint64 {
	if b := r.Take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// String16 reads a string stored as a uint16 length and that many bytes.
func (r *Reader) String16() string {
	n := r.Uint16()
	if r.err != nil {
		return ""
	}
	return string(r.Take(int(n)))
}

// Count reads a uint32 entry count and fails (ErrTruncated) when that many entries of at
// least least bytes each cannot fit in what is left, so a damaged count never makes a
// decoder allocate or loop for entries that are not there.
func (r *Reader) Count(least int) int {
	n := r.Uint32()
	if r.err == nil && least > 0 && uint64(n) > uint64(len(r.rest))/uint64(least) {
		r.err = fmt.Errorf("%w: %d entries of at least %d bytes in %d bytes", ErrTruncated, n, least, len(r.rest))
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

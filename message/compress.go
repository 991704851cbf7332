package message

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
)

// DefaultCompressLevel is the zlib level RocketMQ producers use by default.
const DefaultCompressLevel = 5

// Compress returns body compressed as a zlib stream (RFC 1950), the format of
// bodies flagged SysFlagCompressed. level is a compress/zlib level
// (zlib.HuffmanOnly..zlib.BestCompression, or zlib.DefaultCompression); an
// invalid level fails with ErrCompress.
func Compress(body []byte, level int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(body)/2 + 64)
	w, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompress, err)
	}
	if _, err := w.Write(body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompress, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCompress, err)
	}
	return buf.Bytes(), nil
}

// Decompress inflates the zlib stream b. It never produces more than maxSize
// bytes (DefaultMaxBodySize if maxSize <= 0): a larger result fails with
// ErrDecompressedTooLarge, so a small hostile input cannot exhaust memory.
// Input that is not a complete zlib stream fails with ErrBadCompressed.
func Decompress(b []byte, maxSize int) ([]byte, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxBodySize
	}
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCompressed, err)
	}
	defer r.Close()
	var out bytes.Buffer
	out.Grow(min(max(len(b)*4, 512), maxSize))
	n, err := out.ReadFrom(io.LimitReader(r, int64(maxSize)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCompressed, err)
	}
	if n > int64(maxSize) {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrDecompressedTooLarge, maxSize)
	}
	return out.Bytes(), nil
}

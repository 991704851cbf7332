package message

import "errors"

// Errors returned by the record codec. They are always wrapped with context
// (fmt.Errorf with %w); test for them with errors.Is.
var (
	// ErrTruncated means the input is shorter than the record it starts with
	// claims to be (or shorter than the 8-byte size and magic header). At the
	// end of a commit log this is a torn tail.
	ErrTruncated = errors.New("message: record truncated")
	// ErrBadMagic means the magic code is neither V1 nor the blank filler.
	// Records with the V2 magic (RocketMQ 5.1+, 2-byte topic length) are
	// reported with this error too: Ferry reads and writes V1 only.
	ErrBadMagic = errors.New("message: bad record magic")
	// ErrBlank means the input starts with a blank (end-of-segment filler)
	// header rather than a record; see MagicBlank.
	ErrBlank = errors.New("message: blank end-of-segment filler")
	// ErrSizeMismatch means TOTALSIZE disagrees with the size recomputed from
	// the record's length fields.
	ErrSizeMismatch = errors.New("message: record size mismatch")
	// ErrCorrupt means a field holds a value no valid record can hold (a
	// negative length, a topic length above 127, a port outside 0..65535).
	ErrCorrupt = errors.New("message: corrupt record field")
	// ErrCRC means the stored BODYCRC does not match the body.
	ErrCRC = errors.New("message: body CRC mismatch")

	// ErrShortBuffer means the destination slice cannot hold the encoding.
	ErrShortBuffer = errors.New("message: destination buffer too short")
	// ErrTopicTooLong means a topic exceeds MaxTopicLength bytes.
	ErrTopicTooLong = errors.New("message: topic too long")
	// ErrTopicEmpty means a message has no topic.
	ErrTopicEmpty = errors.New("message: empty topic")
	// ErrPropertiesTooLong means encoded properties exceed
	// MaxPropertiesLength bytes.
	ErrPropertiesTooLong = errors.New("message: properties too long")
	// ErrBodyTooLarge means a body exceeds the applicable maximum size.
	ErrBodyTooLarge = errors.New("message: body too large")
	// ErrBodyEmpty means a producer message has no body.
	ErrBodyEmpty = errors.New("message: empty body")

	// ErrInvalidProperty means a property key or value cannot be encoded: the
	// key is empty, or the key or value contains a 0x01 or 0x02 separator.
	ErrInvalidProperty = errors.New("message: invalid property")

	// ErrBadMsgID means a string is not a valid offset message id.
	ErrBadMsgID = errors.New("message: bad offset message id")

	// ErrCompress means zlib compression failed (for example an invalid
	// level).
	ErrCompress = errors.New("message: compression failed")
	// ErrBadCompressed means the input is not a valid zlib stream.
	ErrBadCompressed = errors.New("message: invalid compressed body")
	// ErrDecompressedTooLarge means a compressed body inflates to more than
	// the allowed maximum.
	ErrDecompressedTooLarge = errors.New("message: decompressed body too large")
)

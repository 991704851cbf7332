// Package message is Ferry's message model and the RocketMQ V1 commit-log
// record codec.
//
// The V1 record (magic 0xDAA320A7) is both the commit-log storage format and
// the pull wire format: a pull response body is stored records laid end to
// end, and the official RocketMQ clients decode it with the same layout. The
// encoder therefore writes straight into a caller-provided slice (a mapped
// commit-log segment) and the decoder aliases its input, so neither allocates
// per message. The byte layout is drawn in record.go above the codec.
//
// The package also holds the helpers every other layer needs at the byte
// level:
//
//   - properties: the "key 0x01 value 0x02" encoding, with allocation-free
//     lookup in raw bytes for the store's dispatch path;
//   - tags hash: Java String.hashCode over UTF-16 code units, the tags code kept
//     in consume-queue units;
//   - message ids: offset message ids (store host and commit-log offset) and a
//     UNIQ_KEY generator;
//   - zlib compression of bodies, with a bounded decompressor;
//   - a small producer-side Message type.
//
// The package depends only on the standard library, has no package-level
// mutable state and no init function; everything is safe for concurrent use
// unless a type's documentation says otherwise.
package message

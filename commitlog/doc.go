// Package commitlog is Ferry's commit log: one append-only byte stream of RocketMQ V1
// message records, split into fixed-size memory-mapped segment files.
//
// # Layout
//
// All segments live in one directory (Options.Dir) and have the same size
// (Options.SegmentSize, 1 GiB by default). A segment's name is the physical offset of its
// first byte printed as 20 zero-padded decimal digits, so names of adjacent segments
// differ by exactly the segment size:
//
//	00000000000000000000   bytes [0, S)
//	00000000001073741824   bytes [S, 2S)        (S = 1 GiB)
//	00000000002147483648   bytes [2S, 3S)
//
// A physical offset is a byte position in the concatenation of all segments. Every record
// is a message.Record in the V1 layout (drawn in package message); its PHYSICALOFFSET field
// is its own position. A record never spans two segments: before appending L bytes (one
// record or a whole batch) into a segment with R bytes left, if L+8 > R the log writes a
// blank filler and continues at the start of the next segment. The filler is
//
//	 0        4        8                                  R
//	+--------+--------+-----------------------------------+
//	| R      | BLANK  | untouched (zeros in a new file)   |
//	| int32  | MAGIC  |                                   |
//	+--------+--------+-----------------------------------+
//
// with BLANK MAGIC = 0xCBD43194 (message.MagicBlank), big-endian. So every full segment
// ends with a blank record of at least 8 bytes, and a record never ends exactly at a
// segment end. These rules and the naming are part of the on-disk format shared with
// RocketMQ 4.x; do not change them.
//
// # Guarantees
//
//   - Append assigns the physical offset, the queue offset (from the log's topic-queue
//     table, under the same lock as the physical append, so queue offsets increase in
//     physical order per queue) and a store timestamp that never decreases, and encodes
//     the record straight into the mapped segment (through a write window, see
//     appendBytesLocked) — except a FlushSync append that waits,
//     which is encoded into the stage that the group-commit flusher writes out with one
//     write(2) just before its sync, and a FlushAsync append of a page or more, which is
//     encoded into the stage and written out with one pwrite(2) before Append returns
//     (stage.go explains why). Only records whose
//     transaction type is NOT or COMMIT consume queue offsets; PREPARED and ROLLBACK
//     records get 0.
//   - Bytes below MaxOffset are complete records (or fillers) and never change while the
//     log is open; readers see them without locks. Bytes below FlushedOffset are durable.
//   - In FlushSync mode an Append with wait=true returns PutOK only once its bytes are
//     durable (group commit: one flusher goroutine syncs for every waiting appender).
//   - A failed Sync (or write-out of the stage) is sticky: the flushed offset stops, every later waiter and Flush get
//     the error (after an msync failure the kernel may have dropped the dirty pages, so a
//     retry that "succeeds" would prove nothing).
//   - Recover scans from a record boundary, validates each record, zeroes everything after
//     the last valid one and deletes later segments, so a torn tail disappears and stale
//     bytes can never be resurrected by a later recovery. With a high-water file
//     (Options.HighWaterPath) it zeroes only up to the durable high-water mark, beyond
//     which nothing was ever written (highwater.go), so its cost does not grow with the
//     segment size.
//   - Segments are reference counted: a View keeps its segment mapped even after the
//     segment is deleted, until Release (or DestroyTimeout, after which it is unmapped).
//
// # Concurrency
//
// Lock order: closing (RWMutex; held shared by every mutating call, exclusively by Close)
// → mu (writer lock: write position, current segment, queue table) → listMu (segment list
// changes) → alloc / pending / gc / flushMu / hw (leaf locks). Readers take no lock: they load
// the published write position and the copy-on-write segment list atomically.
//
// Goroutines, all started through Log.goTracked and stopped by Close: one flusher (the
// periodic flusher in FlushAsync mode, the group-commit flusher in FlushSync mode) and
// one service goroutine that preallocates (and, with Options.PrefaultSegments, pre-faults)
// the next segment, raises the high-water mark ahead of the writer and force-unmaps
// deleted segments whose readers outlive DestroyTimeout.
//
// # Departures from RocketMQ
//
//   - Recovery also rejects a record whose non-empty properties do not end with 0x02 or
//     whose topic is empty or holds a NUL byte: V1 checksums only the body, so without
//     this a write torn inside the properties would be accepted. Append enforces the same
//     rules (every RocketMQ writer already follows them).
//   - Recovery zeroes the tail of the last segment (up to the high-water mark) instead of
//     only moving positions, so a later crash cannot resurrect records that were cut off.
//   - A Sync failure is sticky (see FlushError) rather than retried.
//   - Pre-faulting reads the next segment instead of writing zeros into it: no extra disk
//     writes, and no mlock.
package commitlog

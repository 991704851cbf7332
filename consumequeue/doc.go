// Package consumequeue is Ferry's consume queue: for every topic and queue id, a dense array
// of fixed-size units that point into the commit log, addressed by the logical (queue)
// offset. It is the RocketMQ 4.x "ConsumeQueue" on disk, so a RocketMQ store directory is
// readable and vice versa.
//
// # Files
//
// Units live under <Root>/<topic>/<queueId>/ in segment files of Options.UnitsPerFile units
// (300,000 by default, 6,000,000 bytes). A segment is named by the byte offset of its first
// unit, printed as 20 zero-padded decimal digits, so unit k (queue offset k) is at byte
// k×20 of the logical concatenation of the segments. Segments are created zero-filled; the
// first unit that is not valid (see format.go) ends the queue. The unit layout is drawn in
// format.go, directly above its codec.
//
// A segment is created sparse, at its full size but without disk blocks
// (mmap.FS.OpenMappedSparse), so a queue that holds one unit takes one page of disk, not
// 6 MB. The writer allocates blocks ahead of itself with an mmap.Grower (4 KiB first, then
// chunks as large as what is already allocated, up to 1 MiB) before it writes a unit into
// a page, so a full disk is an error from Append (matching mmap.ErrNoSpace) rather than a
// SIGBUS; nothing is written then and the same Append may be retried. Holes read as zeros,
// which is the end-of-queue marker, so recovery reads a sparse tail correctly; zeroing a
// torn or truncated tail writes only the words that are not zero, so it never writes into
// a hole. After Open, the pages below a queue's last unit are known to have blocks (each
// holds units), and allocation resumes at the end of the data.
//
// # Writers and readers
//
// One dispatcher goroutine appends units (Queue.Append) in queue-offset order; appends are
// idempotent so that re-dispatching a stretch of the commit log after a crash is harmless.
// Any number of pull workers read concurrently (Queue.Read, Queue.Get, Queue.OffsetByTime).
// The next offset to write is published atomically after the unit's bytes are in place, and
// readers only look at units below it, so readers never see a half-written unit. Readers
// never allocate.
//
// # Durability and recovery
//
// Flush makes every appended unit durable and is meant to be called by the store's flusher.
// On Open each queue is recovered: the newest segments are scanned, the first invalid unit
// (zero, negative, or pointing backwards in the commit log) ends the queue, and everything
// after it is zeroed and made durable, so no stale unit can come back after a later crash.
// Units written after the last Flush may be torn by a crash (a unit can straddle a page), so
// after an unclean shutdown the store must call TruncateByPhysical with its checkpoint (the
// commit-log offset below which all queues were flushed, or the recovered end of the commit
// log if that is lower) before it re-dispatches from there.
//
// # Locking
//
// Each Queue has three locks, always taken in this order: w (serializes writers: Append,
// SetMinOffset, TruncateByPhysical, DeleteBefore, Recover, Close), fl (serializes Flush and
// owns the durable mark), seg (a RWMutex over the segment list and the mappings: readers hold
// it shared; writers hold it exclusively only while they add, remove or zero segments). Store
// has one RWMutex over its topic map, never held while a Queue lock is taken.
//
// The package starts no goroutines and has no package-level mutable state.
package consumequeue

// Package index is Ferry's key index: hash-slot files that map "topic#key" to the
// commit-log offsets of the messages carrying that key, queried within a store-time window.
// The files are RocketMQ 4.x index files (index/<yyyyMMddHHmmssSSS>, named by their local
// creation time), so a RocketMQ store directory is readable and vice versa; the layout is
// drawn in format.go, directly above its codec.
//
// # Writing
//
// The store's dispatcher calls Put for every key of every record, in commit-log order. An
// entry goes to the newest file; a full file is sealed and a new one created. Entries are
// written into the mapped file at once, but the slot table and the header on disk are only
// written by Flush: between flushes the newest file's slot heads and header live in memory
// (a shadow of the slot table), and Query reads them from there.
//
// # Disk space
//
// A file is created sparse, at its full size (420,000,040 bytes by default, so names,
// offsets and layout are RocketMQ's) but without disk blocks (mmap.FS.OpenMappedSparse);
// space is allocated before anything is written into it, so that a full disk is an error
// from Put (matching mmap.ErrNoSpace, with nothing written) and never a SIGBUS from a
// store into the mapping:
//
//   - the header's page when the file is created;
//   - the entry area ahead of the next entry, in chunks (mmap.Grower: 4 KiB first, then
//     as much as is already allocated, up to 1 MiB), by Put;
//   - the 4 KiB page holding a key's hash slot, by Put, the first time a slot on that
//     page is used (a bitmap per file remembers which pages have blocks), although the
//     slot itself is written by Flush; Flush writes only slots that change, so a slot
//     page nobody used stays a hole.
//
// A file with k keys therefore takes about 4 KiB + 20·k bytes of entries plus one page per
// distinct slot page its keys hash to: at most 4 KiB per key, and never more than the 20 MB
// slot table, instead of 420 MB from the first key. Allocating the whole slot table up
// front would cost 20 MB per file whatever the key count; allocating slot pages on demand
// costs one fallocate per new slot page (at most 4,883 per file with default sizes).
// Holes read as zeros, which mean "empty slot" and "no entry", so queries and recovery
// read a sparse file as they read a zero-filled one. After Open, the entry area below the
// entry count is known to have blocks (it holds entries); slot pages are allocated again
// (a no-op on disk) the first time they are written.
//
// # Crash completeness
//
// Unlike RocketMQ, which may lose index entries on kill -9, the index comes back complete
// after any crash, given this protocol with the store:
//
//  1. The store notes its dispatch position D (every record below D has been Put), calls
//     Flush, and after Flush returns nil persists D as its index checkpoint.
//  2. After a crash it calls TruncateAfter(checkpoint) and re-dispatches from there.
//
// Flush writes in this order: the new entries (synced), then the changed slot heads
// (synced), then the header (synced). So on disk a slot head never points at an entry that
// is not durable, and the header's entry count never covers one. After a crash the header
// may be older than the slot table; opening a file therefore repairs every slot head at or
// above the header's count by walking back along the (durable) prevIndex chain until it is
// below the count, and writes the repaired heads back before anything new is written.
// TruncateAfter(phy) works the same way: it deletes the newest files that begin at or after
// phy, sets the count of the newest remaining file to its first entry at or after phy (a
// binary search: entries are in commit-log order), walks every slot head back below the new
// count, and makes slots and header durable before returning. Nothing ever follows a link
// from a removed entry, so re-Put entries overwrite removed ones safely, and TruncateAfter
// followed by re-dispatch gives exactly the index an uninterrupted run would have built.
//
// A header that does not agree with its entries (torn or garbage: count out of range,
// begin/end offsets that are not those of the first/last entry) is rebuilt by scanning the
// entries up to the first one that cannot follow the previous. Queries never trust a file:
// every slot head and link is range-checked, and a chain only goes to lower entry numbers,
// so a corrupt file yields wrong or missing results but never a panic or a loop.
//
// # Differences from RocketMQ
//
//   - Put ignores a key it already holds for the same physical offset (re-dispatch) and
//     Query never returns the same offset twice.
//   - Entry times have a resolution of one second (timeDiff); Query keeps an entry when its
//     second overlaps [begin, end], so a window need not be widened by a second (#5174).
//     Collisions are still returned (or filtered by QueryFunc's match).
//   - A file's endTimestamp never goes backwards, and file names are strictly increasing
//     even if the clock is not.
//
// # Locking
//
// flushMu serializes everything that writes the mapped slot tables or headers (Flush,
// TruncateAfter, DeleteBefore, Close); mu (a RWMutex) guards the file list, the in-memory
// headers, shadows and entry writes. Order: flushMu before mu. Put takes only mu; Query
// takes mu shared. The package starts no goroutines and has no package-level mutable state.
package index

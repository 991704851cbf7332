package mmap

import "fmt"

// Chunk sizes of a Grower: its first allocation is GrowMinChunk bytes, and each later one
// is as large as everything it allocated before, up to GrowMaxChunk. So a file that gets
// one small write costs one page, a file written through costs about log2(size/4 KiB)
// fallocate calls plus one per MiB, and no more than GrowMaxChunk (or as much as was
// written, if that is less) is allocated ahead of the writer.
const (
	GrowMinChunk = 4 << 10
	GrowMaxChunk = 1 << 20
)

// Grower allocates the blocks of a sparse file (FS.OpenMappedSparse) ahead of an append
// position, in chunks that grow with the file (see GrowMinChunk), so an appender only has
// to say how far it is about to write. It is not safe for concurrent use: it belongs to
// the file's single writer.
type Grower struct {
	m     Mapped
	start int64 // where this grower began allocating
	end   int64 // [start, end) is allocated; the owner vouches for what is below start
}

// NewGrower returns a Grower for m whose first allocation starts at from. Everything the
// owner writes below from must already have blocks: from is 0 (or the start of the region
// it appends to) for a new file, and the end of the written data for a file reopened
// after a run or a crash, since every page that holds written data has its block (data
// cannot reach the page cache of a mapped file, nor the disk, without one).
func NewGrower(m Mapped, from int64) Grower {
	from = min(max(from, 0), m.Size())
	return Grower{m: m, start: from, end: from}
}

// Ensure makes sure [from, to) is allocated (to is clamped to the file size): when to is
// past the allocated end, it allocates the next chunk, which covers to. On failure (an
// error matching ErrNoSpace when the disk is full) nothing is written and the allocated
// end does not move, so a later Ensure retries.
func (g *Grower) Ensure(to int64) error {
	size := g.m.Size()
	to = min(to, size)
	if to <= g.end {
		return nil
	}
	chunk := min(max(g.end-g.start, GrowMinChunk), GrowMaxChunk)
	end := max(to, g.end/GrowMinChunk*GrowMinChunk+chunk) // chunk counts from a page start
	end = min((end+GrowMinChunk-1)/GrowMinChunk*GrowMinChunk, size)
	if err := g.m.Allocate(g.end, end-g.end); err != nil {
		return fmt.Errorf("mmap: grow %s to %d bytes: %w", g.m.Path(), end, err)
	}
	g.end = end
	return nil
}

// End is the end of the allocated region: writes below it need no Ensure.
func (g *Grower) End() int64 { return g.end }

package commitlog

import "fmt"

// The stage.
//
// Records are encoded into a staging buffer under the writer lock instead of into the
// mapping, and written to the segment with pwrite(2); readers keep using the mapping,
// which shows the page cache the write filled.
//
// A FlushSync appender that waits for durability does not need its records to be
// readable before they are flushed, so the group-commit flusher writes the whole stage
// out with one write(2) just before it syncs. A FlushAsync append (and a FlushSync one
// that does not wait) drains the stage itself before it returns, so its records are in
// the page cache (and survive a crash of the process) when Append returns; FlushAsync
// uses the stage only for appends of at least asyncStageMin bytes. Two costs leave
// the writer lock this way: the page faults of writing into fresh pages of the mapping,
// and the write-protect faults and TLB shootdowns that every msync of pages dirtied
// through a writable mapping causes on the next write. Measured with pprof on a 2-vCPU
// VM (see docs/benchmarks.md), the writer lock's CPU per 1 KiB append fell from about
// 7 µs to about 0.5 µs, which is what lets a group-commit cohort re-register within one
// flush.
//
// Invariants, under the writer lock: the stage holds exactly the bytes [wrote, pos), all
// inside the current segment; it is drained (written out and published by advancing
// wrote) before the log moves to the next segment, before every flush, at Close, when it
// reaches stageLimit and for every append that does not wait (its records must be
// readable when Append returns). Readers only ever see bytes below wrote, so staged
// records are invisible until drained, and nothing below wrote ever changes.

// stageLimit is the stage size at which the appender drains it itself instead of
// leaving it to the flusher; larger batches bypass the stage.
const stageLimit = 1 << 20

// useStage reports whether an append of total bytes goes through the stage.
func (l *Log) useStage(total int64) bool {
	if total > stageLimit {
		return false
	}
	if l.opts.FlushMode == FlushSync {
		return !l.opts.MappedSyncAppends
	}
	return !l.opts.MappedAsyncAppends && total >= asyncStageMin
}

// asyncStageMin is the smallest FlushAsync append that goes through the stage; smaller
// ones are encoded into the mapping. A pwrite(2) has a fixed cost (measured at 6–9 µs of
// CPU for 1 KiB on ext4 in a 2-vCPU VM, against about 2 µs for the mapped copy of a lone
// 1 KiB record) that only appends of a page or more earn back: from 4 KiB on, the
// pwrite path cost 1–2.7 µs per 1 KiB record against 4.4–5.4 µs mapped
// (BenchmarkAppendAsyncPath, cpu-ns/msg).
const asyncStageMin = PageSize

// drainsAtOnce reports whether an append through the stage drains it before returning:
// FlushAsync appends and FlushSync appends that do not wait must be readable (and in the
// page cache) when Append returns.
func (l *Log) drainsAtOnce(wait bool) bool {
	return !wait || l.opts.FlushMode == FlushAsync
}

// growStage extends the stage by n bytes and returns them. The caller holds mu, has
// checked useStage and drained a stage that n would take past stageLimit.
func (l *Log) growStage(n int64) []byte {
	old := len(l.mu.stage)
	if need := old + int(n); need > cap(l.mu.stage) {
		grown := make([]byte, old, max(need, 2*cap(l.mu.stage), 64<<10))
		copy(grown, l.mu.stage)
		l.mu.stage = grown
	}
	l.mu.stage = l.mu.stage[:old+int(n)]
	return l.mu.stage[old:]
}

// drainLocked writes the stage into the current segment and publishes it. A write
// failure is sticky like a Sync failure (the segment now has a hole below the write
// position): it is returned by this and every later drain and flush. The caller holds mu.
func (l *Log) drainLocked() error {
	if len(l.mu.stage) == 0 {
		return nil
	}
	if err := l.FlushError(); err != nil {
		return err
	}
	from := l.wrote.Load()
	seg := l.mu.cur
	if err := seg.m.WriteAt(l.mu.stage, from-seg.start); err != nil {
		return l.fail(fmt.Errorf("%w: write segment %s at %d: %w", ErrFlushFailed, seg.name, from, err))
	}
	l.mu.stage = l.mu.stage[:0]
	l.wrote.Store(l.mu.pos)
	l.lastTS.Store(l.mu.lastTS) // after wrote: see flushAll
	return nil
}

// drain drains the stage under the writer lock.
func (l *Log) drain() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drainLocked()
}

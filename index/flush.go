package index

import (
	"errors"
	"fmt"
	"path/filepath"
)

// flushJob is one file's share of a flush, snapshotted under mu.
type flushJob struct {
	f        *file
	from, to int32
	slots    []slotValue
	h        header
	seal     bool // not the newest file: done for good once persisted
}

// Flush makes every Put that returned before Flush was called durable: new entries, then
// changed slot heads, then headers, file by file, oldest first. A sealed (full) file leaves
// memory once it is durable. The store persists its index checkpoint after Flush returns
// (see the package doc).
func (x *Index) Flush() error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	return x.flushLocked()
}

// flushLocked is Flush; the caller holds flushMu.
func (x *Index) flushLocked() error {
	x.mu.Lock()
	if x.mu.closed {
		x.mu.Unlock()
		return nil
	}
	var jobs []flushJob
	for i, f := range x.mu.files {
		if f.shadow == nil {
			continue // everything is in the mapping and durable
		}
		jobs = append(jobs, flushJob{
			f: f, from: f.synced, to: f.h.count, slots: f.takeDirty(), h: f.h,
			seal: i < len(x.mu.files)-1,
		})
	}
	x.mu.Unlock()

	for i, j := range jobs {
		if err := j.f.persist(j.from, j.to, j.slots, j.h); err != nil {
			// Give the slot heads not known to be durable back to the next flush.
			x.mu.Lock()
			for _, j := range jobs[i:] {
				if j.f.shadow != nil {
					for _, sv := range j.slots {
						j.f.setSlot(int64(sv.slot), j.f.shadow[sv.slot])
					}
				}
			}
			x.mu.Unlock()
			return err
		}
		if j.seal {
			x.mu.Lock()
			j.f.shadow, j.f.dirty, j.f.dirtyBit = nil, nil, nil
			x.mu.Unlock()
		}
	}
	return nil
}

// TruncateAfter removes every entry whose physical offset is ≥ phy, so that the store can
// re-dispatch from phy (its index checkpoint, or the recovered end of the commit log if
// lower): newest files that begin at or after phy are deleted, the newest remaining file's
// entry count drops to its first entry at or after phy, and every slot head that pointed at
// a removed entry is walked back along its chain. The result is durable when TruncateAfter
// returns.
func (x *Index) TruncateAfter(phy int64) error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	if err := x.truncateLocked(phy); err != nil {
		return err
	}
	return x.flushLocked()
}

// truncateLocked does TruncateAfter's work in memory and deletes the dropped files; the
// caller holds flushMu and flushes afterwards.
func (x *Index) truncateLocked(phy int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.closed {
		return ErrClosed
	}
	files := x.mu.files
	var drop []*file
	for n := len(files); n > 0; n-- {
		if f := files[n-1]; f.h.count > 1 && f.h.beginPhy < phy {
			break
		}
		drop = append(drop, files[n-1])
		files = files[:n-1]
	}
	x.mu.files = files
	if err := x.removeFiles(drop); err != nil || len(files) == 0 {
		return err
	}
	f := files[len(files)-1]
	if k := f.searchPhy(phy); k < f.h.count {
		f.ensureShadow()
		used := int32(0)
		for s := range f.slotNum {
			if v := f.shadow[s]; v >= k {
				f.setSlot(s, f.walkBack(v, k))
			}
			if f.shadow[s] != 0 {
				used++
			}
		}
		last := f.entry(k - 1)
		f.h.count, f.h.slotCount, f.h.endPhy = k, used, last.phy
		f.h.endTs = min(f.h.endTs, last.time(f.h.beginTs)+999)
		f.synced = min(f.synced, k)
	}
	if f.h.count < x.maxEnt {
		f.ensureShadow() // it takes the next entries
	}
	return nil
}

// DeleteBefore deletes the oldest files whose newest entry points below phy (the commit
// log's minimum offset after cleanup), never the newest file, and returns how many it
// deleted.
func (x *Index) DeleteBefore(phy int64) (int, error) {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	x.mu.Lock()
	if x.mu.closed {
		x.mu.Unlock()
		return 0, ErrClosed
	}
	files := x.mu.files
	n := 0
	for n < len(files)-1 && files[n].h.endPhy < phy {
		n++
	}
	drop := files[:n]
	x.mu.files = files[n:]
	x.mu.Unlock()
	return n, x.removeFiles(drop)
}

// removeFiles unmaps and deletes files (already out of the list) and syncs the directory.
// The caller holds flushMu.
func (x *Index) removeFiles(files []*file) error {
	if len(files) == 0 {
		return nil
	}
	err := closeFiles(files)
	for _, f := range files {
		err = errors.Join(err, x.fs.Remove(filepath.Join(x.opts.Dir, f.name)))
	}
	err = errors.Join(err, x.fs.SyncDir(x.opts.Dir))
	if err != nil {
		return fmt.Errorf("index: remove files: %w", err)
	}
	return nil
}

// Close flushes and unmaps every file. Later calls do nothing; other methods return
// ErrClosed (Flush returns nil).
func (x *Index) Close() error {
	x.flushMu.Lock()
	defer x.flushMu.Unlock()
	err := x.flushLocked()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.closed {
		return nil
	}
	x.mu.closed = true
	err = errors.Join(err, closeFiles(x.mu.files))
	x.mu.files = nil
	return err
}

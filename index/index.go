package index

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Index is the set of index files in one directory, oldest first. It is safe for
// concurrent use: one dispatcher Puts while any number of queries run.
type Index struct {
	opts     Options
	fs       mmap.FS
	slotNum  int64
	maxEnt   int32
	fileSize int64

	flushMu sync.Mutex // see the package doc: taken before mu
	mu      struct {
		sync.RWMutex
		files    []*file
		closed   bool
		dirReady bool // Dir exists and its entry is durable
	}
}

// FileInfo describes one index file (its live header).
type FileInfo struct {
	// Name is the file name (local creation time, yyyyMMddHHmmssSSS).
	Name string
	// BeginTimestamp and EndTimestamp are the store times (ms) of the first and newest
	// entries.
	BeginTimestamp, EndTimestamp int64
	// BeginPhyOffset and EndPhyOffset are the commit-log offsets of the first and newest
	// entries.
	BeginPhyOffset, EndPhyOffset int64
	// HashSlotCount is the number of slots in use.
	HashSlotCount int32
	// IndexCount is the next entry number (entries are numbered from 1).
	IndexCount int32
}

// Open validates opts and loads the index files in opts.Dir, checking and repairing each
// (see the package doc). Files whose name is not a creation time are ignored; a newest file
// of the wrong size (a crash while creating it) is deleted.
func Open(opts Options) (*Index, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	x := &Index{
		opts:     opts,
		fs:       opts.fs(),
		slotNum:  int64(opts.SlotNum),
		maxEnt:   int32(opts.MaxEntries),
		fileSize: opts.FileSize(),
	}
	names, err := x.fs.ReadDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("index: open: %w", err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { _, ok := parseFileName(n); return !ok })
	var files []*file
	for i, name := range names {
		f, err := x.openFile(name, i == len(names)-1)
		if err != nil {
			return nil, errors.Join(err, closeFiles(files))
		}
		if f != nil {
			files = append(files, f)
		}
	}
	if n := len(files); n > 0 && files[n-1].h.count < x.maxEnt {
		files[n-1].ensureShadow()
	}
	x.mu.files = files
	return x, nil
}

// openFile maps and loads an existing file; a wrongly sized newest file is removed (nil).
func (x *Index) openFile(name string, newest bool) (*file, error) {
	path := filepath.Join(x.opts.Dir, name)
	size, err := x.fs.Size(path)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if size != x.fileSize {
		if newest && size < x.fileSize {
			if err := x.fs.Remove(path); err != nil {
				return nil, fmt.Errorf("index: remove partial file: %w", err)
			}
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s has %d bytes, want %d (slot or entry count changed?)", ErrCorrupt, name, size, x.fileSize)
	}
	m, err := x.fs.OpenMappedSparse(path, x.fileSize, false)
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	f := x.newFile(name, m)
	if err := f.load(); err != nil {
		return nil, errors.Join(err, f.close())
	}
	// Every page below the first free entry holds entries, so it has its blocks (see
	// mmap.NewGrower); the entry area grows from there.
	f.entries = mmap.NewGrower(m, f.entryOffset(f.h.count))
	return f, nil
}

// newFile wraps a mapped file; the caller sets f.entries.
func (x *Index) newFile(name string, m mmap.Mapped) *file {
	created, _ := parseFileName(name)
	pages := (HeaderSize + x.slotNum*SlotSize + allocPage - 1) / allocPage
	return &file{name: name, created: created, m: m, b: m.Bytes(), slotNum: x.slotNum, maxEnt: x.maxEnt,
		metaPages: make([]atomic.Uint64, (pages+63)/64)}
}

// createLocked creates a new newest file seeded with the previous file's end (RocketMQ
// does the same, so that Put's duplicate check works across the roll). The caller holds
// mu.
func (x *Index) createLocked() (*file, error) {
	t := x.opts.now().Truncate(time.Millisecond)
	var seed header
	if n := len(x.mu.files); n > 0 {
		prev := x.mu.files[n-1]
		if !t.After(prev.created) {
			t = prev.created.Add(time.Millisecond) // names must increase
		}
		seed = header{beginTs: prev.h.endTs, endTs: prev.h.endTs, beginPhy: prev.h.endPhy, endPhy: prev.h.endPhy}
	}
	seed.count = 1
	name := fileName(t)
	path := filepath.Join(x.opts.Dir, name)
	if !x.mu.dirReady {
		if err := x.fs.MkdirAll(x.opts.Dir); err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		if err := x.fs.SyncDir(filepath.Dir(x.opts.Dir)); err != nil {
			return nil, fmt.Errorf("index: %w", err)
		}
		x.mu.dirReady = true
	}
	if ok, err := x.fs.Exists(path); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	} else if ok {
		if err := x.fs.Remove(path); err != nil { // a leftover: never reuse its contents
			return nil, fmt.Errorf("index: %w", err)
		}
	}
	m, err := x.fs.OpenMappedSparse(path, x.fileSize, true)
	if err != nil {
		return nil, fmt.Errorf("index: create file: %w", err)
	}
	f := x.newFile(name, m)
	f.entries = mmap.NewGrower(m, f.entryOffset(0))
	if err := f.allocMeta(0); err != nil { // the header's page
		return nil, errors.Join(fmt.Errorf("index: create file: %w", err), m.Close(), x.fs.Remove(path))
	}
	if err := x.fs.SyncDir(x.opts.Dir); err != nil {
		return nil, errors.Join(fmt.Errorf("index: %w", err), m.Close(), x.fs.Remove(path))
	}
	f.created = t
	f.h = seed
	f.synced = 1
	// A new file's slots are all empty: no need to read them (ensureShadow would fault
	// in the whole 20 MB table of the sparse file to learn that).
	f.shadow, f.dirtyBit = make([]int32, f.slotNum), make([]uint64, (f.slotNum+63)/64)
	x.mu.files = append(x.mu.files, f)
	return f, nil
}

// dupTail is how many trailing entries Put checks for a key it already holds.
const dupTail = 64

// Put indexes key (already "topic#key", see BuildKey) for the record at phyOffset stored at
// storeTimestamp (ms). Records must be Put in commit-log order: a phyOffset below the newest
// file's end is a re-dispatch and is ignored, and so is a key hash already indexed for the
// same offset. A full file is sealed and a new one created.
func (x *Index) Put(key string, phyOffset, storeTimestamp int64) error {
	return x.PutHash(KeyHash(key), phyOffset, storeTimestamp)
}

// PutHash is Put for a key whose hash the caller computed with KeyHash or KeyHashBytes
// (the index stores only the hash), so a dispatcher building keys in a reused buffer
// allocates nothing.
func (x *Index) PutHash(hash int32, phyOffset, storeTimestamp int64) error {
	if phyOffset < 0 {
		return fmt.Errorf("%w: physical offset %d", ErrInvalid, phyOffset)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.closed {
		return ErrClosed
	}
	var f *file
	if n := len(x.mu.files); n > 0 {
		f = x.mu.files[n-1]
		if phyOffset < f.h.endPhy || (phyOffset == f.h.endPhy && x.holdsLocked(hash, phyOffset)) {
			return nil
		}
		if f.h.count >= x.maxEnt {
			f = nil
		}
	}
	if f == nil {
		var err error
		if f, err = x.createLocked(); err != nil {
			return err
		}
	}
	f.ensureShadow()
	if err := f.reserve(hash); err != nil {
		return err
	}
	f.add(hash, phyOffset, storeTimestamp)
	return nil
}

// holdsLocked reports whether the newest entries, which all index phy, include hash. The
// entries of one record may span a file roll; at most dupTail entries are checked.
func (x *Index) holdsLocked(hash int32, phy int64) bool {
	budget := dupTail
	for i := len(x.mu.files) - 1; i >= 0; i-- {
		f := x.mu.files[i]
		for n := f.h.count - 1; n >= 1; n-- {
			if budget--; budget < 0 {
				return false
			}
			e := f.entry(n)
			if e.phy != phy {
				return false
			}
			if e.hash == hash {
				return true
			}
		}
	}
	return false
}

// add appends an entry; the caller holds Index.mu and the file has room and a shadow.
func (f *file) add(hash int32, phy, ts int64) {
	s := int64(hash) % f.slotNum
	head := f.shadow[s]
	if head <= 0 || head >= f.h.count {
		head = 0
	}
	if f.h.count <= 1 {
		f.h.count, f.h.beginPhy, f.h.beginTs, f.h.endTs = 1, phy, ts, ts
	}
	n := f.h.count
	e := entry{hash: hash, phy: phy, timeDiff: timeDiff(ts, f.h.beginTs), prev: head}
	e.encode(f.entryBytes(n))
	f.setSlot(s, n)
	if head == 0 {
		f.h.slotCount++
	}
	f.h.count++
	f.h.endPhy, f.h.endTs = phy, max(f.h.endTs, ts)
}

// Query returns the physical offsets of up to maxNum records indexed under key whose store
// time overlaps [begin, end] (ms; entry times have one-second resolution), newest first,
// without duplicates. Hash collisions are included: the caller checks the records' keys, or
// uses QueryFunc.
func (x *Index) Query(key string, maxNum int, begin, end int64) ([]int64, error) {
	return x.QueryFunc(key, maxNum, begin, end, nil)
}

// QueryFunc is Query with a filter: an offset is returned only if match (when not nil)
// accepts it, and the walk goes on until maxNum accepted offsets are found, so collisions
// do not use up the budget. match runs under the index's read lock: it must be quick and
// must not call the Index.
func (x *Index) QueryFunc(key string, maxNum int, begin, end int64, match func(phy int64) bool) ([]int64, error) {
	if maxNum <= 0 || begin > end {
		return nil, nil
	}
	hash := KeyHash(key)
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.mu.closed {
		return nil, ErrClosed
	}
	var out []int64
	for i := len(x.mu.files) - 1; i >= 0 && len(out) < maxNum; i-- {
		f := x.mu.files[i]
		if f.h.count <= 1 {
			continue
		}
		if f.h.beginTs <= end && f.h.endTs >= begin {
			out = f.query(out, hash, maxNum, begin, end, match)
		}
		if f.h.beginTs < begin {
			break // older files end before this one begins
		}
	}
	return out, nil
}

// query walks one slot chain newest first, appending matches to out.
func (f *file) query(out []int64, hash int32, maxNum int, begin, end int64, match func(int64) bool) []int64 {
	count := f.h.count
	n := f.slot(int64(hash) % f.slotNum)
	for n > 0 && n < count && len(out) < maxNum {
		e := f.entry(n)
		t := e.time(f.h.beginTs)
		if t+999 < begin {
			break // the chain only gets older
		}
		if e.hash == hash && t <= end && !slices.Contains(out, e.phy) && (match == nil || match(e.phy)) {
			out = append(out, e.phy)
		}
		if e.prev >= n {
			break // corrupt link
		}
		n = e.prev
	}
	return out
}

// Files describes the index files, oldest first.
func (x *Index) Files() []FileInfo {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]FileInfo, len(x.mu.files))
	for i, f := range x.mu.files {
		out[i] = FileInfo{
			Name: f.name, BeginTimestamp: f.h.beginTs, EndTimestamp: f.h.endTs,
			BeginPhyOffset: f.h.beginPhy, EndPhyOffset: f.h.endPhy,
			HashSlotCount: f.h.slotCount, IndexCount: f.h.count,
		}
	}
	return out
}

// LastPhyOffset is the commit-log offset of the newest indexed record, false if none.
func (x *Index) LastPhyOffset() (int64, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for i := len(x.mu.files) - 1; i >= 0; i-- {
		if f := x.mu.files[i]; f.h.count > 1 {
			return f.h.endPhy, true
		}
	}
	return 0, false
}

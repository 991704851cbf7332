package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Epochs (controller mode). Every time the controller elects a master for a broker group
// it bumps the group's master epoch; the new master starts its epoch at the end of its
// commit log. A broker keeps the history of the epochs its log went through — epoch →
// offset where that epoch's writes begin — in its epoch file, so that two brokers can
// tell where their logs stop agreeing (ConsistentPoint) without comparing bytes: the log
// of an old master that wrote on after the new master took over, or of a slave that
// received such writes, is cut back to that point (store.Truncate) before it replicates
// from the new master.

// EpochFileName is the epoch file's name in the store directory.
const EpochFileName = "epoch"

// ErrEpochFileCorrupt means the epoch file does not decode: wrong magic, a length that
// does not match its entry count, a CRC mismatch (a torn or damaged file), or entries out
// of order. It is never ignored: a broker must not guess its history.
var ErrEpochFileCorrupt = errors.New("ha: epoch file is damaged")

// ErrEpochOrder means an entry (Append) or a history (Replace) breaks the rules: epochs
// at least 1 and strictly increasing, start offsets at least 0 and never decreasing.
var ErrEpochOrder = errors.New("ha: epoch entries out of order")

// EpochEntry says that from StartOffset on, the log was written by the master of Epoch
// (up to the next entry's StartOffset, or the end of the log for the last entry).
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// Epoch file layout (`<store dir>/epoch`, big-endian). These constants are part of the
// on-disk format.
//
//	 0  magic        8 B     "FERRYEP1"
//	 8  count        uint32  number of entries
//	12  entries      count × { epoch int32, startOffset int64 } (12 bytes each), ascending
//	 …  crc          uint32  IEEE CRC-32 of every byte before it
//
// Epochs are at least 1 and strictly increasing, start offsets at least 0 and never
// decreasing (an epoch whose master wrote nothing starts where the next one does). The
// file is replaced atomically (temp file, fsync, rename, directory fsync), so it is never
// torn; a file that is anyway (a copy cut short, a damaged disk) fails its length or CRC
// check and decodes to ErrEpochFileCorrupt. A missing file is an empty history.
const (
	epochMagic     = "FERRYEP1"
	epochHeader    = 12 // magic + count
	epochEntrySize = 12
	epochCRCSize   = 4
)

// encodeEpochs lays out entries in a fresh buffer.
func encodeEpochs(entries []EpochEntry) []byte {
	b := make([]byte, 0, epochHeader+len(entries)*epochEntrySize+epochCRCSize)
	b = append(b, epochMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// decodeEpochs reads an epoch file; every failure matches ErrEpochFileCorrupt.
func decodeEpochs(b []byte) ([]EpochEntry, error) {
	if len(b) < epochHeader+epochCRCSize || string(b[:len(epochMagic)]) != epochMagic {
		return nil, fmt.Errorf("%w: no header (%d bytes)", ErrEpochFileCorrupt, len(b))
	}
	n := uint64(binary.BigEndian.Uint32(b[len(epochMagic):]))
	if want := uint64(epochHeader) + n*epochEntrySize + epochCRCSize; uint64(len(b)) != want {
		return nil, fmt.Errorf("%w: %d entries need %d bytes, the file has %d", ErrEpochFileCorrupt, n, want, len(b))
	}
	body := b[:len(b)-epochCRCSize]
	if sum := binary.BigEndian.Uint32(b[len(body):]); sum != crc32.ChecksumIEEE(body) {
		return nil, fmt.Errorf("%w: crc mismatch", ErrEpochFileCorrupt)
	}
	entries := make([]EpochEntry, n)
	for i := range entries {
		p := body[epochHeader+i*epochEntrySize:]
		entries[i] = EpochEntry{Epoch: int32(binary.BigEndian.Uint32(p)), StartOffset: int64(binary.BigEndian.Uint64(p[4:]))}
	}
	if err := checkEpochs(entries); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEpochFileCorrupt, err)
	}
	return entries, nil
}

// checkEpochs reports the first entry that breaks the ordering rules (ErrEpochOrder).
func checkEpochs(entries []EpochEntry) error {
	for i, e := range entries {
		switch {
		case e.Epoch < 1 || e.StartOffset < 0:
			return fmt.Errorf("%w: entry %d is epoch %d at %d", ErrEpochOrder, i, e.Epoch, e.StartOffset)
		case i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset < entries[i-1].StartOffset):
			return fmt.Errorf("%w: entry %d (epoch %d at %d) follows epoch %d at %d",
				ErrEpochOrder, i, e.Epoch, e.StartOffset, entries[i-1].Epoch, entries[i-1].StartOffset)
		}
	}
	return nil
}

// EpochFile is a broker's epoch history, kept in the file EpochFileName of its store
// directory and replaced atomically on every change (the layout is drawn above
// encodeEpochs). A change is in memory only once it is durable: a failed write leaves the
// history (and the file) as it was. It is safe for concurrent use.
type EpochFile struct {
	fs   mmap.FS
	path string

	mu      sync.Mutex
	entries []EpochEntry // ascending; replaced, never modified in place
}

// OpenEpochFile reads the epoch file in dir (creating dir if needed) on fsys, the store's
// file system (store.Options.FS). A missing file is an empty history; a damaged one is an
// error matching ErrEpochFileCorrupt.
func OpenEpochFile(fsys mmap.FS, dir string) (*EpochFile, error) {
	if fsys == nil || dir == "" {
		return nil, errors.New("ha: OpenEpochFile needs a file system and a directory")
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("ha: epoch file: %w", err)
	}
	f := &EpochFile{fs: fsys, path: filepath.Join(dir, EpochFileName)}
	b, err := fsys.ReadFile(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("ha: read epoch file: %w", err)
	}
	if f.entries, err = decodeEpochs(b); err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	return f, nil
}

// Path is the file's path.
func (f *EpochFile) Path() string { return f.path }

// Entries returns the history, ascending (a copy).
func (f *EpochFile) Entries() []EpochEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.entries)
}

// Last returns the newest entry; false when the history is empty.
func (f *EpochFile) Last() (EpochEntry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.entries) == 0 {
		return EpochEntry{}, false
	}
	return f.entries[len(f.entries)-1], true
}

// Append adds an entry: a broker that becomes master of epoch e appends {e, its log's
// end} before it writes. The epoch must be above the last one and the offset not below
// the last start (ErrEpochOrder otherwise); appending the last entry again changes
// nothing (a master restarted within its epoch).
func (f *EpochFile) Append(e EpochEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.entries); n > 0 && f.entries[n-1] == e {
		return nil
	}
	next := append(slices.Clip(f.entries), e)
	if err := checkEpochs(next); err != nil {
		return err
	}
	return f.writeLocked(next)
}

// Replace makes entries the whole history (a slave adopts its master's history once its
// log is cut to the point where they agree). They must follow the ordering rules
// (ErrEpochOrder otherwise).
func (f *EpochFile) Replace(entries []EpochEntry) error {
	next := slices.Clone(entries)
	if err := checkEpochs(next); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.Equal(next, f.entries) {
		return nil
	}
	return f.writeLocked(next)
}

// TruncateFrom drops the entries that start at or after offset: their epochs wrote
// nothing that is left once the log is cut at offset. Entries before it stay (the last of
// them now ends at offset).
func (f *EpochFile) TruncateFrom(offset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := len(f.entries)
	for i > 0 && f.entries[i-1].StartOffset >= offset {
		i--
	}
	if i == len(f.entries) {
		return nil
	}
	return f.writeLocked(slices.Clone(f.entries[:i]))
}

// writeLocked replaces the file with next and, once that is durable, the history. When
// only the rename's directory sync failed the file is next already (a restart without a
// crash reads it), so the history follows it and the error is still returned.
func (f *EpochFile) writeLocked(next []EpochEntry) error {
	if err := f.fs.WriteFileAtomic(f.path, encodeEpochs(next)); err != nil {
		if errors.Is(err, mmap.ErrRenameNotDurable) {
			f.entries = next
		}
		return fmt.Errorf("ha: write epoch file: %w", err)
	}
	f.entries = next
	return nil
}

// ConsistentPoint returns the offset up to which a local log with history local and end
// localEnd agrees with a master's log with history master and end masterEnd: the end of
// the newest epoch both histories hold with the same start offset (the same master
// started it at the same point of the same log), taken as the lower of the two sides'
// ends for that epoch — an epoch ends where the next entry of that side starts, or at that
// side's log end (whichever is lower). It is 0 when the histories have no such epoch
// (empty histories included). A slave cuts its log to this point (store.Truncate) before
// it replicates from the master; every log position it returns is a record boundary of
// both logs (epoch starts and log ends are).
//
// Both histories are ascending (as Entries returns them). Epochs are assigned once by the
// controller, so an epoch both sides hold with different start offsets is not a common
// one: the search goes on to older epochs.
func ConsistentPoint(local []EpochEntry, localEnd int64, master []EpochEntry, masterEnd int64) int64 {
	for i := len(local) - 1; i >= 0; i-- {
		j := slices.IndexFunc(master, func(e EpochEntry) bool { return e.Epoch == local[i].Epoch })
		if j < 0 || master[j].StartOffset != local[i].StartOffset {
			continue
		}
		return max(min(epochEnd(local, i, localEnd), epochEnd(master, j, masterEnd)), 0)
	}
	return 0
}

// epochEnd is where entry i of history h ends in a log that ends at logEnd.
func epochEnd(h []EpochEntry, i int, logEnd int64) int64 {
	if i+1 < len(h) {
		return min(h[i+1].StartOffset, logEnd)
	}
	return logEnd
}

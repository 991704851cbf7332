package client

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/binread"
)

// Broadcasting offsets (WithBroadcasting). Every member of a broadcasting group consumes
// every queue, so each keeps its own offsets, in one file per group:
// <dir>/<group, path-escaped>.offsets. The table of offsets is updated by every commit
// (offsets.go) and written out after each commit round (every commit interval) when it
// changed, and on Close; it is read at Start.
//
// Writes are atomic: the new contents go to a temporary file in the same directory,
// which is fsynced, renamed over the file, and the directory fsynced, so after a crash
// the file holds either the old table or the new one. Temporary files a crash left
// behind are removed at Start. A file that does not decode — torn by a crash of the
// machine mid-write on a file system that reorders, corrupted, or of another group — is
// set aside as <file>.broken with a log line, and the consumer starts its queues where
// ConsumeFrom says, as if it had never consumed.

// Offsets file layout. All integers are big endian; strings are length-prefixed UTF-8.
// These constants and the layout are part of the file format: change them only with a
// new version.
//
//	+-------+---------+-----------+-------+-----------+
//	| magic | version | group len | group |   count   |   header
//	|  4 B  |   1 B   |  uint16   |       |  uint32   |
//	+-------+---------+-----------+-------+-----------+
//	| topic len | topic | broker len | broker | queue id | offset |   count entries,
//	|  uint16   |       |   uint16   |        |  int32   | int64  |   sorted by queue
//	+-----------+-------+------------+--------+----------+--------+
//	| CRC-32C (Castagnoli) of every byte before it, uint32 |            trailer
//	+------------------------------------------------------+
const (
	offsetsMagic   = "FRYO"
	offsetsVersion = 1
	offsetsExt     = ".offsets"
)

// errBadOffsets is wrapped by every decoding failure of an offsets file.
var errBadOffsets = errors.New("client: bad offsets file")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeOffsets encodes group's offsets in the file format.
func encodeOffsets(group string, offsets map[MessageQueue]int64) []byte {
	mqs := slices.SortedFunc(maps.Keys(offsets), compareQueues)
	b := make([]byte, 0, 16+len(group)+len(mqs)*64)
	b = append(b, offsetsMagic...)
	b = append(b, offsetsVersion)
	b = appendString16(b, group)
	b = binary.BigEndian.AppendUint32(b, uint32(len(mqs)))
	for _, mq := range mqs {
		b = appendString16(b, mq.Topic)
		b = appendString16(b, mq.BrokerName)
		b = binary.BigEndian.AppendUint32(b, uint32(mq.QueueID))
		b = binary.BigEndian.AppendUint64(b, uint64(offsets[mq]))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func appendString16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// decodeOffsets decodes an offsets file of group. Errors wrap errBadOffsets.
func decodeOffsets(data []byte, group string) (map[MessageQueue]int64, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errBadOffsets}, args...)...)
	}
	const minLen = len(offsetsMagic) + 1 + 2 + 4 + 4
	if len(data) < minLen {
		return nil, bad("%d bytes, shorter than any offsets file", len(data))
	}
	body, sum := data[:len(data)-4], binary.BigEndian.Uint32(data[len(data)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, bad("checksum %08x, want %08x", got, sum)
	}
	if string(body[:4]) != offsetsMagic {
		return nil, bad("magic %q", body[:4])
	}
	if body[4] != offsetsVersion {
		return nil, bad("version %d", body[4])
	}
	r := binread.New(body[5:])
	g := r.String16()
	n := r.Uint32()
	if r.Err() == nil && g != group {
		return nil, bad("offsets of group %q, not %q", g, group)
	}
	out := make(map[MessageQueue]int64)
	for i := uint32(0); i < n && r.Err() == nil; i++ {
		var mq MessageQueue
		mq.Topic = r.String16()
		mq.BrokerName = r.String16()
		mq.QueueID = int32(r.Uint32())
		off := int64(r.Uint64())
		if r.Err() == nil && (off < 0 || mq.QueueID < 0) {
			return nil, bad("entry %d: queue %s, offset %d", i, mq, off)
		}
		out[mq] = off
	}
	if err := r.Err(); err != nil {
		return nil, bad("%v", err)
	}
	if r.Len() != 0 {
		return nil, bad("%d bytes after the last entry", r.Len())
	}
	return out, nil
}

// localOffsets is a broadcasting consumer's offsets table and its file.
type localOffsets struct {
	path  string
	group string
	log   zerolog.Logger

	writeMu sync.Mutex // one write of the file at a time; taken before mu
	mu      struct {
		sync.Mutex
		offsets map[MessageQueue]int64
		dirty   bool // changed since the last write
	}
}

func newLocalOffsets(dir, group string, log zerolog.Logger) *localOffsets {
	l := &localOffsets{path: filepath.Join(dir, url.PathEscape(group)+offsetsExt), group: group, log: log}
	l.mu.offsets = make(map[MessageQueue]int64)
	return l
}

// load creates the directory, removes temporary files left by a crash and reads the
// file. A missing file is an empty table; one that does not decode is set aside with a
// log line and is an empty table too. Only a failing directory or read is an error.
func (l *localOffsets) load() error {
	dir := filepath.Dir(l.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("client: offsets directory: %w", err)
	}
	if stale, err := filepath.Glob(l.path + ".tmp*"); err == nil {
		for _, f := range stale {
			_ = os.Remove(f)
		}
	}
	offsets := make(map[MessageQueue]int64)
	data, err := os.ReadFile(l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("client: read offsets file: %w", err)
	default:
		if offsets, err = decodeOffsets(data, l.group); err != nil {
			offsets = make(map[MessageQueue]int64)
			broken := l.path + ".broken"
			ev := l.log.Warn().Err(err).Str("file", l.path)
			if rerr := os.Rename(l.path, broken); rerr != nil {
				ev = ev.AnErr("renameErr", rerr)
			} else {
				ev = ev.Str("keptAs", broken)
			}
			ev.Msg("offsets file unreadable; its queues start where ConsumeFrom says")
		}
	}
	l.mu.Lock()
	l.mu.offsets, l.mu.dirty = offsets, false
	l.mu.Unlock()
	return nil
}

// get returns the stored offset of mq.
func (l *localOffsets) get(mq MessageQueue) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	off, ok := l.mu.offsets[mq]
	return off, ok
}

// set records the offset of mq; the next persist writes it.
func (l *localOffsets) set(mq MessageQueue, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.mu.offsets[mq]; !ok || old != off {
		l.mu.offsets[mq] = off
		l.mu.dirty = true
	}
}

// persist writes the table to the file atomically if it changed since the last write.
func (l *localOffsets) persist() error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if !l.mu.dirty {
		l.mu.Unlock()
		return nil
	}
	data := encodeOffsets(l.group, l.mu.offsets)
	l.mu.dirty = false
	l.mu.Unlock()
	if err := writeFileAtomic(l.path, data); err != nil {
		l.mu.Lock()
		l.mu.dirty = true
		l.mu.Unlock()
		return fmt.Errorf("client: write offsets file: %w", err)
	}
	return nil
}

// writeFileAtomic replaces path with data: a temporary file in the same directory,
// fsynced, renamed over path, then the directory fsynced.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

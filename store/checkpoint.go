package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Checkpoint file layout (`<dir>/checkpoint`, 4096 bytes, big-endian). These constants are
// part of the on-disk format.
//
//	 0  physicMsgTimestamp   int64  store time of the last flushed commit-log record (RocketMQ 4.x)
//	 8  logicsMsgTimestamp   int64  store time of the last dispatched record        (RocketMQ 4.x)
//	16  indexMsgTimestamp    int64  same, for the index                             (RocketMQ 4.x)
//	24  masterFlushedOffset  int64  commit-log flushed offset                       (RocketMQ 5.x)
//	32  confirmPhyOffset     int64  commit-log flushed offset                       (RocketMQ 5.x)
//	40  magic                8 B    "FERRYCP1": the fields below are present
//	48  flushedOffset        int64  the commit log is durable below this physical offset
//	56  dispatchedOffset     int64  consume queues and index are durable below this offset
//	64  crc                  uint32 IEEE CRC-32 of bytes [40, 64)
//
// The first 40 bytes keep RocketMQ's meaning so a RocketMQ store directory reads the same
// way in both directions. The file is replaced atomically (temp file, fsync, rename,
// directory fsync), so it is never torn; a missing file, or one without Ferry's fields (a
// RocketMQ directory), makes recovery scan the commit log instead of trusting offsets.
const (
	checkpointName  = "checkpoint"
	checkpointSize  = 4096
	checkpointMagic = "FERRYCP1"
	cpMagicAt       = 40
	cpFlushedAt     = 48
	cpDispatchedAt  = 56
	cpCRCAt         = 64
)

// errBadCheckpoint marks a checkpoint whose Ferry fields are absent or fail their CRC.
var errBadCheckpoint = errors.New("store: checkpoint has no valid Ferry fields")

// checkpoint is the decoded checkpoint file.
type checkpoint struct {
	PhysicMsgTimestamp int64
	LogicsMsgTimestamp int64
	IndexMsgTimestamp  int64
	// Valid reports whether the Ferry offsets below were present and intact.
	Valid            bool
	FlushedOffset    int64
	DispatchedOffset int64
}

// encodeCheckpoint lays out c in a fresh 4096-byte buffer.
func encodeCheckpoint(c checkpoint) []byte {
	b := make([]byte, checkpointSize)
	binary.BigEndian.PutUint64(b[0:], uint64(c.PhysicMsgTimestamp))
	binary.BigEndian.PutUint64(b[8:], uint64(c.LogicsMsgTimestamp))
	binary.BigEndian.PutUint64(b[16:], uint64(c.IndexMsgTimestamp))
	binary.BigEndian.PutUint64(b[24:], uint64(c.FlushedOffset))
	binary.BigEndian.PutUint64(b[32:], uint64(c.FlushedOffset))
	copy(b[cpMagicAt:], checkpointMagic)
	binary.BigEndian.PutUint64(b[cpFlushedAt:], uint64(c.FlushedOffset))
	binary.BigEndian.PutUint64(b[cpDispatchedAt:], uint64(c.DispatchedOffset))
	binary.BigEndian.PutUint32(b[cpCRCAt:], crc32.ChecksumIEEE(b[cpMagicAt:cpCRCAt]))
	return b
}

// decodeCheckpoint reads a checkpoint. A RocketMQ checkpoint (or any file of at least 24
// bytes without Ferry's fields) decodes with Valid false and the timestamps it has.
func decodeCheckpoint(b []byte) (checkpoint, error) {
	var c checkpoint
	if len(b) < 24 {
		return c, fmt.Errorf("%w: %d bytes", errBadCheckpoint, len(b))
	}
	c.PhysicMsgTimestamp = int64(binary.BigEndian.Uint64(b[0:]))
	c.LogicsMsgTimestamp = int64(binary.BigEndian.Uint64(b[8:]))
	c.IndexMsgTimestamp = int64(binary.BigEndian.Uint64(b[16:]))
	if len(b) < cpCRCAt+4 || string(b[cpMagicAt:cpMagicAt+8]) != checkpointMagic {
		return c, nil
	}
	if binary.BigEndian.Uint32(b[cpCRCAt:]) != crc32.ChecksumIEEE(b[cpMagicAt:cpCRCAt]) {
		return c, fmt.Errorf("%w: crc mismatch", errBadCheckpoint)
	}
	c.FlushedOffset = int64(binary.BigEndian.Uint64(b[cpFlushedAt:]))
	c.DispatchedOffset = int64(binary.BigEndian.Uint64(b[cpDispatchedAt:]))
	if c.FlushedOffset < 0 || c.DispatchedOffset < 0 {
		return checkpoint{}, fmt.Errorf("%w: offsets flushed=%d dispatched=%d", errBadCheckpoint, c.FlushedOffset, c.DispatchedOffset)
	}
	c.Valid = true
	return c, nil
}

// loadCheckpoint reads the checkpoint in dir; a missing file yields the zero checkpoint.
func loadCheckpoint(fsys mmap.FS, path string) (checkpoint, error) {
	b, err := fsys.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint{}, nil
	}
	if err != nil {
		return checkpoint{}, fmt.Errorf("store: read checkpoint: %w", err)
	}
	return decodeCheckpoint(b)
}

// CheckpointFields is every field of a checkpoint file as stored, for tools that read it
// without opening the store (ferryctl dump checkpoint). Valid says whether recovery would
// trust Ferry's offsets; the fields are filled in either way.
type CheckpointFields struct {
	// RocketMQ 4.x: store times (Unix ms) of the last flushed commit-log record, the last
	// dispatched record, and the same for the index.
	PhysicMsgTimestamp, LogicsMsgTimestamp, IndexMsgTimestamp int64
	// RocketMQ 5.x: commit-log flushed offsets; HasRocketMQ5 reports the file is long
	// enough to hold them.
	MasterFlushedOffset, ConfirmPhyOffset int64
	HasRocketMQ5                          bool
	// HasFerryFields reports Ferry's magic "FERRYCP1" at byte 40.
	HasFerryFields bool
	// FlushedOffset (the commit log is durable below it) and DispatchedOffset (consume
	// queues and index are durable below it), Ferry's fields as stored.
	FlushedOffset, DispatchedOffset int64
	// StoredCRC and ComputedCRC are the CRC-32 at byte 64 and that of bytes [40, 64).
	StoredCRC, ComputedCRC uint32
	// Valid reports that Ferry's fields are present and intact: recovery trusts them.
	Valid bool
	// Problem says why Ferry's fields are not trusted ("" when Valid, or when they are
	// absent: a RocketMQ checkpoint).
	Problem string
}

// DecodeCheckpoint reads every field of a checkpoint file b without judging it beyond what
// recovery does (Valid, Problem). It fails only when b is shorter than RocketMQ 4.x's 24
// bytes.
func DecodeCheckpoint(b []byte) (CheckpointFields, error) {
	var c CheckpointFields
	if len(b) < 24 {
		return c, fmt.Errorf("%w: %d bytes", errBadCheckpoint, len(b))
	}
	be := binary.BigEndian
	c.PhysicMsgTimestamp = int64(be.Uint64(b[0:]))
	c.LogicsMsgTimestamp = int64(be.Uint64(b[8:]))
	c.IndexMsgTimestamp = int64(be.Uint64(b[16:]))
	if len(b) >= cpMagicAt {
		c.HasRocketMQ5 = true
		c.MasterFlushedOffset = int64(be.Uint64(b[24:]))
		c.ConfirmPhyOffset = int64(be.Uint64(b[32:]))
	}
	if len(b) < cpCRCAt+4 || string(b[cpMagicAt:cpMagicAt+8]) != checkpointMagic {
		return c, nil
	}
	c.HasFerryFields = true
	c.FlushedOffset = int64(be.Uint64(b[cpFlushedAt:]))
	c.DispatchedOffset = int64(be.Uint64(b[cpDispatchedAt:]))
	c.StoredCRC = be.Uint32(b[cpCRCAt:])
	c.ComputedCRC = crc32.ChecksumIEEE(b[cpMagicAt:cpCRCAt])
	switch _, err := decodeCheckpoint(b); {
	case err != nil:
		c.Problem = err.Error()
	default:
		c.Valid = true
	}
	return c, nil
}

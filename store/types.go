package store

import (
	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/message"
)

// The store is the facade of its parts: these names let the layers above (broker,
// schedule, transaction) use the commit log's result and view types without importing
// the commit log.

// PutResult is the outcome of PutMessage and PutMessages.
type PutResult = commitlog.AppendResult

// PutStatus is the durability outcome of a put.
type PutStatus = commitlog.Status

// PutOK means the put is as durable as the flush mode promises.
const PutOK = commitlog.PutOK

// View holds a range of the commit log readable until Release.
type View = commitlog.View

// FlushMode selects when appended bytes are made durable.
type FlushMode = commitlog.FlushMode

// Flush modes.
const (
	// FlushAsync acknowledges appends at once; a flusher syncs in the background.
	FlushAsync = commitlog.FlushAsync
	// FlushSync acknowledges an append only once it is durable (group commit).
	FlushSync = commitlog.FlushSync
)

// Queues is the part of the store the services above it (schedule, transaction) put
// and read messages through; *Store implements it, and their tests substitute stores
// that fail on purpose. Each service's own Store interface embeds it and adds what else
// it needs.
type Queues interface {
	// PutMessage appends one record; see Store.PutMessage.
	PutMessage(rec *message.Record, wait bool) (PutResult, error)
	// GetMessages reads a consume queue; filter sees every scanned unit's tags code, in
	// queue order, starting at offset. See Store.GetMessages.
	GetMessages(topic string, queueID int32, offset int64, maxMsgs, maxBytes int,
		filter func(tagsCode int64) bool) (*GetResult, error)
	// MinOffset is the first queue offset still stored.
	MinOffset(topic string, queueID int32) int64
	// MaxOffset is the next queue offset to be written.
	MaxOffset(topic string, queueID int32) int64
}

var _ Queues = (*Store)(nil)

// ReadRecordBytes returns the stored bytes of the record at a commit-log offset (the
// wire form of a pulled or viewed message) and the view holding them; the caller
// releases the view. The record's header is decoded first, so an offset that does not
// start a record is an error rather than bytes a client cannot decode.
func (s *Store) ReadRecordBytes(phy int64) ([]byte, *View, error) {
	_, v, err := s.ReadMessage(phy) // the view covers exactly the record
	if err != nil {
		return nil, nil, err
	}
	return v.Bytes(), v, nil
}

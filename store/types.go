package store

import "github.com/ferrymq/ferry/commitlog"

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

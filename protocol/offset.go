package protocol

import "github.com/ferrymq/ferry/remoting"

// Keys of the offset headers.
const (
	offsetSetZeroIfNotFound = "setZeroIfNotFound"
	offsetCommitOffset      = "commitOffset"
	offsetCommitted         = "committed"
	offsetTimestamp         = "timestamp"
	offsetBoundaryType      = "boundaryType"
	offsetOffset            = "offset"
)

// QueryConsumerOffsetRequestHeader is the header of QUERY_CONSUMER_OFFSET
// (14). The broker answers SUCCESS with an [OffsetResponseHeader] holding the
// group's committed offset for the queue, or QUERY_NOT_FOUND when none is
// stored (see spec §7.4 for when to answer 0 instead).
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup string // consumerGroup (required)
	Topic         string // topic (required)
	QueueID       int32  // queueId (required)
	// SetZeroIfNotFound is Java 5.x setZeroIfNotFound; nil (absent) means
	// true, the Java default.
	SetZeroIfNotFound *bool
	BrokerName        string // bname
}

// EncodeExt implements Header.
func (h *QueryConsumerOffsetRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(extConsumerGroup, h.ConsumerGroup)
	ext.Set(extTopic, h.Topic)
	ext.Set(extQueueID, fmtInt32(h.QueueID))
	putOptBool(ext, offsetSetZeroIfNotFound, h.SetZeroIfNotFound)
	putStr(ext, extBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *QueryConsumerOffsetRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = QueryConsumerOffsetRequestHeader{
		ConsumerGroup:     r.str(extConsumerGroup, true),
		Topic:             r.str(extTopic, true),
		QueueID:           r.int32(extQueueID, true),
		SetZeroIfNotFound: r.optBool(offsetSetZeroIfNotFound, false),
		BrokerName:        r.str(extBrokerName, false),
	}
	return r.err
}

// ZeroIfNotFound reports the effective setZeroIfNotFound value (true when
// the field is absent).
func (h *QueryConsumerOffsetRequestHeader) ZeroIfNotFound() bool {
	return h.SetZeroIfNotFound == nil || *h.SetZeroIfNotFound
}

// UpdateConsumerOffsetRequestHeader is the header of UPDATE_CONSUMER_OFFSET
// (15). The broker stores CommitOffset as the group's offset for the queue
// and answers SUCCESS without ext. The Go client sends it with flag 0 (not
// oneway) and may send CommitOffset −1, which means "no offset".
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string // consumerGroup (required)
	Topic         string // topic (required)
	QueueID       int32  // queueId (required)
	CommitOffset  int64  // commitOffset (required)
	BrokerName    string // bname
}

// EncodeExt implements Header.
func (h *UpdateConsumerOffsetRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(extConsumerGroup, h.ConsumerGroup)
	ext.Set(extTopic, h.Topic)
	ext.Set(extQueueID, fmtInt32(h.QueueID))
	ext.Set(offsetCommitOffset, fmtInt64(h.CommitOffset))
	putStr(ext, extBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *UpdateConsumerOffsetRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = UpdateConsumerOffsetRequestHeader{
		ConsumerGroup: r.str(extConsumerGroup, true),
		Topic:         r.str(extTopic, true),
		QueueID:       r.int32(extQueueID, true),
		CommitOffset:  r.int64(offsetCommitOffset, true),
		BrokerName:    r.str(extBrokerName, false),
	}
	return r.err
}

// GetMaxOffsetRequestHeader is the header of GET_MAX_OFFSET (30). The broker
// answers an [OffsetResponseHeader] with the next offset to be written (0 for
// an unknown or empty queue); the Go client ignores the response code, so
// the offset must always be present.
type GetMaxOffsetRequestHeader struct {
	Topic   string // topic (required)
	QueueID int32  // queueId (required)
	// Committed is Java 5.x committed; nil (absent) means true.
	Committed  *bool
	BrokerName string // bname
}

// EncodeExt implements Header.
func (h *GetMaxOffsetRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(extTopic, h.Topic)
	ext.Set(extQueueID, fmtInt32(h.QueueID))
	putOptBool(ext, offsetCommitted, h.Committed)
	putStr(ext, extBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *GetMaxOffsetRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = GetMaxOffsetRequestHeader{
		Topic:      r.str(extTopic, true),
		QueueID:    r.int32(extQueueID, true),
		Committed:  r.optBool(offsetCommitted, false),
		BrokerName: r.str(extBrokerName, false),
	}
	return r.err
}

// GetMinOffsetRequestHeader is the header of GET_MIN_OFFSET (31). The broker
// answers an [OffsetResponseHeader] with the smallest offset still stored.
type GetMinOffsetRequestHeader struct {
	Topic      string // topic (required)
	QueueID    int32  // queueId (required)
	BrokerName string // bname
}

// EncodeExt implements Header.
func (h *GetMinOffsetRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeTopicQueue(ext, h.Topic, h.QueueID, h.BrokerName)
}

// DecodeExt implements Header.
func (h *GetMinOffsetRequestHeader) DecodeExt(ext remoting.Ext) error {
	var err error
	h.Topic, h.QueueID, h.BrokerName, err = decodeTopicQueue(ext)
	return err
}

// BoundaryType selects which entry SEARCH_OFFSET_BY_TIMESTAMP returns when
// several messages share a store time.
type BoundaryType string

// Boundary types. An empty value means BoundaryLower.
const (
	BoundaryLower BoundaryType = "lower" // first entry stored at or after the timestamp
	BoundaryUpper BoundaryType = "upper" // last entry stored at or before the timestamp
)

// SearchOffsetRequestHeader is the header of SEARCH_OFFSET_BY_TIMESTAMP (29).
// The broker answers an [OffsetResponseHeader] (always with an offset; the Go
// client ignores the code).
type SearchOffsetRequestHeader struct {
	Topic        string       // topic (required)
	QueueID      int32        // queueId (required)
	Timestamp    int64        // timestamp (required): store time, ms
	BoundaryType BoundaryType // boundaryType (Java 5.x); empty means lower
	BrokerName   string       // bname
}

// EncodeExt implements Header.
func (h *SearchOffsetRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(extTopic, h.Topic)
	ext.Set(extQueueID, fmtInt32(h.QueueID))
	ext.Set(offsetTimestamp, fmtInt64(h.Timestamp))
	putStr(ext, offsetBoundaryType, string(h.BoundaryType))
	putStr(ext, extBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *SearchOffsetRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = SearchOffsetRequestHeader{
		Topic:        r.str(extTopic, true),
		QueueID:      r.int32(extQueueID, true),
		Timestamp:    r.int64(offsetTimestamp, true),
		BoundaryType: BoundaryType(r.str(offsetBoundaryType, false)),
		BrokerName:   r.str(extBrokerName, false),
	}
	return r.err
}

// GetEarliestMsgStoretimeRequestHeader is the header of
// GET_EARLIEST_MSG_STORETIME (32). The broker answers a
// [GetEarliestMsgStoretimeResponseHeader].
type GetEarliestMsgStoretimeRequestHeader struct {
	Topic      string // topic (required)
	QueueID    int32  // queueId (required)
	BrokerName string // bname
}

// EncodeExt implements Header.
func (h *GetEarliestMsgStoretimeRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeTopicQueue(ext, h.Topic, h.QueueID, h.BrokerName)
}

// DecodeExt implements Header.
func (h *GetEarliestMsgStoretimeRequestHeader) DecodeExt(ext remoting.Ext) error {
	var err error
	h.Topic, h.QueueID, h.BrokerName, err = decodeTopicQueue(ext)
	return err
}

func encodeTopicQueue(ext *remoting.Ext, topic string, queueID int32, bname string) {
	ext.Set(extTopic, topic)
	ext.Set(extQueueID, fmtInt32(queueID))
	putStr(ext, extBrokerName, bname)
}

func decodeTopicQueue(ext remoting.Ext) (topic string, queueID int32, bname string, err error) {
	r := extReader{ext: ext}
	topic = r.str(extTopic, true)
	queueID = r.int32(extQueueID, true)
	bname = r.str(extBrokerName, false)
	return topic, queueID, bname, r.err
}

// OffsetResponseHeader is the response header carrying one queue offset:
// QUERY_CONSUMER_OFFSET (14), SEARCH_OFFSET_BY_TIMESTAMP (29),
// GET_MAX_OFFSET (30) and GET_MIN_OFFSET (31).
type OffsetResponseHeader struct {
	Offset int64 // offset (required)
}

// EncodeExt implements Header.
func (h *OffsetResponseHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(offsetOffset, fmtInt64(h.Offset))
}

// DecodeExt implements Header.
func (h *OffsetResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	h.Offset = r.int64(offsetOffset, true)
	return r.err
}

// GetEarliestMsgStoretimeResponseHeader is the response header of
// GET_EARLIEST_MSG_STORETIME (32).
type GetEarliestMsgStoretimeResponseHeader struct {
	Timestamp int64 // timestamp (required): store time of the min-offset message, ms
}

// EncodeExt implements Header.
func (h *GetEarliestMsgStoretimeResponseHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(offsetTimestamp, fmtInt64(h.Timestamp))
}

// DecodeExt implements Header.
func (h *GetEarliestMsgStoretimeResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	h.Timestamp = r.int64(offsetTimestamp, true)
	return r.err
}

package broker

import (
	"time"

	"github.com/ferrymq/ferry/broker/clients"
	"github.com/ferrymq/ferry/broker/groupconf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/transaction"
)

// The narrow interfaces the request handlers are built from. The broker's parts
// implement them (*store.Store, *topicconf.Manager, *groupconf.Manager, *offsets.Store,
// *clients.Registry, *schedule.Service, *transaction.Service); handler tests use fakes.

// MessageStore is what handlers need from the message store.
type MessageStore interface {
	// PutMessage and PutMessages append records; wait asks a sync-flush store to wait
	// for durability.
	PutMessage(rec *message.Record, wait bool) (store.PutResult, error)
	PutMessages(recs []message.Record, wait bool) (store.PutResult, error)
	// PullMessages reads up to maxMsgs records of a queue from offset (pull), those the
	// filter (nil: all) takes.
	PullMessages(topic string, queueID int32, offset int64, maxMsgs, maxBytes int,
		filter store.Filter) (*store.GetResult, error)
	// ReadMessage decodes the record at a commit-log offset; ReadRecordBytes returns its
	// stored bytes. The caller releases the view.
	ReadMessage(phy int64) (message.Record, *store.View, error)
	ReadRecordBytes(phy int64) ([]byte, *store.View, error)
	// QueryByKey finds records by key or UNIQ_KEY in a time window.
	QueryByKey(topic, key string, uniqKey bool, maxNum int, begin, end int64) (*store.QueryResult, error)
	// MinOffset and MaxOffset bound a queue; EarliestStoreTime and OffsetByTime look
	// into it by time.
	MinOffset(topic string, queueID int32) int64
	MaxOffset(topic string, queueID int32) int64
	EarliestStoreTime(topic string, queueID int32) (int64, error)
	OffsetByTime(topic string, queueID int32, ts int64, upper bool) (int64, error)
	// DispatchedOffset is the commit-log offset the consume queues and index cover.
	DispatchedOffset() int64
	// DeleteTopic drops a topic's consume queues.
	DeleteTopic(topic string) error
}

// TopicTable is the broker's topic configuration.
type TopicTable interface {
	Get(topic string) (protocol.TopicConfig, bool)
	All() protocol.TopicConfigSerializeWrapper
	CreateOrUpdate(cfg protocol.TopicConfig) (changed bool, err error)
	AutoCreate(topic, templateTopic string, requestedQueues int) (cfg protocol.TopicConfig, created bool, err error)
	CreateRetryTopic(group string, queues int) (protocol.TopicConfig, bool, error)
	CreateDLQTopic(group string) (protocol.TopicConfig, bool, error)
	Delete(topic string) (bool, error)
}

// GroupTable is the subscription-group configuration.
type GroupTable interface {
	FindOrCreate(group string) (cfg groupconf.Config, created bool, err error)
	All() groupconf.Table
}

// OffsetTable holds consumer offsets.
type OffsetTable interface {
	// Commit records an offset the broker sets itself (an admin reset): it always
	// applies and forgets the order of earlier commits.
	Commit(group, topic string, queueID int32, offset int64)
	// CommitFrom records an offset a client committed on connection conn in its request
	// with arrival sequence number seq (remoting.Command.Seq), unless a later request of
	// the same connection has committed the key already; it reports whether it applied.
	CommitFrom(group, topic string, queueID int32, offset int64, conn, seq uint64) bool
	Query(group, topic string, queueID int32) (int64, bool)
	DeleteTopic(topic string) int
}

// ClientRegistry knows the connected producers and consumers.
type ClientRegistry interface {
	Heartbeat(ch clients.ChannelInfo, data protocol.HeartbeatData, now time.Time) (changedGroups []string)
	Unregister(clientID, producerGroup, consumerGroup string) (changedGroups []string)
	ChannelClosed(channelID uint64) (changedGroups []string)
	Expire(now time.Time, timeout time.Duration) (changedGroups []string)
	ConsumerIDs(group string) []string
	ConsumerChannels(group string) []uint64
	ProducerChannels(group string) []uint64
	Subscription(group, topic string) (protocol.SubscriptionData, bool)
}

// Scheduler parks delayed messages in the schedule topics.
type Scheduler interface {
	// RewriteScanned moves a record asking for a delay into a schedule topic (see
	// schedule.Service.Rewrite), building new properties in buf.
	RewriteScanned(rec *message.Record, sp *message.SendProps, buf []byte) (props []byte, rewritten bool, err error)
}

// TxnService keeps half messages and ends transactions.
type TxnService interface {
	PrepareScanned(rec *message.Record, sp *message.SendProps, wait bool) (transaction.PrepareResult, error)
	End(req transaction.EndRequest) (transaction.EndResult, error)
}

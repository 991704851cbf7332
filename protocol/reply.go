package protocol

import "github.com/ferrymq/ferry/remoting"

// ReplyTopicSuffix names the reply topic of a cluster: "<cluster>_REPLY_TOPIC", created
// by every broker at start. Replies to request-reply messages are sent there.
const ReplyTopicSuffix = "_REPLY_TOPIC"

// ReplyTopic returns the reply topic of cluster.
func ReplyTopic(cluster string) string { return cluster + ReplyTopicSuffix }

// ReplyMessageRequestHeader is the header of PUSH_REPLY_MESSAGE_TO_CLIENT (326, broker →
// the requesting client): a reply, sent to the broker with SEND_REPLY_MESSAGE (324/325),
// pushed to the connection of the client named in its REPLY_TO_CLIENT property. The body
// is the reply's body (zlib-compressed when SysFlag has bit 0x1). The client completes the
// pending request whose CORRELATION_ID the properties carry and answers SUCCESS.
//
// Every field is written; the Go client reads them all without requiring any.
type ReplyMessageRequestHeader struct {
	ProducerGroup         string // producerGroup: the replier's group
	Topic                 string // topic: the reply topic
	DefaultTopic          string // defaultTopic
	DefaultTopicQueueNums int32  // defaultTopicQueueNums
	QueueID               int32  // queueId
	SysFlag               int32  // sysFlag
	BornTimestamp         int64  // bornTimestamp, ms
	Flag                  int32  // flag
	Properties            string // properties: the reply's, plus PUSH_REPLY_TIME
	ReconsumeTimes        int32  // reconsumeTimes
	UnitMode              bool   // unitMode
	BornHost              string // bornHost: the replier's address, "ip:port"
	StoreHost             string // storeHost: this broker's address, "ip:port"
	StoreTimestamp        int64  // storeTimestamp, ms
}

const (
	replyProducerGroup  = "producerGroup"
	replyDefaultTopic   = "defaultTopic"
	replyDefaultQueues  = "defaultTopicQueueNums"
	replySysFlag        = "sysFlag"
	replyBornTimestamp  = "bornTimestamp"
	replyFlag           = "flag"
	replyProperties     = "properties"
	replyReconsumeTimes = "reconsumeTimes"
	replyUnitMode       = "unitMode"
	replyBornHost       = "bornHost"
	replyStoreHost      = "storeHost"
	replyStoreTimestamp = "storeTimestamp"
)

// EncodeExt implements Header.
func (h *ReplyMessageRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, replyProducerGroup, h.ProducerGroup)
	setStr(ext, extTopic, h.Topic)
	setStr(ext, replyDefaultTopic, h.DefaultTopic)
	setInt32(ext, replyDefaultQueues, h.DefaultTopicQueueNums)
	setInt32(ext, extQueueID, h.QueueID)
	setInt32(ext, replySysFlag, h.SysFlag)
	setInt64(ext, replyBornTimestamp, h.BornTimestamp)
	setInt32(ext, replyFlag, h.Flag)
	setStr(ext, replyProperties, h.Properties)
	setInt32(ext, replyReconsumeTimes, h.ReconsumeTimes)
	setBool(ext, replyUnitMode, h.UnitMode)
	setStr(ext, replyBornHost, h.BornHost)
	setStr(ext, replyStoreHost, h.StoreHost)
	setInt64(ext, replyStoreTimestamp, h.StoreTimestamp)
}

// DecodeExt implements Header.
func (h *ReplyMessageRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = ReplyMessageRequestHeader{
		ProducerGroup:         r.str(replyProducerGroup, false),
		Topic:                 r.str(extTopic, false),
		DefaultTopic:          r.str(replyDefaultTopic, false),
		DefaultTopicQueueNums: r.int32(replyDefaultQueues, false),
		QueueID:               r.int32(extQueueID, false),
		SysFlag:               r.int32(replySysFlag, false),
		BornTimestamp:         r.int64(replyBornTimestamp, false),
		Flag:                  r.int32(replyFlag, false),
		Properties:            r.str(replyProperties, false),
		ReconsumeTimes:        r.int32(replyReconsumeTimes, false),
		UnitMode:              r.boolean(replyUnitMode, false),
		BornHost:              r.str(replyBornHost, false),
		StoreHost:             r.str(replyStoreHost, false),
		StoreTimestamp:        r.int64(replyStoreTimestamp, false),
	}
	return r.err
}

package protocol

import "github.com/ferrymq/ferry/remoting"

// PullMessageRequestHeader is the header of PULL_MESSAGE (11) and
// LITE_PULL_MESSAGE (361). No body.
//
// The broker reads up to MaxMsgNums messages of Topic/QueueID from
// QueueOffset, filtered by the subscription (the request's own when SysFlag
// has PullFlagSubscription, else the one registered by HEART_BEAT), stores
// CommitOffset as the group's offset when SysFlag has PullFlagCommitOffset,
// and, when nothing is found and SysFlag has PullFlagSuspend, holds the
// request up to SuspendTimeoutMillis. It answers with a
// [PullMessageResponseHeader].
type PullMessageRequestHeader struct {
	ConsumerGroup        string         // consumerGroup (required)
	Topic                string         // topic (required)
	QueueID              int32          // queueId (required)
	QueueOffset          int64          // queueOffset (required): logical offset to read from
	MaxMsgNums           int32          // maxMsgNums (required)
	SysFlag              int32          // sysFlag (required): PullFlag* bits
	CommitOffset         int64          // commitOffset (required)
	SuspendTimeoutMillis int64          // suspendTimeoutMillis (required): long-poll limit, ms
	Subscription         string         // subscription: expression, used with PullFlagSubscription
	SubVersion           int64          // subVersion (required)
	ExpressionType       ExpressionType // expressionType: TAG (default when empty) or SQL92
	MaxMsgBytes          int32          // maxMsgBytes (Java 5.x)
	RequestSource        int32          // requestSource (Java 5.x proxy)
	ProxyForwardClientID string         // proxyFrowardClientId (sic; Java 5.x proxy)
	BrokerName           string         // bname
}

// Keys of the pull request header.
const (
	pullQueueOffset          = "queueOffset"
	pullMaxMsgNums           = "maxMsgNums"
	pullSysFlag              = "sysFlag"
	pullCommitOffset         = "commitOffset"
	pullSuspendTimeoutMillis = "suspendTimeoutMillis"
	pullSubscription         = "subscription"
	pullSubVersion           = "subVersion"
	pullExpressionType       = "expressionType"
	pullMaxMsgBytes          = "maxMsgBytes"
	pullRequestSource        = "requestSource"
	pullProxyForwardClientID = "proxyFrowardClientId"
)

// EncodeExt implements Header.
func (h *PullMessageRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(extConsumerGroup, h.ConsumerGroup)
	ext.Set(extTopic, h.Topic)
	ext.Set(extQueueID, fmtInt32(h.QueueID))
	ext.Set(pullQueueOffset, fmtInt64(h.QueueOffset))
	ext.Set(pullMaxMsgNums, fmtInt32(h.MaxMsgNums))
	ext.Set(pullSysFlag, fmtInt32(h.SysFlag))
	ext.Set(pullCommitOffset, fmtInt64(h.CommitOffset))
	ext.Set(pullSuspendTimeoutMillis, fmtInt64(h.SuspendTimeoutMillis))
	putStr(ext, pullSubscription, h.Subscription)
	ext.Set(pullSubVersion, fmtInt64(h.SubVersion))
	putStr(ext, pullExpressionType, string(h.ExpressionType))
	putInt32(ext, pullMaxMsgBytes, h.MaxMsgBytes)
	putInt32(ext, pullRequestSource, h.RequestSource)
	putStr(ext, pullProxyForwardClientID, h.ProxyForwardClientID)
	putStr(ext, extBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *PullMessageRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = PullMessageRequestHeader{
		ConsumerGroup:        r.str(extConsumerGroup, true),
		Topic:                r.str(extTopic, true),
		QueueID:              r.int32(extQueueID, true),
		QueueOffset:          r.int64(pullQueueOffset, true),
		MaxMsgNums:           r.int32(pullMaxMsgNums, true),
		SysFlag:              r.int32(pullSysFlag, true),
		CommitOffset:         r.int64(pullCommitOffset, true),
		SuspendTimeoutMillis: r.int64(pullSuspendTimeoutMillis, true),
		Subscription:         r.str(pullSubscription, false),
		SubVersion:           r.int64(pullSubVersion, true),
		ExpressionType:       ExpressionType(r.str(pullExpressionType, false)),
		MaxMsgBytes:          r.int32(pullMaxMsgBytes, false),
		RequestSource:        r.int32(pullRequestSource, false),
		ProxyForwardClientID: r.str(pullProxyForwardClientID, false),
		BrokerName:           r.str(extBrokerName, false),
	}
	return r.err
}

// HasFlag reports whether SysFlag has every bit of flag (PullFlag*).
func (h *PullMessageRequestHeader) HasFlag(flag int32) bool {
	return h.SysFlag&flag == flag
}

// PullMessageResponseHeader is the response header of PULL_MESSAGE (11) and
// LITE_PULL_MESSAGE (361), for every outcome (SUCCESS, PULL_NOT_FOUND,
// PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED). All four fields are always
// written and required on decode: Java clients fail on a missing one, and the
// Go client takes its next pull position from NextBeginOffset.
type PullMessageResponseHeader struct {
	NextBeginOffset      int64 // nextBeginOffset: where the client must pull next
	MinOffset            int64 // minOffset: queue's smallest stored offset
	MaxOffset            int64 // maxOffset: next offset to be written
	SuggestWhichBrokerID int64 // suggestWhichBrokerId: 0 (master) unless slave reads are offered
}

// Keys of the pull response header.
const (
	pullNextBeginOffset      = "nextBeginOffset"
	pullMinOffset            = "minOffset"
	pullMaxOffset            = "maxOffset"
	pullSuggestWhichBrokerID = "suggestWhichBrokerId"
)

// EncodeExt implements Header.
func (h *PullMessageResponseHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(pullNextBeginOffset, fmtInt64(h.NextBeginOffset))
	ext.Set(pullMinOffset, fmtInt64(h.MinOffset))
	ext.Set(pullMaxOffset, fmtInt64(h.MaxOffset))
	ext.Set(pullSuggestWhichBrokerID, fmtInt64(h.SuggestWhichBrokerID))
}

// DecodeExt implements Header.
func (h *PullMessageResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = PullMessageResponseHeader{
		NextBeginOffset:      r.int64(pullNextBeginOffset, true),
		MinOffset:            r.int64(pullMinOffset, true),
		MaxOffset:            r.int64(pullMaxOffset, true),
		SuggestWhichBrokerID: r.int64(pullSuggestWhichBrokerID, true),
	}
	return r.err
}

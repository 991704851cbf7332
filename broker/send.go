package broker

// SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).
//
// Behaviour: decode the V1 or V2 header; validate the topic name (INVALID_PARAMETER) and
// refuse system topics (NO_PERMISSION); find the topic, auto-creating it from the template
// (TBW102) when allowed, or a retry topic with one queue (TOPIC_NOT_EXIST otherwise); check
// write permission and the queue id (a negative id picks a queue at random); add a
// UNIQ_KEY if absent and the CLUSTER property; store; answer with the offset message id(s),
// the queue and the (first) queue offset. A batch body is a list of items (spec §6.2)
// stored as consecutive records of one queue; a batch to a retry topic, a transactional
// batch or one whose wrapper properties carry a DELAY level is MESSAGE_ILLEGAL.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"unsafe"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// handleSend serves the send family.
func (b *Broker) handleSend(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	code := protocol.RequestCode(req.Code)
	h, err := protocol.DecodeSendMessageRequestHeader(code, req.ExtFields)
	if err != nil {
		return nil, fail(protocol.SystemError, "decode send header: %v", err)
	}
	cfg, err := b.sendTopic(&h)
	if err != nil {
		return nil, err
	}
	queueID := h.QueueID
	if queueID < 0 {
		queueID = rand.Int32N(max(cfg.WriteQueueNums, 1))
	}
	if queueID >= max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
		return nil, fail(protocol.InvalidParameter, "queueId %d out of range for topic %s (%d queues)", queueID, h.Topic, cfg.WriteQueueNums)
	}
	buf := b.scratchBuf()
	defer b.scratch.Put(buf)

	var recs []message.Record
	var one [1]message.Record
	if code == protocol.SendBatchMessage || h.Batch {
		if h.SysFlag&message.SysFlagTransactionMask != 0 {
			return nil, fail(protocol.MessageIllegal, "batch messages cannot be transactional")
		}
		if protocol.IsRetryTopic(h.Topic) {
			return nil, fail(protocol.MessageIllegal, "batch messages cannot be sent to retry topic %s", h.Topic)
		}
		if lvl, ok := message.LookupProperty(unsafe.Slice(unsafe.StringData(h.Properties), len(h.Properties)), message.PropertyDelayLevel); ok && len(lvl) > 0 && string(lvl) != "0" {
			return nil, fail(protocol.MessageIllegal, "batch messages cannot be delayed (DELAY=%s)", lvl)
		}
		if recs, err = b.decodeBatch(req.Body, &h, buf); err != nil {
			return nil, fail(protocol.MessageIllegal, "%v", err)
		}
	} else {
		props, err := b.storeProperties(buf, h.Properties)
		if err != nil {
			return nil, fail(protocol.MessageIllegal, "%v", err)
		}
		one[0] = message.Record{Flag: h.Flag, Body: req.Body, Properties: props}
		recs = one[:]
	}
	born := bornHost(ch)
	topic := unsafe.Slice(unsafe.StringData(h.Topic), len(h.Topic))
	for i := range recs {
		r := &recs[i]
		r.QueueID, r.SysFlag, r.BornTimestamp, r.BornHost = queueID, h.SysFlag, h.BornTimestamp, born
		r.ReconsumeTimes, r.Topic = h.ReconsumeTimes, topic
		if r.SysFlag&message.SysFlagBornHostV6 == 0 && born.Addr().Is6() && !born.Addr().Is4In6() {
			r.SysFlag |= message.SysFlagBornHostV6
		}
	}
	if len(recs) == 1 && code != protocol.SendBatchMessage && !h.Batch && isPrepared(&h, recs[0].Properties) {
		return b.prepare(ch, req, &recs[0], h.ProducerGroup, b.waitStore(recs[0].Properties))
	}
	if len(recs) == 1 && code != protocol.SendBatchMessage && !h.Batch {
		if err := b.redirectExhaustedRetry(&h, &recs[0]); err != nil {
			return nil, err
		}
		queueID = recs[0].QueueID
		pbuf := b.scratchBuf()
		defer b.scratch.Put(pbuf)
		props, rewritten, err := b.sched.Rewrite(&recs[0], (*pbuf)[:0])
		if err != nil {
			return nil, fail(protocol.MessageIllegal, "%v", err)
		}
		if rewritten {
			*pbuf = props
		}
	}
	res, err := b.store.PutMessages(recs, b.waitStore(recs[0].Properties))
	if err != nil && res.Count == 0 {
		return nil, storeError(err)
	}
	resp := respond(req, sendCode(res), "")
	rh := protocol.SendMessageResponseHeader{
		QueueID:     queueID,
		QueueOffset: res.QueueOffset,
		MsgRegion:   "DefaultRegion",
		TraceOn:     true,
	}
	rh.MsgID = b.offsetMsgIDs(recs, res)
	if uniq, ok := message.LookupProperty(recs[0].Properties, message.PropertyUniqKey); ok && len(recs) == 1 {
		rh.TransactionID = string(uniq)
	}
	resp.ExtFields = protocol.NewExt(&rh)
	return resp, nil
}

// redirectExhaustedRetry sends a message for %RETRY%<group> whose reconsume count is past
// the limit (the header's maxReconsumeTimes, else the group's retryMaxTimes) to the group's
// dead-letter topic instead, without delay (remoting spec §6.1 step 4).
func (b *Broker) redirectExhaustedRetry(h *protocol.SendMessageRequestHeader, rec *message.Record) error {
	group, ok := protocol.RetryGroup(h.Topic)
	if !ok {
		return nil
	}
	gcfg, _, err := b.groups.FindOrCreate(group)
	if err != nil {
		return fail(protocol.SubscriptionGroupNotExist, "group %s: %v", group, err)
	}
	maxTimes := int32(gcfg.RetryMaxTimes)
	if h.MaxReconsumeTimes > 0 {
		maxTimes = h.MaxReconsumeTimes
	}
	if h.ReconsumeTimes <= maxTimes {
		return nil
	}
	cfg, _, err := b.topics.CreateDLQTopic(group)
	if err != nil {
		return fail(protocol.SystemError, "create DLQ topic: %v", err)
	}
	rec.Topic, rec.QueueID = []byte(cfg.TopicName), 0
	rec.Properties = message.RemoveProperty(rec.Properties, message.PropertyDelayLevel)
	b.log.Info().Str("group", group).Int32("reconsumeTimes", h.ReconsumeTimes).Msg("retry message moved to the dead-letter queue")
	return nil
}

// sendTopic finds the target topic's config, creating it when the request may.
func (b *Broker) sendTopic(h *protocol.SendMessageRequestHeader) (protocol.TopicConfig, error) {
	if err := protocol.ValidateTopic(h.Topic); err != nil && !protocol.IsRetryTopic(h.Topic) && !protocol.IsDLQTopic(h.Topic) {
		return protocol.TopicConfig{}, fail(protocol.InvalidParameter, "%v", err)
	}
	if protocol.IsSendForbiddenTopic(h.Topic) {
		return protocol.TopicConfig{}, fail(protocol.NoPermission, "sending to system topic %s is forbidden", h.Topic)
	}
	cfg, ok := b.topics.Get(h.Topic)
	if !ok {
		var err error
		switch group, isRetry := protocol.RetryGroup(h.Topic); {
		case isRetry:
			cfg, _, err = b.topics.CreateRetryTopic(group, 1)
		case b.cfg.AutoCreateTopic:
			cfg, _, err = b.topics.AutoCreate(h.Topic, h.DefaultTopic, int(h.DefaultTopicQueueNums))
		default:
			err = errors.New("auto-creation is disabled")
		}
		if err != nil {
			return cfg, fail(protocol.TopicNotExist, "topic %s does not exist and cannot be created: %v", h.Topic, err)
		}
	}
	if !protocol.PermWriteable(cfg.Perm) {
		return cfg, fail(protocol.NoPermission, "topic %s is not writeable (perm %d)", h.Topic, cfg.Perm)
	}
	return cfg, nil
}

// storeProperties returns the properties to store: the request's, plus a UNIQ_KEY when
// absent and the broker's CLUSTER. The result is built in buf (no allocation).
func (b *Broker) storeProperties(buf *[]byte, props string) ([]byte, error) {
	raw := unsafe.Slice(unsafe.StringData(props), len(props))
	out := (*buf)[:0]
	var err error
	if _, ok := message.LookupProperty(raw, message.PropertyUniqKey); !ok {
		out = append(out, message.PropertyUniqKey...)
		out = append(out, message.NameValueSeparator)
		out = b.uniq.AppendNext(out)
		out = append(out, message.PropertySeparator)
	}
	if _, ok := message.LookupProperty(raw, message.PropertyCluster); !ok && b.cfg.ClusterName != "" {
		if out, err = message.AppendProperty(out, message.PropertyCluster, b.cfg.ClusterName); err != nil {
			return nil, err
		}
	}
	out = append(out, raw...)
	if len(out) > message.MaxPropertiesLength {
		return nil, fmt.Errorf("properties of %d bytes exceed %d", len(out), message.MaxPropertiesLength)
	}
	*buf = out
	return out, nil
}

// waitStore decides whether a sync-flush send waits for durability (the WAIT property,
// default true).
func (b *Broker) waitStore(props []byte) bool {
	if v, ok := message.LookupProperty(props, message.PropertyWaitStoreMsgOK); ok && string(v) == "false" {
		return false
	}
	return true
}

// decodeBatch parses a batch body (spec §6.2) into records whose properties get a
// UNIQ_KEY when they lack one. Item layout, big-endian:
//
//	i32 total size (including itself) | i32 magic (ignored) | i32 body CRC (ignored) |
//	i32 flag | i32 body length | body | i16 properties length | properties
func (b *Broker) decodeBatch(body []byte, h *protocol.SendMessageRequestHeader, buf *[]byte) ([]message.Record, error) {
	var recs []message.Record
	out := (*buf)[:0]
	type span struct{ start, end int }
	var props []span
	for p := body; len(p) > 0; {
		if len(p) < 22 {
			return nil, fmt.Errorf("batch item truncated: %d bytes left", len(p))
		}
		size := int(int32(binary.BigEndian.Uint32(p)))
		if size < 22 || size > len(p) {
			return nil, fmt.Errorf("batch item size %d invalid (%d bytes left)", size, len(p))
		}
		item := p[:size]
		flag := int32(binary.BigEndian.Uint32(item[12:]))
		blen := int(int32(binary.BigEndian.Uint32(item[16:])))
		if blen < 0 || 20+blen+2 > size {
			return nil, fmt.Errorf("batch item body length %d invalid", blen)
		}
		plen := int(binary.BigEndian.Uint16(item[20+blen:]))
		if 22+blen+plen != size {
			return nil, fmt.Errorf("batch item sizes disagree: total %d, body %d, properties %d", size, blen, plen)
		}
		raw := item[22+blen:]
		start := len(out)
		if _, ok := message.LookupProperty(raw, message.PropertyUniqKey); !ok {
			out = append(out, message.PropertyUniqKey...)
			out = append(out, message.NameValueSeparator)
			out = b.uniq.AppendNext(out)
			out = append(out, message.PropertySeparator)
		}
		out = append(out, raw...)
		props = append(props, span{start, len(out)})
		recs = append(recs, message.Record{Flag: flag, Body: item[20 : 20+blen]})
		p = p[size:]
	}
	if len(recs) == 0 {
		return nil, errors.New("empty batch")
	}
	for i := range recs {
		recs[i].Properties = out[props[i].start:props[i].end]
	}
	*buf = out
	_ = h
	return recs, nil
}

// offsetMsgIDs returns the offset message ids of stored records, comma-joined.
func (b *Broker) offsetMsgIDs(recs []message.Record, res commitlog.AppendResult) string {
	if len(recs) == 1 {
		return message.OffsetMsgID(b.storeHost, res.PhysicalOffset)
	}
	var sb strings.Builder
	off := res.PhysicalOffset
	for i := range recs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(message.OffsetMsgID(b.storeHost, off))
		off += int64(recs[i].Size())
	}
	return sb.String()
}

// sendCode maps an append outcome to the send response code.
func sendCode(res commitlog.AppendResult) protocol.ResponseCode {
	if res.Status == commitlog.PutOK {
		return protocol.Success
	}
	return protocol.FlushDiskTimeout
}

// storeError maps a store error to a response.
func storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrDiskFull), errors.Is(err, store.ErrClosed), errors.Is(err, store.ErrStorageFailed):
		return fail(protocol.ServiceNotAvailable, "%v", err)
	case errors.Is(err, store.ErrMessageIllegal):
		return fail(protocol.MessageIllegal, "%v", err)
	default:
		return fail(protocol.SystemError, "store: %v", err)
	}
}

// scratchBuf returns a pooled buffer for building properties.
func (b *Broker) scratchBuf() *[]byte {
	if p, ok := b.scratch.Get().(*[]byte); ok {
		return p
	}
	buf := make([]byte, 0, 512)
	return &buf
}

package broker

// SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320).
//
// Behaviour: decode the V1 or V2 header; validate the topic name (INVALID_PARAMETER) and
// refuse system topics (NO_PERMISSION); find the topic, auto-creating it from the template
// (TBW102) when allowed, or a retry topic with one queue (TOPIC_NOT_EXIST otherwise); check
// write permission and the queue id (a negative id picks a queue at random). The message's
// properties are scanned once (message.ScanProperties) and the request classified once
// (plain, batch or prepared); every later decision reads that scan. A UNIQ_KEY is added
// when absent and the CLUSTER property when absent; a prepared message becomes a half
// message, a plain one to an exhausted retry topic goes to the dead-letter queue, and a
// delayed one is parked in the schedule topics; then it is stored and answered with the
// offset message id(s), the queue and the (first) queue offset. A batch body (see
// protocol.BatchReader) is stored as consecutive records of one queue; a batch to a retry
// topic, a transactional batch or one whose wrapper properties carry a DELAY level is
// MESSAGE_ILLEGAL.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/broker/dedup"
	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/transaction"
)

// maxBatchMessages bounds the messages of one SEND_BATCH_MESSAGE. The response names every
// stored message's id (33 bytes each, comma-joined); this keeps it near 2 MiB, far inside
// the 16 MiB header limit, so a batch that is stored can always be answered.
const maxBatchMessages = 1 << 16

// sendKind classifies a send request; it is decided once per request.
type sendKind uint8

const (
	sendPlain    sendKind = iota // one message
	sendBatch                    // SEND_BATCH_MESSAGE or the batch flag
	sendPrepared                 // first phase of a transaction
)

// classify decides what a send request is.
func classify(code protocol.RequestCode, h *protocol.SendMessageRequestHeader, sp *message.SendProps) sendKind {
	switch {
	case code == protocol.SendBatchMessage || h.Batch:
		return sendBatch
	case message.TransactionType(h.SysFlag) == message.TransactionPreparedType || sp.IsPrepared():
		return sendPrepared
	default:
		return sendPlain
	}
}

// sender serves the send family and CONSUMER_SEND_MSG_BACK.
type sender struct {
	store      MessageStore
	topics     TopicTable
	sched      Scheduler
	tx         TxnService
	conns      *conns
	retry      *retryPolicy
	uniq       *message.UniqKeyGenerator
	storeHost  netip.AddrPort
	cluster    string
	autoCreate bool
	log        zerolog.Logger
	scratch    sync.Pool    // of *sendScratch
	rates      *brokerRates // counts stored messages; nil in some unit tests
	repl       *replication // wakes slaves and waits for them (SYNC_MASTER); nil in unit tests
	counts     *meters      // /metrics counters; nil: off (Options.MetricsEnable)
	dedup      *dedup.Table // sends to topics with a dedup window; nil in some unit tests
	acl        acl.Checker  // checks multi-message transaction items (transaction.go); nil: ACL off
}

// sendScratch is the per-request working memory of a send, pooled so that a plain send
// allocates none of it: the property scan and the one-record slice would otherwise escape
// through the store and service interfaces.
type sendScratch struct {
	sp      message.SendProps
	one     [1]message.Record
	props   []byte // the stored properties being built
	rewrite []byte // the schedule rewrite's output
}

// getScratch returns pooled working memory.
func (s *sender) getScratch() *sendScratch {
	if sc, ok := s.scratch.Get().(*sendScratch); ok {
		return sc
	}
	return &sendScratch{props: make([]byte, 0, 512), rewrite: make([]byte, 0, 512)}
}

// putScratch clears references into the request and returns sc to the pool.
func (s *sender) putScratch(sc *sendScratch) {
	sc.sp = message.SendProps{}
	sc.one[0] = message.Record{}
	s.scratch.Put(sc)
}

// handleSend serves SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE.
func (s *sender) handleSend(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	code := protocol.RequestCode(req.Code)
	h, err := protocol.DecodeSendMessageRequestHeader(code, req.ExtFields)
	if err != nil {
		return nil, fail(protocol.SystemError, "decode send header: %v", err)
	}
	queueID, window, err := s.sendQueue(&h)
	if err != nil {
		return nil, err
	}
	sc := s.getScratch()
	defer s.putScratch(sc)
	sp := &sc.sp
	*sp = message.ScanProperties(bytesOf(h.Properties))
	kind := classify(code, &h, sp)
	clientKey := sp.UniqKey != nil

	var recs []message.Record
	if kind == sendBatch {
		if recs, *sp, err = s.batchRecords(req.Body, &h, sp, &sc.props); err != nil {
			return nil, err
		}
	} else {
		props, err := s.brokerProperties(&sc.props, bytesOf(h.Properties), sp)
		if err != nil {
			return nil, fail(protocol.MessageIllegal, "%v", err)
		}
		sc.one[0] = message.Record{Flag: h.Flag, Body: req.Body, Properties: props}
		recs = sc.one[:]
	}
	born := bornHost(ch)
	topic := bytesOf(h.Topic)
	for i := range recs {
		r := &recs[i]
		r.QueueID, r.SysFlag, r.BornTimestamp, r.BornHost = queueID, h.SysFlag, h.BornTimestamp, born
		r.ReconsumeTimes, r.Topic = h.ReconsumeTimes, topic
		if r.SysFlag&message.SysFlagBornHostV6 == 0 && born.Addr().Is6() && !born.Addr().Is4In6() {
			r.SysFlag |= message.SysFlagBornHostV6
		}
	}
	if sp.ReplyToClient != nil {
		s.conns.rememberRequester(sp.ReplyToClient, ch)
	}
	var tk dedup.Ticket // the zero Ticket: no claim
	if window > 0 && kind != sendPrepared && s.dedup != nil {
		var ans dedup.Answer
		var dup bool
		if ans, dup, tk, err = s.claim(ctx, h.Topic, window, kind, sp, clientKey, recs); err != nil {
			return nil, fail(protocol.SystemBusy, "%v", err)
		}
		if dup {
			return s.replay(req, ans, kind, sp), nil
		}
		defer tk.Abort() // nothing stored unless Complete ran first
	}
	switch kind {
	case sendPrepared:
		return s.prepare(ctx, ch, req, h.Topic, &recs[0], sp)
	case sendPlain:
		if err := s.retry.redirectExhausted(&h, &recs[0], sp); err != nil {
			return nil, err
		}
		queueID = recs[0].QueueID
		props, rewritten, err := s.sched.RewriteScanned(&recs[0], sp, sc.rewrite[:0])
		if err != nil {
			return nil, fail(protocol.MessageIllegal, "%v", err)
		}
		if rewritten {
			sc.rewrite = props
		}
	}
	res, err := s.store.PutMessages(recs, sp.WaitStore())
	if err != nil && res.Count == 0 {
		return nil, storeError(err)
	}
	if s.rates != nil {
		s.rates.put(h.Topic, res.Count, int64(res.Bytes))
	}
	if s.counts != nil {
		s.counts.countIn(h.Topic, res.Count, int64(res.Bytes))
	}
	resp := respond(req, s.repl.afterPut(ctx, res.NextOffset(), sp.WaitStore(), sendCode(res)), "")
	rh := protocol.SendMessageResponseHeader{
		MsgID:       s.offsetMsgIDs(recs, res),
		QueueID:     queueID,
		QueueOffset: res.QueueOffset,
		MsgRegion:   "DefaultRegion",
		TraceOn:     true,
	}
	if kind == sendPlain {
		rh.TransactionID = string(sp.UniqKey)
	}
	rh.EncodeExt(&resp.ExtFields)
	ans := dedup.Answer{Code: resp.Code, PhyOffset: res.PhysicalOffset, QueueID: rh.QueueID, QueueOffset: rh.QueueOffset}
	if len(recs) > 1 {
		ans.MsgID = rh.MsgID
	}
	tk.Complete(ans) // no claim: nothing
	return resp, nil
}

// claim asks the dedup table about a send to a topic with a dedup window (package
// dedup): a duplicate's first answer, or the ticket of a new message. The key is the
// message's UNIQ_KEY, a batch's that of its first message; a plain message the client
// sent without one has nothing to match and is not claimed (tk the zero Ticket).
func (s *sender) claim(ctx context.Context, topic string, window time.Duration, kind sendKind, sp *message.SendProps,
	clientKey bool, recs []message.Record) (ans dedup.Answer, dup bool, tk dedup.Ticket, err error) {
	var key []byte
	switch {
	case kind == sendBatch:
		key = message.ScanProperties(recs[0].Properties).UniqKey
	case clientKey:
		key = sp.UniqKey
	}
	if len(key) == 0 {
		return dedup.Answer{}, false, dedup.Ticket{}, nil
	}
	return s.dedup.Claim(ctx, topic, key, window)
}

// replay answers a duplicate send with its first send's answer. The duplicate carries
// the first's UNIQ_KEY in sp, which is a plain send's transaction id.
func (s *sender) replay(req *remoting.Command, ans dedup.Answer, kind sendKind, sp *message.SendProps) *remoting.Command {
	resp := respond(req, protocol.ResponseCode(ans.Code), "")
	rh := protocol.SendMessageResponseHeader{
		MsgID:       ans.MsgID,
		QueueID:     ans.QueueID,
		QueueOffset: ans.QueueOffset,
		MsgRegion:   "DefaultRegion",
		TraceOn:     true,
	}
	if rh.MsgID == "" {
		rh.MsgID = message.OffsetMsgID(s.storeHost, ans.PhyOffset)
	}
	if kind == sendPlain {
		rh.TransactionID = string(sp.UniqKey)
	}
	rh.EncodeExt(&resp.ExtFields)
	return resp
}

// sendQueue checks the target topic (sendTopic) and returns the queue to store in (the
// requested one, or a random writable one when the request names none: a negative id)
// and the topic's dedup window (0: off).
func (s *sender) sendQueue(h *protocol.SendMessageRequestHeader) (int32, time.Duration, error) {
	cfg, err := s.sendTopic(h)
	if err != nil {
		return 0, 0, err
	}
	queueID := h.QueueID
	if queueID < 0 {
		queueID = rand.Int32N(max(cfg.WriteQueueNums, 1))
	}
	if queueID >= max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
		return 0, 0, fail(protocol.InvalidParameter, "queueId %d out of range for topic %s (%d queues)", queueID, h.Topic, cfg.WriteQueueNums)
	}
	return queueID, topicconf.DedupWindow(&cfg), nil
}

// sendTopic finds the target topic's config, creating it when the request may.
func (s *sender) sendTopic(h *protocol.SendMessageRequestHeader) (protocol.TopicConfig, error) {
	if err := protocol.ValidateTopic(h.Topic); err != nil && !protocol.IsRetryTopic(h.Topic) && !protocol.IsDLQTopic(h.Topic) {
		return protocol.TopicConfig{}, fail(protocol.InvalidParameter, "%v", err)
	}
	if protocol.IsSendForbiddenTopic(h.Topic) {
		return protocol.TopicConfig{}, fail(protocol.NoPermission, "sending to system topic %s is forbidden", h.Topic)
	}
	cfg, ok := s.topics.Get(h.Topic)
	if !ok {
		var err error
		switch group, isRetry := protocol.RetryGroup(h.Topic); {
		case isRetry:
			cfg, _, err = s.topics.CreateRetryTopic(group, 1)
		case s.autoCreate:
			cfg, _, err = s.topics.AutoCreate(h.Topic, h.DefaultTopic, int(h.DefaultTopicQueueNums))
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

// brokerProperties returns the properties to store for one message: raw plus a UNIQ_KEY
// when sp says it has none (sp.UniqKey then holds the new one) and the broker's CLUSTER
// when absent. The result is built in buf (no allocation once buf has grown). A new
// UNIQ_KEY's value stays readable through sp.UniqKey even if buf grows afterwards: the
// bytes it points to are never written again.
func (s *sender) brokerProperties(buf *[]byte, raw []byte, sp *message.SendProps) ([]byte, error) {
	out := s.appendUniqKey((*buf)[:0], sp)
	if sp.Cluster == nil && s.cluster != "" {
		var err error
		if out, err = message.AppendProperty(out, message.PropertyCluster, s.cluster); err != nil {
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

// appendUniqKey appends a new UNIQ_KEY pair to dst when sp has none, and points
// sp.UniqKey at its value. It is the one place the broker assigns message ids.
func (s *sender) appendUniqKey(dst []byte, sp *message.SendProps) []byte {
	if sp.UniqKey != nil {
		return dst
	}
	dst = append(dst, message.PropertyUniqKey...)
	dst = append(dst, message.NameValueSeparator)
	start := len(dst)
	dst = s.uniq.AppendNext(dst) // generated in place: AppendPair would need it copied
	end := len(dst)
	dst = append(dst, message.PropertySeparator)
	sp.UniqKey = dst[start:end:end]
	return dst
}

// batchRecords checks a batch request and decodes its items into records whose
// properties get a UNIQ_KEY when they lack one. It returns the scan of the first item's
// properties, which decides whether the send waits for a sync flush.
func (s *sender) batchRecords(body []byte, h *protocol.SendMessageRequestHeader, wrapper *message.SendProps, buf *[]byte) ([]message.Record, message.SendProps, error) {
	var first message.SendProps
	if h.SysFlag&message.SysFlagTransactionMask != 0 {
		return nil, first, fail(protocol.MessageIllegal, "batch messages cannot be transactional")
	}
	if protocol.IsRetryTopic(h.Topic) {
		return nil, first, fail(protocol.MessageIllegal, "batch messages cannot be sent to retry topic %s", h.Topic)
	}
	if wrapper.HasDelayLevel() {
		return nil, first, fail(protocol.MessageIllegal, "batch messages cannot be delayed (DELAY=%s)", wrapper.DelayLevel)
	}
	var recs []message.Record
	type span struct{ start, end int }
	var spans []span
	out := (*buf)[:0]
	r := protocol.NewBatchReader(body)
	for r.Next() {
		if len(recs) == maxBatchMessages {
			return nil, first, fail(protocol.MessageIllegal, "a batch holds at most %d messages", maxBatchMessages)
		}
		it := r.Item()
		sp := message.ScanProperties(it.Properties)
		if len(recs) == 0 {
			first = sp
		}
		start := len(out)
		out = s.appendUniqKey(out, &sp)
		out = append(out, it.Properties...)
		spans = append(spans, span{start, len(out)})
		recs = append(recs, message.Record{Flag: it.Flag, Body: it.Body})
	}
	if err := r.Err(); err != nil {
		return nil, first, fail(protocol.MessageIllegal, "%v", err)
	}
	if len(recs) == 0 {
		return nil, first, fail(protocol.MessageIllegal, "empty batch")
	}
	for i := range recs {
		recs[i].Properties = out[spans[i].start:spans[i].end]
	}
	*buf = out
	first.UniqKey = nil // points into a buffer that may have moved; not used for batches
	return recs, first, nil
}

// prepare stores a half message of topic and builds the send response. The connection it came on
// is remembered per producer group as the fallback target of checks (a Go producer that
// sends before its first heartbeat is otherwise invisible for up to 30 s).
func (s *sender) prepare(ctx context.Context, ch remoting.Channel, req *remoting.Command, topic string, rec *message.Record,
	sp *message.SendProps) (*remoting.Command, error) {
	s.conns.rememberTx(string(sp.ProducerGroup), ch)
	if err := s.checkTxItems(ch, req, rec); err != nil {
		return nil, err
	}
	res, err := s.tx.PrepareScanned(rec, sp, sp.WaitStore())
	if err != nil {
		if errors.Is(err, transaction.ErrNoProducerGroup) || errors.Is(err, transaction.ErrBadItems) {
			return nil, fail(protocol.MessageIllegal, "%v", err)
		}
		return nil, storeError(err)
	}
	if s.counts != nil {
		s.counts.countIn(topic, 1, int64(res.Append.Bytes))
	}
	resp := respond(req, s.repl.afterPut(ctx, res.Append.NextOffset(), sp.WaitStore(), sendCode(res.Append)), "")
	rh := protocol.SendMessageResponseHeader{
		MsgID:         message.OffsetMsgID(s.storeHost, res.Append.PhysicalOffset),
		QueueID:       res.QueueID,
		QueueOffset:   res.Append.QueueOffset,
		TransactionID: res.TransactionID,
		MsgRegion:     "DefaultRegion",
		TraceOn:       true,
	}
	rh.EncodeExt(&resp.ExtFields)
	return resp, nil
}

// offsetMsgIDs returns the offset message ids of stored records, comma-joined.
func (s *sender) offsetMsgIDs(recs []message.Record, res store.PutResult) string {
	if len(recs) == 1 {
		return message.OffsetMsgID(s.storeHost, res.PhysicalOffset)
	}
	var sb strings.Builder
	off := res.PhysicalOffset
	for i := range recs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(message.OffsetMsgID(s.storeHost, off))
		off += int64(recs[i].Size())
	}
	return sb.String()
}

// sendCode maps an append outcome to the send response code.
func sendCode(res store.PutResult) protocol.ResponseCode {
	if res.Status == store.PutOK {
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

// bytesOf views a string's bytes without copying; the result must not be modified.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

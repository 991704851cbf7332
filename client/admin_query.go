package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Message lookups: by business key and by unique key (QUERY_MESSAGE on every broker of
// the topic, in parallel), by offset message id (VIEW_MESSAGE_BY_ID on the store host
// the id names) and by queue offset (a one-message pull as the tools consumer group),
// through the typed calls of calls.go.
//
// Message id layouts (hex, either case; spec §8.5):
//
//	offset id (broker-made):   store IP (4 bytes, 16 for IPv6) | port int32 | commit-log offset int64
//	client id (UNIQ_KEY):      client IP (4 or 16) | pid int16 | 4-byte value | ms in month int32 | counter int16
//
// Both are 32 hex characters with IPv4 addresses and 56 with IPv6, so the length does
// not tell them apart: QueryByID tries the id as a UNIQ_KEY of the topic first (when a
// topic is given), then as an offset id, and dials only store hosts that are brokers
// the name servers know (a UNIQ_KEY read as an offset id names a bogus address).

// toolsConsumerGroup is the group the admin pulls as (RocketMQ's TOOLS_CONSUMER, which
// Java brokers define by default); brokers that auto-create groups create it.
const toolsConsumerGroup = "TOOLS_CONSUMER"

// Query limits: a broker returns at most 64 messages per key query, and 32 per UNIQ_KEY.
const (
	maxQueryMessages = 64
	uniqKeyQueryMax  = 32
)

// QueryByKey finds the messages of topic whose KEYS hold key, stored between begin and
// end (a zero begin means the beginning, a zero end means no limit), on every broker of
// the topic (QUERY_MESSAGE). At most maxNum messages come back (≤ 0 or more than 64
// means 64, the brokers' limit), the newest ones, ordered by store time. Nothing found is
// an error wrapping ErrNotFound; an unknown topic one wrapping ErrNoRoute. Brokers that
// fail while others answer are logged and skipped.
func (a *Admin) QueryByKey(ctx context.Context, topic, key string, begin, end time.Time, maxNum int) ([]*MessageExt, error) {
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	if key == "" || strings.Contains(key, message.KeySeparator) {
		return nil, fmt.Errorf("%w: key %q: want one non-empty word (KEYS are space-separated)", ErrInvalidArgument, key)
	}
	from, to := int64(0), int64(math.MaxInt64)
	if !begin.IsZero() {
		from = begin.UnixMilli()
	}
	if !end.IsZero() {
		to = end.UnixMilli()
	}
	if from > to {
		return nil, fmt.Errorf("%w: time range begins (%s) after it ends (%s)", ErrInvalidArgument,
			begin.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	}
	if maxNum <= 0 || maxNum > maxQueryMessages {
		maxNum = maxQueryMessages
	}
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: query by key: %w", err)
	}
	h := protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: int32(maxNum), BeginTimestamp: from, EndTimestamp: to}
	what := fmt.Sprintf("no message of topic %s with key %q stored in that time range", topic, key)
	msgs, err := a.query(ctx, r, &h, what, func(m *MessageExt) bool { return slices.Contains(m.Keys(), key) })
	if err != nil {
		return nil, fmt.Errorf("client: query %s by key %q: %w", topic, key, err)
	}
	if len(msgs) > maxNum {
		msgs = msgs[len(msgs)-maxNum:]
	}
	return msgs, nil
}

// QueryByID finds a message by either kind of id: a client id (UNIQ_KEY, what
// SendResult.MsgID and MessageExt.MsgID show), looked up in topic's index on every broker
// of the topic, or an offset id (SendResult.OffsetMsgID, MessageExt.OffsetMsgID), read at
// the commit-log offset it names on the broker it names (topic may then be empty). Usually
// one message comes back; more when a producer's retry stored the same message twice. An
// id that is not 32 or 56 hex characters is an error wrapping ErrInvalidArgument and
// message.ErrBadMsgID; an id found neither way one wrapping ErrNotFound (and ErrNoRoute
// when topic is unknown).
func (a *Admin) QueryByID(ctx context.Context, topic, id string) ([]*MessageExt, error) {
	if err := checkMsgID(id); err != nil {
		return nil, err
	}
	var errs []error
	if topic != "" {
		if err := checkTopic(topic); err != nil {
			return nil, err
		}
		msgs, err := a.queryUniqKey(ctx, topic, id)
		if err == nil {
			return msgs, nil
		}
		errs = append(errs, fmt.Errorf("as a client id of topic %s: %w", topic, err))
	}
	m, err := a.viewByOffsetID(ctx, id)
	if err == nil {
		return []*MessageExt{m}, nil
	}
	errs = append(errs, fmt.Errorf("as an offset id: %w", err))
	if topic == "" {
		errs = append(errs, errors.New("(a client id is looked up only with its topic)"))
	}
	return nil, fmt.Errorf("client: message id %s: %w", id, errors.Join(errs...))
}

// isHexDigit reports whether c is 0-9, a-f or A-F.
func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// checkMsgID checks the layout shared by both kinds of message id: 32 or 56 hex
// characters.
func checkMsgID(id string) error {
	bad := len(id) != message.OffsetMsgIDLenV4 && len(id) != message.OffsetMsgIDLenV6
	for i := 0; i < len(id) && !bad; i++ {
		c := id[i]
		bad = !isHexDigit(c)
	}
	if bad {
		return fmt.Errorf("%w: %w: message id %.80q: want %d or %d hex characters (an offset id or a client id)",
			ErrInvalidArgument, message.ErrBadMsgID, id, message.OffsetMsgIDLenV4, message.OffsetMsgIDLenV6)
	}
	return nil
}

// queryUniqKey looks a UNIQ_KEY up on every broker of topic.
func (a *Admin) queryUniqKey(ctx context.Context, topic, id string) ([]*MessageExt, error) {
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	h := protocol.QueryMessageRequestHeader{Topic: topic, Key: id, MaxNum: uniqKeyQueryMax,
		EndTimestamp: math.MaxInt64, UniqueKeyQuery: true}
	return a.query(ctx, r, &h, "no message with that UNIQ_KEY", func(m *MessageExt) bool { return m.UniqKey() == id })
}

// query sends a QUERY_MESSAGE to every broker of r and merges the messages match
// accepts (brokers' indexes may return hash collisions), ordered by store time (then
// broker name and commit-log offset: store order within a millisecond). When
// nothing matched it fails with ErrNotFound (saying what) if at least one broker
// answered, with the brokers' errors otherwise.
func (a *Admin) query(ctx context.Context, r *TopicRoute, h *protocol.QueryMessageRequestHeader, what string,
	match func(*MessageExt) bool) ([]*MessageExt, error) {
	var out []*MessageExt
	var errs []error
	onEachBroker(r.brokers(), func(b brokerRef) ([]*MessageExt, error) {
		return a.c.queryMessages(ctx, b.addr, b.name, h)
	}, func(b brokerRef, msgs []*MessageExt, err error) {
		if hasCode(err, protocol.QueryNotFound) {
			return
		}
		if err != nil {
			// A malformed record: the messages before it still count.
			errs = append(errs, fmt.Errorf("broker %s (%s): %w", b.name, b.addr, err))
		}
		for _, m := range msgs {
			if m.Topic == h.Topic && match(m) {
				out = append(out, m)
			}
		}
	})
	switch {
	case len(out) > 0:
	case len(errs) == 0:
		return nil, fmt.Errorf("%w: %s", ErrNotFound, what)
	case len(errs) < len(r.brokers()):
		return nil, fmt.Errorf("%w: %s on the brokers that answered: %w", ErrNotFound, what, errors.Join(errs...))
	default:
		return nil, errors.Join(errs...)
	}
	for _, err := range errs {
		a.c.log.Warn().Err(err).Str("topic", h.Topic).Str("key", h.Key).Msg("query: a broker failed; its messages are missing")
	}
	slices.SortFunc(out, func(x, y *MessageExt) int {
		return cmp.Or(x.StoreTime.Compare(y.StoreTime), strings.Compare(x.Queue.BrokerName, y.Queue.BrokerName),
			cmp.Compare(x.CommitLogOffset, y.CommitLogOffset))
	})
	return slices.CompactFunc(out, func(x, y *MessageExt) bool {
		return x.Queue.BrokerName == y.Queue.BrokerName && x.CommitLogOffset == y.CommitLogOffset
	}), nil
}

// viewByOffsetID reads the record an offset message id names from its store host, when
// that host is a broker the name servers know.
func (a *Admin) viewByOffsetID(ctx context.Context, id string) (*MessageExt, error) {
	host, offset, err := message.DecodeOffsetMsgID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: it cannot be one: %w", ErrNotFound, err)
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	b, addr, ok := ci.brokerAt(host.String())
	if !ok {
		return nil, fmt.Errorf("%w: it names store host %s, which is no broker the name servers know", ErrNotFound, host)
	}
	msgs, err := a.c.viewMessage(ctx, addr, b.Name, offset)
	switch {
	case hasCode(err, protocol.SystemError):
		return nil, fmt.Errorf("%w: broker %s has no message at commit-log offset %d: %w", ErrNotFound, b.Name, offset, err)
	case err != nil:
		return nil, fmt.Errorf("client: view message %s from %s: %w", id, addr, err)
	}
	if len(msgs) == 0 || !strings.EqualFold(msgs[0].OffsetMsgID, id) {
		return nil, fmt.Errorf("%w: broker %s holds no record with id %s at commit-log offset %d", ErrNotFound, b.Name, id, offset)
	}
	return msgs[0], nil
}

// QueryByOffset reads the message at offset of queue queueID of topic on broker group
// brokerName (which may be empty when the topic lives on one broker). It pulls one
// message as the tools consumer group TOOLS_CONSUMER, without committing anything; a
// broker that auto-creates groups creates that group. An offset outside the queue's
// stored range is an error wrapping ErrNotFound that names the range.
func (a *Admin) QueryByOffset(ctx context.Context, topic, brokerName string, queueID int32, offset int64) (*MessageExt, error) {
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	if queueID < 0 || offset < 0 {
		return nil, fmt.Errorf("%w: queue %d, offset %d: both must be ≥ 0", ErrInvalidArgument, queueID, offset)
	}
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: query by offset: %w", err)
	}
	if brokerName == "" {
		bs := r.brokers()
		if len(bs) != 1 {
			names := make([]string, len(bs))
			for i, b := range bs {
				names[i] = b.name
			}
			return nil, fmt.Errorf("%w: topic %s lives on brokers %s: name one", ErrInvalidArgument, topic, strings.Join(names, ", "))
		}
		brokerName = bs[0].name
	}
	qi, ok := r.queues(brokerName)
	addr := r.master(brokerName)
	if !ok || addr == "" {
		return nil, fmt.Errorf("%w: topic %s has no queues on a broker %s with a master", ErrInvalidArgument, topic, brokerName)
	}
	if n := max(qi.ReadQueues, qi.WriteQueues); queueID >= n {
		return nil, fmt.Errorf("%w: topic %s has %d queues on broker %s; queue %d does not exist", ErrInvalidArgument,
			topic, n, brokerName, queueID)
	}
	return a.pullOne(ctx, addr, MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: queueID}, offset)
}

// pullOne pulls the message at offset of mq from addr.
func (a *Admin) pullOne(ctx context.Context, addr string, mq MessageQueue, offset int64) (*MessageExt, error) {
	ans, err := a.c.pullMessage(ctx, addr, &pullRequest{group: toolsConsumerGroup, mq: mq, offset: offset, max: 1})
	switch {
	case ans.answered && ans.status != PullFound && err != nil:
		return nil, fmt.Errorf("%w: %s has no message at offset %d: %w", ErrNotFound, mq, offset, err)
	case ans.answered && ans.status != PullFound:
		return nil, fmt.Errorf("%w: %s has no message at offset %d: it holds offsets [%d, %d)", ErrNotFound, mq,
			offset, ans.min, ans.max)
	case err != nil:
		return nil, fmt.Errorf("client: pull %s at offset %d: %w", mq, offset, err)
	}
	msgs, err := decodeMessages(ans.body, mq.BrokerName, nil, &a.c.log)
	if err != nil {
		return nil, fmt.Errorf("client: pull %s at offset %d from %s: %w", mq, offset, addr, err)
	}
	for _, m := range msgs {
		if m.QueueOffset == offset {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%w: %s has no message at offset %d (the next one is later)", ErrNotFound, mq, offset)
}

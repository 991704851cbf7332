package broker

// PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361).
//
// Behaviour: check the group (auto-created) and topic, the read permission and the queue
// id; take the subscription from the request (sysflag 0x4) or from the group's heartbeat
// (SUBSCRIPTION_NOT_EXIST when missing), a TAG or an SQL92 one (sqlfilter.go; an
// expression that does not compile is refused with SUBSCRIPTION_PARSE_FAILED); store the piggy-backed commit offset (sysflag
// 0x1); read up to maxMsgNums messages, filtering by tag hashes recomputed from the tag
// strings (the Go client's codeSet hashes UTF-8 bytes and would drop non-ASCII tags); send
// the stored records as the body without copying them. When nothing is new and the
// request allows suspension (0x2), hold it until a message arrives in that queue or the
// requested timeout passes (long polling), then answer.
//
// Every answer suggests the broker of the queue's next pull (suggestWhichBrokerId, storage
// spec §6.2): the master (0) unless slaveReadEnable is set; with it, the group's
// whichBrokerWhenConsumeSlowly (default 1) when the last record read lies further behind
// the log's end than the in-memory limit (the consumer lags and reads from disk), else the
// group's brokerId (default 0). Unlike RocketMQ, a SLAVE without slaveReadEnable does
// not refuse pulls (PULL_RETRY_IMMEDIATELY): it serves them and suggests the master, so
// consumers keep reading while the master is down and move back once it returns.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/filter"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// maxPullBytes bounds one pull response body (RocketMQ: 256 KiB in memory).
const maxPullBytes = 256 << 10

// puller serves the pull family.
type puller struct {
	store   MessageStore
	topics  TopicTable
	groups  GroupTable
	clients ClientRegistry
	offsets OffsetTable
	polls   *longPoll
	// master: only a master stores the offsets piggy-backed on pulls.
	master bool
	// slaveRead (slaveReadEnable) lets answers suggest a slave; without it they suggest
	// the master.
	slaveRead bool
	sql       *sqlFilters  // SQL92 subscriptions (enablePropertyFilter)
	rates     *brokerRates // counts served messages; nil in some unit tests
	counts    *meters      // /metrics counters and pull offsets; nil: off (Options.MetricsEnable)
	skips     *pullSkips   // pulls below a queue's minimum (retention.go); nil in some unit tests
}

// newPuller returns pl, its parts filled in by the caller, with its long-poll holder,
// which answers the pulls it held by pulling again without suspension.
func newPuller(pl *puller, clock func() time.Time, longPolling bool, shortTimeout time.Duration,
	log zerolog.Logger) *puller {
	pl.polls = newLongPoll(pl.store.MaxOffset, func(p *pullRequest) *remoting.Command { return pl.pull(p, false) },
		clock, longPolling, shortTimeout, log)
	return pl
}

// pullRequest is a decoded pull with its filter, kept while the request is held.
type pullRequest struct {
	ch     remoting.Channel
	req    *remoting.Command
	h      protocol.PullMessageRequestHeader
	filter *tagFilter   // a TAG subscription's tags; nil: every tag
	sql    *filter.Expr // an SQL92 subscription; nil for TAG
	// The group's brokerId and whichBrokerWhenConsumeSlowly, for the suggestion.
	brokerID, slowBrokerID int64
}

// handlePull serves a pull request.
func (pl *puller) handlePull(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	h := protocol.PullMessageRequestHeader{}
	if err := h.DecodeExt(req.ExtFields); err != nil {
		return nil, fail(protocol.SystemError, "decode pull header: %v", err)
	}
	gcfg, _, err := pl.groups.FindOrCreate(h.ConsumerGroup)
	if err != nil {
		return nil, fail(protocol.SubscriptionGroupNotExist, "subscription group %s: %v", h.ConsumerGroup, err)
	}
	if !gcfg.ConsumeEnable {
		return nil, fail(protocol.NoPermission, "group %s may not consume", h.ConsumerGroup)
	}
	tcfg, ok := pl.topics.Get(h.Topic)
	if !ok {
		return nil, fail(protocol.TopicNotExist, "topic %s does not exist", h.Topic)
	}
	if !protocol.PermReadable(tcfg.Perm) {
		return nil, fail(protocol.NoPermission, "topic %s is not readable", h.Topic)
	}
	if h.QueueID < 0 || h.QueueID >= tcfg.ReadQueueNums {
		return nil, fail(protocol.InvalidParameter, "queueId %d out of range for topic %s (%d read queues)", h.QueueID, h.Topic, tcfg.ReadQueueNums)
	}
	var (
		tags *tagFilter
		sql  *filter.Expr
	)
	if h.SysFlag&protocol.PullFlagSubscription != 0 {
		if sql, err = pl.sql.forSubscription(protocol.ExpressionType(h.ExpressionType), h.Subscription); err != nil {
			return nil, err
		}
		if sql == nil {
			tags = parseTagExpression(h.Subscription)
		}
	} else {
		sub, ok := pl.clients.Subscription(h.ConsumerGroup, h.Topic)
		if !ok {
			return nil, fail(protocol.SubscriptionNotExist, "group %s has no subscription for %s; heartbeat first", h.ConsumerGroup, h.Topic)
		}
		if sql, err = pl.sql.forSubscription(sub.ExpressionType, sub.SubString); err != nil {
			return nil, err
		}
		if sql == nil {
			tags = tagFilterFrom(sub.SubString, sub.TagsSet)
		}
	}
	if h.SysFlag&protocol.PullFlagCommitOffset != 0 && pl.master {
		pl.offsets.CommitFrom(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset, ch.ID(), req.Seq) // in arrival order, see offset.go
	}
	p := &pullRequest{ch: ch, req: req, h: h, filter: tags, sql: sql,
		brokerID: gcfg.BrokerID, slowBrokerID: gcfg.WhichBrokerWhenConsumeSlowly}
	suspend := h.SysFlag&protocol.PullFlagSuspend != 0
	return pl.pull(p, suspend), nil
}

// MatchTagsCode implements store.Filter: a TAG subscription's tag hashes.
func (p *pullRequest) MatchTagsCode(code int64) bool {
	return p.filter == nil || p.filter.matchCode(code)
}

// MatchRecord implements store.Filter: an SQL92 subscription, evaluated over the stored
// record's properties (read in place, nothing copied).
func (p *pullRequest) MatchRecord(rec []byte) bool {
	if p.sql == nil {
		return true
	}
	props, err := message.RecordProperties(rec)
	return err == nil && p.sql.Match(props)
}

// pull reads messages for p. With suspend, an empty result parks the request and pull
// returns nil: the long-poll holder answers it later.
func (pl *puller) pull(p *pullRequest, suspend bool) *remoting.Command {
	h := &p.h
	var f store.Filter
	if p.filter != nil || p.sql != nil {
		f = p
	}
	r, err := pl.store.PullMessages(h.Topic, h.QueueID, h.QueueOffset, int(max(h.MaxMsgNums, 1)), maxPullBytes, f)
	if err != nil {
		return respond(p.req, protocol.SystemError, err.Error())
	}
	code, next := pullCode(r.Status, h.QueueOffset, r)
	if r.Status == store.OffsetTooSmall {
		pl.skips.note(h.ConsumerGroup, h.Topic, h.QueueID, h.QueueOffset, r.NextBeginOffset)
	}
	if code == protocol.PullNotFound && suspend {
		r.Release()
		pl.polls.hold(p)
		// A message may have been dispatched between the read and the hold.
		if m := pl.store.MaxOffset(h.Topic, h.QueueID); m > h.QueueOffset {
			pl.polls.notify(h.Topic, h.QueueID, m)
		}
		return nil
	}
	resp := respond(p.req, code, "")
	rh := protocol.PullMessageResponseHeader{NextBeginOffset: next, MinOffset: r.MinOffset, MaxOffset: r.MaxOffset,
		SuggestWhichBrokerID: pl.suggest(p, r.InDisk)}
	rh.EncodeExt(&resp.ExtFields)
	if code == protocol.Success {
		if pl.rates != nil {
			pl.rates.get(h.Topic, h.ConsumerGroup, len(r.Messages), int64(r.Bytes))
		}
		if pl.counts != nil {
			pl.counts.countOut(h.Topic, h.ConsumerGroup, h.QueueID, len(r.Messages), int64(r.Bytes), next)
		}
		resp.BodyVec = r.Messages
		resp.OnWritten = func(error) { r.Release() }
	} else {
		r.Release()
	}
	return resp
}

// masterID is the broker id of a master.
const masterID = 0

// suggest is the broker id an answer to p suggests for the queue's next pull; inDisk
// reports that the read lagged beyond the in-memory limit (see the file comment).
func (pl *puller) suggest(p *pullRequest, inDisk bool) int64 {
	switch {
	case !pl.slaveRead:
		return masterID
	case inDisk:
		return p.slowBrokerID
	default:
		return p.brokerID
	}
}

// pullCode maps a store status to the pull response code and next offset (spec §6.2).
func pullCode(st store.GetStatus, offset int64, r *store.GetResult) (protocol.ResponseCode, int64) {
	switch st {
	case store.Found:
		return protocol.Success, r.NextBeginOffset
	case store.NoMatchedMessage:
		return protocol.PullRetryImmediately, r.NextBeginOffset
	case store.NoMessageInQueue, store.NoMatchedLogicQueue:
		if offset != 0 {
			return protocol.PullOffsetMoved, 0
		}
		return protocol.PullNotFound, 0
	case store.OffsetOverflowOne:
		return protocol.PullNotFound, offset
	default: // OffsetOverflowBadly, OffsetTooSmall
		return protocol.PullOffsetMoved, r.NextBeginOffset
	}
}

// tagFilter matches the tags of a TAG subscription by Java hash.
type tagFilter struct {
	codes map[int64]struct{}
}

// matchCode reports whether a consume-queue tags code may match.
func (f *tagFilter) matchCode(code int64) bool {
	_, ok := f.codes[code]
	return ok
}

// parseTagExpression parses "*" (nil: everything), or "a || b".
func parseTagExpression(expr string) *tagFilter {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == protocol.SubscribeAll {
		return nil
	}
	var tags []string
	for _, t := range strings.Split(expr, "||") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	return tagFilterFrom(expr, tags)
}

// tagFilterFrom builds a filter from a subscription's tag strings, hashing them the Java
// way so non-ASCII tags match what the dispatcher stored.
func tagFilterFrom(sub string, tags []string) *tagFilter {
	if strings.TrimSpace(sub) == protocol.SubscribeAll || sub == "" || len(tags) == 0 {
		return nil
	}
	f := &tagFilter{codes: make(map[int64]struct{}, len(tags))}
	for _, t := range tags {
		f.codes[message.TagsHash(t)] = struct{}{}
	}
	return f
}

// String describes the filter for logs.
func (f *tagFilter) String() string {
	if f == nil {
		return "*"
	}
	return fmt.Sprintf("%d tags", len(f.codes))
}

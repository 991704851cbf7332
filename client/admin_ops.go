package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/protocol"
)

// Operator reads and copies in the admin API: the messages of a topic stored in a time
// range (which ferryctl's message list and dlq commands read), copying a group's
// committed offsets to another group, and a broker's traffic statistics
// (VIEW_BROKER_STATS_DATA).

// listPullBatch is how many messages one pull of MessagesByTime asks for.
const listPullBatch = 32

// MessagesByTime returns the messages of every queue of topic (on every broker holding
// it) stored between begin and end inclusive, ordered by store time (then broker name
// and commit-log offset). A zero begin means the oldest message still stored, a zero end
// no limit. At most maxNum messages come back (maxNum must be positive), the oldest
// ones; truncated reports that more were stored in the range. (QueryByTime, the web
// console's, is bounded to 256 messages and 16 pulls a queue, and reads only the read
// queues.)
//
// Each queue is searched for its first offset stored at or after begin
// (SEARCH_OFFSET_BY_TIMESTAMP; GET_MIN_OFFSET without begin) and read forward from there
// with pulls as the tools consumer group TOOLS_CONSUMER (nothing is committed), up to
// the queue's end (GET_MAX_OFFSET as it was at the start), the first message stored
// after end, or maxNum+1 messages. Brokers are read in parallel. An unknown topic is an
// error wrapping ErrNoRoute; a broker that refuses (a RocketMQ broker refuses pulls of a
// topic without read permission, as its %DLQ% topics are created) an error naming it.
func (a *Admin) MessagesByTime(ctx context.Context, topic string, begin, end time.Time, maxNum int) ([]*MessageExt, bool, error) {
	if err := checkTopic(topic); err != nil {
		return nil, false, err
	}
	if maxNum <= 0 {
		return nil, false, fmt.Errorf("%w: at most %d messages: want a positive number", ErrInvalidArgument, maxNum)
	}
	if !begin.IsZero() && !end.IsZero() && begin.After(end) {
		return nil, false, fmt.Errorf("%w: time range begins (%s) after it ends (%s)", ErrInvalidArgument,
			begin.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	}
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, false, fmt.Errorf("client: messages by time: %w", err)
	}
	var out []*MessageExt
	var errs []error
	onEachBroker(r.brokers(), func(b brokerRef) ([]*MessageExt, error) {
		var msgs []*MessageExt
		for _, mq := range r.messageQueues(b.name) {
			got, err := a.readWindow(ctx, b.addr, mq, begin, end, maxNum+1)
			msgs = append(msgs, got...)
			if err != nil {
				return msgs, err
			}
		}
		return msgs, nil
	}, func(b brokerRef, msgs []*MessageExt, err error) {
		out = append(out, msgs...)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: messages of %s on broker %s (%s): %w", topic, b.name, b.addr, err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	slices.SortFunc(out, func(x, y *MessageExt) int {
		return cmp.Or(x.StoreTime.Compare(y.StoreTime), strings.Compare(x.Queue.BrokerName, y.Queue.BrokerName),
			cmp.Compare(x.CommitLogOffset, y.CommitLogOffset))
	})
	if len(out) > maxNum {
		return out[:maxNum], true, nil
	}
	return out, false, nil
}

// readWindow reads up to limit messages of mq at addr stored between begin and end (zero:
// unbounded).
func (a *Admin) readWindow(ctx context.Context, addr string, mq MessageQueue, begin, end time.Time, limit int) ([]*MessageExt, error) {
	var off int64
	var err error
	if begin.IsZero() {
		off, err = a.c.minOffset(ctx, addr, mq)
	} else {
		off, err = a.c.offsetByTime(ctx, addr, mq, begin.UnixMilli())
	}
	if err != nil {
		return nil, fmt.Errorf("start offset of %s: %w", mq, err)
	}
	last, err := a.c.maxOffset(ctx, addr, mq)
	if err != nil {
		return nil, fmt.Errorf("max offset of %s: %w", mq, err)
	}
	var out []*MessageExt
	for off < last && len(out) < limit {
		ans, err := a.c.pullMessage(ctx, addr, &pullRequest{group: toolsConsumerGroup, mq: mq, offset: off, max: listPullBatch})
		if err != nil {
			return out, fmt.Errorf("pull %s at offset %d: %w", mq, off, err)
		}
		if ans.status != PullFound {
			if ans.status != PullOffsetIllegal || ans.next <= off {
				return out, nil // nothing more to read
			}
			off = ans.next // the queue was cleaned below off: go on from its start
			continue
		}
		msgs, err := decodeMessages(ans.body, mq.BrokerName, nil, &a.c.log)
		if err != nil {
			return out, fmt.Errorf("pull %s at offset %d: %w", mq, off, err)
		}
		for _, m := range msgs {
			if m.QueueOffset < off || m.QueueOffset >= last {
				continue
			}
			if (!end.IsZero() && m.StoreTime.After(end)) || len(out) == limit {
				return out, nil
			}
			out = append(out, m)
		}
		if ans.next <= off {
			return out, nil
		}
		off = ans.next
	}
	return out, nil
}

// OffsetCopy is one queue of CloneOffsets: the source group's committed offset (−1 when
// it has none, and then nothing was copied).
type OffsetCopy struct {
	// Queue names the queue.
	Queue MessageQueue
	// Offset is the source group's committed offset, now also the destination's.
	Offset int64
}

// CloneOffsets copies src's committed offset of every queue consumers read of topic to
// dst, queue by queue on each broker (QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, as
// mqadmin cloneGroupOffset). Queues where src has no offset are reported with −1 and
// left alone. Online consumers of dst keep their own positions and overwrite the copies
// with their next commit: stop them first. The result is sorted by broker and queue.
func (a *Admin) CloneOffsets(ctx context.Context, src, dst, topic string) ([]OffsetCopy, error) {
	for _, g := range []string{src, dst} {
		if err := checkGroup(g); err != nil {
			return nil, err
		}
	}
	if src == dst {
		return nil, fmt.Errorf("%w: source and destination are the same group %s", ErrInvalidArgument, src)
	}
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: clone offsets: %w", err)
	}
	var out []OffsetCopy
	var errs []error
	onEachBroker(r.brokers(), func(b brokerRef) ([]OffsetCopy, error) {
		var copies []OffsetCopy
		for _, mq := range r.readQueues(b.name) {
			off, err := a.c.committedOffset(ctx, b.addr, src, mq)
			if err != nil {
				return copies, fmt.Errorf("offset of %s in %s: %w", src, mq, err)
			}
			if off >= 0 {
				if err := a.c.commitOffset(ctx, b.addr, dst, mq, off); err != nil {
					return copies, fmt.Errorf("set offset of %s in %s to %d: %w", dst, mq, off, err)
				}
			}
			copies = append(copies, OffsetCopy{Queue: mq, Offset: off})
		}
		return copies, nil
	}, func(b brokerRef, copies []OffsetCopy, err error) {
		out = append(out, copies...)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: clone offsets of %s to %s on broker %s (%s): %w", src, dst, b.name, b.addr, err))
		}
	})
	slices.SortFunc(out, func(x, y OffsetCopy) int { return compareQueues(x.Queue, y.Queue) })
	return out, errors.Join(errs...)
}

// BrokerStats reads statistic name (protocol.StatsTopicPutNums and the others) for key
// ("topic", or "topic@group" for the GROUP_ statistics) from one broker (address or
// broker name) (VIEW_BROKER_STATS_DATA). A statistic the broker has counted nothing for
// is an error wrapping ErrNotFound (brokers answer SYSTEM_ERROR "... not exist"); a
// broker that does not serve the request a *BrokerError with REQUEST_CODE_NOT_SUPPORTED.
func (a *Admin) BrokerStats(ctx context.Context, broker, name, key string) (*protocol.BrokerStatsData, error) {
	addr, err := a.brokerAddr(ctx, broker)
	if err != nil {
		return nil, fmt.Errorf("client: broker stats: %w", err)
	}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.ViewBrokerStatsData,
		&protocol.ViewBrokerStatsDataRequestHeader{StatsName: name, StatsKey: key}))
	var be *BrokerError
	switch {
	case errors.As(err, &be) && be.Code == protocol.SystemError && strings.Contains(be.Remark, "not exist"):
		return nil, fmt.Errorf("%w: broker %s has no %s statistic for %s: %w", ErrNotFound, broker, name, key, err)
	case err != nil:
		return nil, fmt.Errorf("client: %s of %s from %s: %w", name, key, addr, err)
	}
	d, err := protocol.DecodeBrokerStatsData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: %s of %s from %s: %w", name, key, addr, err)
	}
	return d, nil
}

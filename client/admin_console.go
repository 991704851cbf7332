package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Message lookups by store time, for the web console (package console): the messages of a
// topic stored in a time range, read queue by queue from the offset SEARCH_OFFSET_BY_TIMESTAMP
// names, with pulls as the tools consumer group (as QueryByOffset), without committing
// anything.

// maxTimeQuery bounds the messages QueryByTime returns, and pullsPerQueue the pulls it
// spends on one queue (each returns at most timeQueryBatch messages).
const (
	maxTimeQuery   = 256
	timeQueryBatch = 32
	pullsPerQueue  = 16
)

// QueryByTime returns the messages of topic stored from begin to end (a zero begin
// means the oldest message stored, a zero end means no limit), oldest first, at most
// maxNum (≤ 0 or more than 256 means 256) and at most maxNum per queue: each queue of
// every broker of the topic is read from the first offset stored at or after begin. A
// topic without messages in the range gives an empty list; an unknown topic an error
// wrapping ErrNoRoute. Queues that fail while others answer are skipped, and their
// errors returned joined with the messages found.
func (a *Admin) QueryByTime(ctx context.Context, topic string, begin, end time.Time, maxNum int) ([]*MessageExt, error) {
	if err := checkTopic(topic); err != nil {
		return nil, err
	}
	if !begin.IsZero() && !end.IsZero() && end.Before(begin) {
		return nil, fmt.Errorf("%w: end %s is before begin %s", ErrInvalidArgument, end.Format(time.RFC3339), begin.Format(time.RFC3339))
	}
	if maxNum <= 0 || maxNum > maxTimeQuery {
		maxNum = maxTimeQuery
	}
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: query by time: %w", err)
	}
	var out []*MessageExt
	var errs []error
	for _, b := range r.brokers() {
		for _, mq := range r.readQueues(b.name) {
			msgs, err := a.queueRange(ctx, b.addr, mq, begin, end, maxNum)
			out = append(out, msgs...)
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	slices.SortStableFunc(out, func(x, y *MessageExt) int {
		return cmp.Or(x.StoreTime.Compare(y.StoreTime), compareQueues(x.Queue, y.Queue), cmp.Compare(x.QueueOffset, y.QueueOffset))
	})
	if len(out) > maxNum {
		out = out[:maxNum]
	}
	return out, errors.Join(errs...)
}

// queueRange reads up to maxNum messages of mq stored from begin to end from addr.
func (a *Admin) queueRange(ctx context.Context, addr string, mq MessageQueue, begin, end time.Time, maxNum int) ([]*MessageExt, error) {
	var offset int64
	var err error
	if begin.IsZero() {
		offset, err = a.c.minOffset(ctx, addr, mq)
	} else {
		offset, err = a.c.offsetByTime(ctx, addr, mq, begin.UnixMilli())
	}
	if err != nil {
		return nil, fmt.Errorf("client: start offset of %s: %w", mq, err)
	}
	var out []*MessageExt
	for range pullsPerQueue {
		ans, err := a.c.pullMessage(ctx, addr, &pullRequest{group: toolsConsumerGroup, mq: mq, offset: offset, max: timeQueryBatch})
		switch {
		case err != nil:
			return out, fmt.Errorf("client: pull %s at offset %d: %w", mq, offset, err)
		case ans.status == PullOffsetIllegal && ans.next > offset:
			offset = ans.next // below the queue's minimum: start at its first message
			continue
		case ans.status != PullFound:
			return out, nil
		}
		msgs, err := decodeMessages(ans.body, mq.BrokerName, nil, &a.c.log)
		if err != nil {
			return out, fmt.Errorf("client: pull %s at offset %d from %s: %w", mq, offset, addr, err)
		}
		for _, m := range msgs {
			if !end.IsZero() && m.StoreTime.After(end) {
				return out, nil
			}
			if !begin.IsZero() && m.StoreTime.Before(begin) {
				continue
			}
			if out = append(out, m); len(out) >= maxNum {
				return out, nil
			}
		}
		if ans.next <= offset {
			return out, nil
		}
		offset = ans.next
	}
	return out, nil
}

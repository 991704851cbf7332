package broker

import (
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/internal/logging"
)

// Per-topic retention: the topic attributes retentionTime and retentionBytes
// (topicconf.Retention) are handed to the store, whose cleaner raises the topic's
// consume-queue minimums (store/retention.go). A consumer whose offset fell below a
// queue's minimum — through retention or the commit log's cleanup — is answered
// PULL_OFFSET_MOVED with the minimum as its next offset (RocketMQ's OFFSET_TOO_SMALL
// path); the broker counts those skips and logs them (at most one line a second).

// retentionOf is the store's Options.Retention: the limits of topic's config. b.topics
// is set before the store starts its cleaner, which is the only caller.
func (b *Broker) retentionOf(topic string) (time.Duration, int64) {
	if b.topics == nil {
		return 0, 0
	}
	cfg, ok := b.topics.Get(topic)
	if !ok {
		return 0, 0
	}
	return topicconf.Retention(&cfg)
}

// pullSkips counts the pulls answered with a higher offset because theirs was below
// the queue's minimum.
type pullSkips struct {
	pulls    atomic.Int64 // such pulls
	messages atomic.Int64 // the messages they skipped: minimum minus requested offset
	sample   logging.Sampler
	log      zerolog.Logger
}

// note counts and logs one pull of (topic, queue) at offset moved to minOffset.
func (s *pullSkips) note(group, topic string, queueID int32, offset, minOffset int64) {
	if s == nil || minOffset <= offset {
		return
	}
	s.pulls.Add(1)
	s.messages.Add(minOffset - offset)
	if ok, suppressed := s.sample.Allow(); ok {
		s.log.Warn().Str("group", group).Str("topic", topic).Int32("queue", queueID).
			Int64("offset", offset).Int64("minOffset", minOffset).Int64("skipped", minOffset-offset).
			Int64("suppressed", suppressed).
			Msg("consumer behind the queue's minimum (retention or cleanup): moved to the minimum, messages skipped")
	}
}

// RetentionMetrics are the retention and skip counters.
type RetentionMetrics struct {
	// Expired counts the messages per-topic retention moved queue minimums past since
	// the store opened.
	Expired int64
	// SkippedPulls counts the pulls answered with the queue's minimum because their
	// offset was below it; SkippedMessages the messages those consumers skipped.
	SkippedPulls, SkippedMessages int64
}

// retentionMetrics reads the counters.
func (b *Broker) retentionMetrics() RetentionMetrics {
	m := RetentionMetrics{Expired: b.store.RetentionStats().Expired}
	if b.pull != nil && b.pull.skips != nil {
		m.SkippedPulls, m.SkippedMessages = b.pull.skips.pulls.Load(), b.pull.skips.messages.Load()
	}
	return m
}

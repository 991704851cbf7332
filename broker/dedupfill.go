package broker

import (
	"fmt"
	"math"
	"time"

	"github.com/ferrymq/ferry/broker/dedup"
	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Refilling the dedup table (package dedup) when a broker that serves sends opens: for
// every topic with a dedup window, every queue is read from the first message stored
// within the window (SEARCH_OFFSET_BY_TIMESTAMP's lookup) to its end, and each message's
// UNIQ_KEY is remembered with the answer its send got (SEND_OK, its offset message id,
// queue and offset). A restarted master and a slave promoted by the controllers (a new
// Broker on the replicated log) both pass here before their port serves, so a client's
// retry across a restart or a failover is still recognised. Not refilled: a batch is
// remembered by each of its messages, so a batch retried across a restart is answered
// with its first message's id only; a delayed message not yet due is in the schedule
// topic, not its own, and a retry of it after a restart is stored again.

// dedupFillBatch bounds the messages read per queue read.
const dedupFillBatch = 256

// fillQueue is one queue to read back: from its first offset within the window.
type fillQueue struct {
	topic  string
	queue  int32
	from   int64 // Unix ms: the window's start
	offset int64
	window time.Duration
}

// fillDedup refills t from the store and returns how many keys it remembered. It first
// finds each queue's start, so that the table's map is made once at the size it needs.
func (b *Broker) fillDedup(t *dedup.Table) (int, error) {
	now := b.opts.Clock()
	var queues []fillQueue
	total := int64(0)
	for name, cfg := range b.topics.All().TopicConfigTable {
		window := topicconf.DedupWindow(&cfg)
		if window == 0 {
			continue
		}
		from := now.Add(-window).UnixMilli()
		for q := range max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
			off, err := b.store.OffsetByTime(name, q, from, false)
			if err != nil {
				return 0, fmt.Errorf("broker: refilling the dedup table from %s queue %d: %w", name, q, err)
			}
			queues = append(queues, fillQueue{topic: name, queue: q, from: from, offset: off, window: window})
			total += max(b.store.MaxOffset(name, q)-off, 0)
		}
	}
	t.Reserve(int(min(total, math.MaxInt32)))
	n := 0
	for _, fq := range queues {
		got, err := b.fillQueue(t, fq)
		n += got
		if err != nil {
			return n, fmt.Errorf("broker: refilling the dedup table from %s queue %d: %w", fq.topic, fq.queue, err)
		}
	}
	return n, nil
}

// fillQueue remembers the keys of one queue's messages stored within the window.
func (b *Broker) fillQueue(t *dedup.Table, fq fillQueue) (int, error) {
	off, n := fq.offset, 0
	for {
		res, err := b.store.GetMessages(fq.topic, fq.queue, off, dedupFillBatch, 4<<20, nil)
		if err != nil {
			return n, err
		}
		for i, raw := range res.Messages {
			var rec message.Record
			if _, err := rec.Decode(raw); err != nil {
				res.Release()
				return n, err
			}
			key := message.ScanProperties(rec.Properties).UniqKey
			if len(key) == 0 || rec.StoreTimestamp < fq.from {
				continue
			}
			t.Remember(fq.topic, key, fq.window, time.UnixMilli(rec.StoreTimestamp), dedup.Answer{
				Code: int16(protocol.Success), PhyOffset: rec.PhysicalOffset, QueueID: fq.queue, QueueOffset: res.QueueOffsets[i],
			})
			n++
		}
		next, found := res.NextBeginOffset, len(res.Messages) > 0
		res.Release()
		if !found || next <= off {
			return n, nil
		}
		off = next
	}
}

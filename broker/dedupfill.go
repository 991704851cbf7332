package broker

import (
	"fmt"
	"net/netip"
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

// fillDedup refills t from the store and returns how many keys it remembered.
func (b *Broker) fillDedup(t *dedup.Table) (int, error) {
	now := b.opts.Clock()
	host := b.send.storeHost
	n := 0
	for name, cfg := range b.topics.All().TopicConfigTable {
		window := topicconf.DedupWindow(&cfg)
		if window == 0 {
			continue
		}
		from := now.Add(-window).UnixMilli()
		for q := range max(cfg.ReadQueueNums, cfg.WriteQueueNums) {
			got, err := b.fillQueue(t, name, q, from, window, host)
			n += got
			if err != nil {
				return n, fmt.Errorf("broker: refilling the dedup table from %s queue %d: %w", name, q, err)
			}
		}
	}
	return n, nil
}

// fillQueue remembers the keys of one queue's messages stored since from (Unix ms).
func (b *Broker) fillQueue(t *dedup.Table, topic string, q int32, from int64, window time.Duration, host netip.AddrPort) (int, error) {
	off, err := b.store.OffsetByTime(topic, q, from, false)
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		res, err := b.store.GetMessages(topic, q, off, dedupFillBatch, 4<<20, nil)
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
			if len(key) == 0 || rec.StoreTimestamp < from {
				continue
			}
			t.Remember(topic, key, window, time.UnixMilli(rec.StoreTimestamp), dedup.Answer{
				Code: int16(protocol.Success), MsgID: message.OffsetMsgID(host, rec.PhysicalOffset),
				QueueID: q, QueueOffset: res.QueueOffsets[i], TransactionID: string(key),
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

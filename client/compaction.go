package client

import (
	"context"
	"fmt"

	"github.com/ferrymq/ferry/message"
)

// NewTombstone returns a tombstone for key of a compacted topic (topic attribute
// cleanupPolicy=compact): a message with an empty body and KEYS set to key. Sent with
// SendTombstone, it deletes the key: the key's earlier messages in the queue are dropped
// at the broker's next compaction round, and the tombstone itself once the topic's
// deleteRetention has passed. A topic whose key is a property (compactionKey) needs that
// property set on the tombstone instead. Send it to the queue the key's messages go to
// (HashSelector routes by the first key).
func NewTombstone(topic, key string) *message.Message {
	m := message.NewMessage(topic, nil)
	m.SetKeys(key)
	return m
}

// SendTombstone sends msg, which must have an empty body (NewTombstone), and waits for
// the broker's answer. Send refuses an empty body; this is the one way to send one.
func (p *Producer) SendTombstone(ctx context.Context, msg *message.Message) (SendResult, error) {
	type outcome struct {
		res SendResult
		err error
	}
	ch := make(chan outcome, 1)
	p.sendAsync(ctx, msg, true, func(r SendResult, err error) { ch <- outcome{r, err} })
	select {
	case o := <-ch:
		return o.res, o.err
	case <-ctx.Done():
		return SendResult{}, fmt.Errorf("client: send tombstone to %s: %w", msg.Topic, ctx.Err())
	}
}

package interop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// TestFerryClientToOfficialConsumer sends with Ferry's own producer — automatically
// batched async sends, sync sends with tags, keys and properties, an explicit batch and
// ordered sends — and consumes with the official push consumer: every message exactly
// once, with what the producer set, and the ordered ones in order per key.
func TestFerryClientToOfficialConsumer(t *testing.T) {
	c := testutil.StartCluster(t)
	createTopic(t, c, "FerryClientTopic", 4)
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	p, err := cl.NewProducer("FerryClientPG")
	require.NoError(t, err)
	ordered, err := cl.NewProducer("FerryClientOrderedPG", client.WithSelector(client.HashSelector))
	require.NoError(t, err)

	rec := newRecorder()
	var mu sync.Mutex
	props := map[string]*primitive.MessageExt{}
	newPushConsumer(t, c, "FerryClientCG", "FerryClientTopic", "*",
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			for _, m := range msgs {
				props[string(m.Body)] = m
			}
			mu.Unlock()
			return rec.handler("c")(ctx, msgs...)
		})

	ctx := context.Background()
	async := bodies("async-", 600)
	var wg sync.WaitGroup
	for _, b := range async {
		wg.Add(1)
		p.SendAsync(ctx, message.NewMessage("FerryClientTopic", []byte(b)), func(_ client.SendResult, err error) {
			defer wg.Done()
			require.NoError(t, err)
		})
	}
	wg.Wait()
	m := message.NewMessage("FerryClientTopic", []byte("tagged"))
	m.SetTags("TagA")
	m.SetKeys("key-1", "key-2")
	m.SetProperty("color", "red")
	res, err := p.Send(ctx, m)
	require.NoError(t, err)
	_, err = p.SendBatch(ctx, []*message.Message{
		message.NewMessage("FerryClientTopic", []byte("batch-0")), message.NewMessage("FerryClientTopic", []byte("batch-1"))})
	require.NoError(t, err)
	orderedBodies := bodies("ordered-", 90)
	for i, b := range orderedBodies {
		om := message.NewMessage("FerryClientTopic", []byte(b))
		om.SetShardingKey([]string{"order-a", "order-b", "order-c"}[i%3])
		_, err := ordered.Send(ctx, om)
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())
	require.NoError(t, ordered.Close())

	all := append(append([]string{"tagged", "batch-0", "batch-1"}, async...), orderedBodies...)
	rec.waitAll(t, all, 30*time.Second, "every message delivered")
	for _, b := range all {
		require.Equal(t, 1, rec.count(b), "%s delivered once", b)
	}
	mu.Lock()
	got := props["tagged"]
	mu.Unlock()
	require.Equal(t, "TagA", got.GetTags())
	require.Equal(t, "key-1 key-2", got.GetKeys())
	require.Equal(t, "red", got.GetProperty("color"))
	require.Equal(t, res.MsgID, got.MsgId)

	// Per sharding key, the ordered messages are in one queue, their offsets in sending order.
	deliveries, _ := rec.since(0)
	type placed struct {
		queue  int
		offset int64
	}
	byIndex := map[int]placed{}
	for _, d := range deliveries {
		var i int
		if _, err := fmt.Sscanf(d.body, "ordered-%d", &i); err == nil {
			byIndex[i] = placed{d.queue, d.offset}
		}
	}
	require.Len(t, byIndex, len(orderedBodies))
	for i := 3; i < len(orderedBodies); i++ {
		prev, cur := byIndex[i-3], byIndex[i]
		require.Equal(t, prev.queue, cur.queue, "message %d stays in its key's queue", i)
		require.Greater(t, cur.offset, prev.offset, "message %d after its key's previous one", i)
	}
}

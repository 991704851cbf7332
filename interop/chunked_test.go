package interop

import (
	"bytes"
	"context"
	"crypto/rand"
	"strconv"
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

// TestChunkedMessageToOfficialConsumer: a message over the max body size, sent by Ferry's
// producer in chunks, reaches an official consumer as separate messages — one per chunk,
// each with the original tag and the chunk properties (docs/compatibility.md) — whose
// bodies laid end to end in CHUNKED_INDEX order are the original body.
func TestChunkedMessageToOfficialConsumer(t *testing.T) {
	const topic = "ChunkedToOfficial"
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 4)
	cl, err := client.New(client.WithNameServers(c.NamesrvAddr))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	p, err := cl.NewProducer("ChunkedPG", client.WithMaxBodySize(1<<20))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()

	var mu sync.Mutex
	got := map[string]*primitive.MessageExt{} // by CHUNKED_INDEX
	newPushConsumer(t, c, "ChunkedOfficialCG", topic, "big",
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got[m.GetProperty(client.PropertyChunkIndex)] = m
			}
			return consumer.ConsumeSuccess, nil
		})

	body := make([]byte, 5<<19+7) // 2.5 MiB: three chunks
	_, _ = rand.Read(body)
	m := message.NewMessage(topic, body)
	m.SetTags("big")
	m.SetProperty("color", "red")
	res, err := p.Send(context.Background(), m)
	require.NoError(t, err)
	require.Equal(t, 3, res.Chunks)

	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 3
	}, "three chunks delivered")
	mu.Lock()
	defer mu.Unlock()
	var whole []byte
	for i := range 3 {
		ch := got[strconv.Itoa(i)]
		require.NotNil(t, ch, "chunk %d", i)
		require.Equal(t, "big", ch.GetTags())
		require.Equal(t, "red", ch.GetProperty("color"))
		require.Equal(t, res.MsgID, ch.GetProperty(client.PropertyChunkID))
		require.Equal(t, "3", ch.GetProperty(client.PropertyChunkCount))
		require.Equal(t, strconv.Itoa(len(body)), ch.GetProperty(client.PropertyChunkSize))
		require.Equal(t, strconv.Itoa(len(body)), ch.GetProperty(client.PropertyChunkBodySize))
		whole = append(whole, ch.Body...)
	}
	require.Equal(t, res.MsgID, got["0"].MsgId, "the first chunk has the message's id")
	require.True(t, bytes.Equal(body, whole), "the chunks in order are the body")
}

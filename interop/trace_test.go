package interop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// TestMessageTrace: the official producer with tracing on (WithTrace) stores its trace
// records in RMQ_SYS_TRACE_TOPIC, which the broker creates at start, and a message's
// trace record is found by its message id (the trace record's key).
func TestMessageTrace(t *testing.T) {
	const topic = "TracedTopic"
	c := testutil.StartCluster(t)
	_, ok := c.NameServer.Table().TopicRoute(protocol.TraceTopic)
	require.True(t, ok, "the trace topic is routed from the start")
	createTopic(t, c, topic, 2)
	p := newProducer(t, c, "pg-traced", producer.WithTrace(&primitive.TraceConfig{
		GroupName: "pg-traced", Access: primitive.Local, Resolver: primitive.NewPassthroughResolver([]string{c.NamesrvAddr})}))
	var ids []string
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("traced")))
		cancel()
		require.NoError(t, err)
		ids = append(ids, res.MsgID)
	}
	raw := newRaw(t, c.BrokerAddr)
	for _, id := range ids {
		rec := raw.queryOne(protocol.TraceTopic, id, false)
		require.True(t, strings.Contains(string(rec.Body), id), "the trace record of %s names it: %q", id, rec.Body)
		require.Contains(t, string(rec.Body), topic)
	}
}

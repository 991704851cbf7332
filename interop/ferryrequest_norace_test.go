//go:build !race

package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// TestOfficialRequestAnsweredByFerry: the official producer's Request() is answered by
// Ferry's consumer with client.NewReply and Producer.SendReply, body included. (Built
// without -race only: the official client's Request() races with itself, see
// TestRequestReply.)
func TestOfficialRequestAnsweredByFerry(t *testing.T) {
	const topic, n = "OfficialRequest", 30
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 2)
	cl := newFerryClient(t, c)
	replier := newFerryProducer(t, cl, "pg-ferry-replier")
	replyErrs := make(chan error, n)
	newFerryConsumer(t, c, "cg-ferry-replier", topic, "*", func(ctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
		for _, m := range msgs {
			reply, err := client.NewReply(m, []byte("ferry: "+string(m.Body)))
			if err == nil {
				_, err = replier.SendReply(ctx, reply)
			}
			if err != nil {
				replyErrs <- err
			}
		}
		return client.ConsumeSuccess
	})
	requester := newProducer(t, c, "pg-official-requester")
	for i := range n {
		body := fmt.Sprintf("ask-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := requester.Request(ctx, 15*time.Second, primitive.NewMessage(topic, []byte(body)))
		cancel()
		select {
		case rerr := <-replyErrs:
			require.NoError(t, rerr, "Ferry's replier")
		default:
		}
		require.NoError(t, err, "request %d", i)
		require.Equal(t, "ferry: "+body, string(resp.Body))
		require.NotEmpty(t, resp.GetProperty(message.PropertyCorrelationID))
	}
}

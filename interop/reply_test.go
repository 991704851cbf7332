package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// TestRequestReply: the official producer's Request() gets the answer an official
// consumer sends with CreateReplyMessage (SEND_REPLY_MESSAGE, pushed back with
// PUSH_REPLY_MESSAGE_TO_CLIENT), 100 times in a row; the replies are also stored in the
// cluster's reply topic. A reply for a client that is not connected is refused with
// SYSTEM_ERROR naming it, and still stored.
func TestRequestReply(t *testing.T) {
	if raceDetector {
		t.Skip("the Go client's Request() races with itself (remote_client.go:247 against client.go:591); `make test` runs this test again without -race")
	}
	const topic, n = "RequestTopic", 100
	c := testutil.StartCluster(t)
	createTopic(t, c, topic, 2)
	replyProducer := newProducer(t, c, "pg-replier")
	replyErrs := make(chan error, n)
	newPushConsumer(t, c, "cg-replier", topic, "*", func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			reply, err := consumer.CreateReplyMessage(m, []byte("reply-"+string(m.Body)))
			if err == nil {
				// The Go client's CreateReplyMessage parses the body as properties and
				// leaves Body empty (docs/compatibility.md): set it.
				reply.Body = []byte("reply-" + string(m.Body))
				_, err = replyProducer.SendSync(ctx, reply)
			}
			if err != nil {
				select {
				case replyErrs <- err:
				default:
				}
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	requester := newProducer(t, c, "pg-requester")
	for i := range n {
		body := fmt.Sprintf("req-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := requester.Request(ctx, 15*time.Second, primitive.NewMessage(topic, []byte(body)))
		cancel()
		select {
		case rerr := <-replyErrs:
			require.NoError(t, rerr, "the replier's send")
		default:
		}
		require.NoError(t, err, "request %d", i)
		require.Equal(t, "reply-"+body, string(resp.Body))
		require.NotEmpty(t, resp.GetProperty(message.PropertyCorrelationID))
	}
	replyTopic := protocol.ReplyTopic("DefaultCluster")
	raw := newRaw(t, c.BrokerAddr)
	testutil.Eventually(t, 10*time.Second, func() bool { return raw.maxOffset(replyTopic, 0) == n },
		"every reply stored in the reply topic")

	props, err := message.EncodeProperties(map[string]string{message.PropertyReplyToClient: "gone@1",
		message.PropertyCorrelationID: "c-gone", message.PropertyMsgType: "reply"})
	require.NoError(t, err)
	resp := raw.call(protocol.SendReplyMessage, map[string]string{"producerGroup": "pg-x", "topic": replyTopic,
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
		"bornTimestamp": "1", "flag": "0", "properties": string(props)}, []byte("late"))
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Contains(t, resp.Remark, "gone@1")
	testutil.Eventually(t, 10*time.Second, func() bool { return raw.maxOffset(replyTopic, 0) == n+1 },
		"the undeliverable reply is stored too")
}

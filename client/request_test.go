package client

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// TestRequestReply: Ferry's Request is answered by a Ferry consumer through NewReply and
// SendReply; the reply carries the body and the request's correlation id, and the
// caller's message is left as it was.
func TestRequestReply(t *testing.T) {
	const topic = "RequestClient"
	c := testutil.StartCluster(t)
	newRawBroker(t, c).createTopic(topic, 2)
	cl := newMember(t, c, "requests")
	replier, err := cl.NewProducer("pg-replier")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, replier.Close()) })
	replyErrs := make(chan error, 16)
	startConsumer(t, newMember(t, c, "replier"), "cg-replier", topic, "*", func(ctx context.Context, msgs []*MessageExt) ConsumeResult {
		for _, m := range msgs {
			reply, err := NewReply(m, []byte("re: "+string(m.Body)))
			if err == nil {
				_, err = replier.SendReply(ctx, reply)
			}
			if err != nil {
				replyErrs <- err
			}
		}
		return ConsumeSuccess
	})

	p, err := cl.NewProducer("pg-requester")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	for i := range 20 {
		msg := message.NewMessage(topic, []byte("q"+strconv.Itoa(i)))
		msg.SetKeys("k")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		reply, err := p.Request(ctx, msg)
		cancel()
		select {
		case rerr := <-replyErrs:
			require.NoError(t, rerr, "the replier's send")
		default:
		}
		require.NoError(t, err)
		require.Equal(t, "re: q"+strconv.Itoa(i), string(reply.Body))
		require.Equal(t, protocol.ReplyTopic("DefaultCluster"), reply.Topic)
		require.NotEmpty(t, reply.Property(message.PropertyCorrelationID))
		require.Equal(t, cl.ClientID(), reply.Property(message.PropertyReplyToClient))
		require.Equal(t, "reply", reply.Property(message.PropertyMsgType))
		require.Empty(t, msg.Property(message.PropertyCorrelationID), "the caller's message is not changed")
	}

	t.Run("no replier", func(t *testing.T) {
		const lonely = "RequestNobody"
		newRawBroker(t, c).createTopic(lonely, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := p.Request(ctx, message.NewMessage(lonely, []byte("anyone?")))
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("not a request", func(t *testing.T) {
		_, err := NewReply(&MessageExt{Message: *message.NewMessage(topic, []byte("x"))}, []byte("y"))
		require.ErrorIs(t, err, ErrNotRequest)
		_, err = replier.SendReply(stepCtx(t), message.NewMessage(protocol.ReplyTopic("DefaultCluster"), []byte("y")))
		require.ErrorIs(t, err, ErrNotRequest)
	})
	t.Run("requester gone", func(t *testing.T) {
		req := &MessageExt{Message: *message.NewMessage(topic, []byte("x"))}
		req.SetProperty(message.PropertyCluster, "DefaultCluster")
		req.SetProperty(message.PropertyReplyToClient, "10.9.9.9@gone")
		req.SetProperty(message.PropertyCorrelationID, "c-gone")
		reply, err := NewReply(req, []byte("late"))
		require.NoError(t, err)
		_, err = replier.SendReply(stepCtx(t), reply)
		var be *BrokerError
		require.True(t, errors.As(err, &be), "%v", err)
		require.Equal(t, protocol.SystemError, be.Code)
		require.Contains(t, be.Remark, "10.9.9.9@gone")
	})
}

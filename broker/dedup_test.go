package broker

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/dedup"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// dedupSend sends body with UNIQ_KEY key (none when empty) to topic and returns the
// answer's header.
func dedupSend(t *testing.T, f *senderFixture, topic, key string) (*remoting.Command, protocol.SendMessageResponseHeader) {
	t.Helper()
	props := map[string]string{message.PropertyTags: "a"}
	if key != "" {
		props[message.PropertyUniqKey] = key
	}
	raw, err := message.EncodeProperties(props)
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: "TBW102", QueueID: -1, Properties: string(raw)}
	resp, err := f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendMessageV2, h, []byte("body")))
	require.NoError(t, err)
	var rh protocol.SendMessageResponseHeader
	require.NoError(t, rh.DecodeExt(resp.ExtFields))
	return resp, rh
}

func TestDedupWindowAnswersRetriesWithTheFirstResult(t *testing.T) {
	f := newSenderFixture(16)
	resp, first := dedupSend(t, f, "D", "KEY-1")
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Len(t, f.store.puts, 1)

	resp, again := dedupSend(t, f, "D", "KEY-1")
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Len(t, f.store.puts, 1, "the retry stored nothing")
	require.Equal(t, first, again, "same message id, queue and offset")
	require.Equal(t, uint64(1), f.s.dedup.Stats().Duplicates)

	dedupSend(t, f, "D", "KEY-2")
	require.Len(t, f.store.puts, 2, "another key is another message")
	dedupSend(t, f, "D", "")
	dedupSend(t, f, "D", "")
	require.Len(t, f.store.puts, 4, "a message without the client's UNIQ_KEY has nothing to match")
	dedupSend(t, f, "T", "KEY-1")
	dedupSend(t, f, "T", "KEY-1")
	require.Len(t, f.store.puts, 6, "a topic without a dedup window stores every send")
}

func TestDedupForgetsASendThatStoredNothing(t *testing.T) {
	f := newSenderFixture(16)
	f.store.err = store.ErrDiskFull
	req := func() error {
		raw, err := message.EncodeProperties(map[string]string{message.PropertyUniqKey: "K"})
		require.NoError(t, err)
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "D", DefaultTopic: "TBW102", QueueID: 0, Properties: string(raw)}
		_, err = f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendMessageV2, h, []byte("b")))
		return err
	}
	var ce *remoting.CodeError
	require.ErrorAs(t, req(), &ce)
	require.Equal(t, int16(protocol.ServiceNotAvailable), ce.Code)
	f.store.err = nil
	require.NoError(t, req())
	require.NoError(t, req())
	require.Len(t, f.store.puts, 2, "the failed send and the one retry that stored it; the last is a duplicate")
}

func TestDedupBatchByItsFirstKey(t *testing.T) {
	f := newSenderFixture(16)
	var items []protocol.BatchItem
	for _, k := range []string{"B1", "B2"} {
		props, err := message.EncodeProperties(map[string]string{message.PropertyUniqKey: k})
		require.NoError(t, err)
		items = append(items, protocol.BatchItem{Body: []byte("x"), Properties: props})
	}
	body, err := protocol.EncodeBatch(items)
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "D", DefaultTopic: "TBW102", QueueID: 1, Batch: true}
	var answers []protocol.SendMessageResponseHeader
	for range 2 {
		resp, err := f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendBatchMessage, h, body))
		require.NoError(t, err)
		var rh protocol.SendMessageResponseHeader
		require.NoError(t, rh.DecodeExt(resp.ExtFields))
		answers = append(answers, rh)
	}
	require.Len(t, f.store.puts, 1)
	require.Equal(t, answers[0], answers[1])
}

// BenchmarkSendDedup is the send handler's cost per message (nothing stored: nopStore)
// to a topic without a dedup window and to one with, each message with its own UNIQ_KEY
// as clients send them.
func BenchmarkSendDedup(b *testing.B) {
	for _, topic := range []string{"T", "D"} {
		name := map[string]string{"T": "off", "D": "on"}[topic]
		b.Run(name, func(b *testing.B) {
			f := newSenderFixture(16)
			f.s.store = nopStore{}
			gen := message.NewUniqKeyGenerator(netip.MustParseAddr("127.0.0.1"), 0)
			reqs := make([]*remoting.Command, 4096)
			for i := range reqs {
				props, err := message.EncodeProperties(map[string]string{message.PropertyTags: "a",
					message.PropertyUniqKey: string(gen.AppendNext(nil))})
				require.NoError(b, err)
				h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: "TBW102", QueueID: 1, Properties: string(props)}
				reqs[i] = sendRequest(protocol.SendMessageV2, h, make([]byte, 1024))
			}
			var ch remoting.Channel = fakeChannel{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == len(reqs) { // new keys: a key seen before would be a duplicate
					b.StopTimer()
					f.s.dedup, _ = dedup.New(dedup.DefaultOptions())
					i = 0
					b.StartTimer()
				}
				if _, err := f.s.handleSend(context.Background(), ch, reqs[i]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

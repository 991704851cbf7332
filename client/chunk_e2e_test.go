package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

// randomBody is n bytes that do not compress, the same for a seed.
func randomBody(n int, seed byte) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// hashes records the body hash of each message by id.
type hashes struct {
	mu sync.Mutex
	m  map[string][32]byte
	n  map[string]int
}

func newHashes() *hashes { return &hashes{m: map[string][32]byte{}, n: map[string]int{}} }

func (h *hashes) add(m *MessageExt) {
	sum := sha256.Sum256(m.Body)
	h.mu.Lock()
	h.m[m.MsgID] = sum
	h.n[m.MsgID]++
	h.mu.Unlock()
}

func (h *hashes) has(want map[string][32]byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range want {
		if _, ok := h.m[id]; !ok {
			return false
		}
	}
	return true
}

func (h *hashes) check(t *testing.T, kind string, want map[string][32]byte) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Len(t, h.m, len(want), "%s: every message, nothing else (no chunk)", kind)
	for id, sum := range want {
		require.Equal(t, sum, h.m[id], "%s: body of %s", kind, id)
		require.Equal(t, 1, h.n[id], "%s: %s delivered once", kind, id)
	}
}

// TestChunked100MiBRoundTrip sends a 100 MiB message (25 chunks of 4 MiB, not
// compressible), a 12 MiB compressible one and small ones around them through a real
// broker, and receives them with every consumer kind: each gets each message whole, once,
// and commits past all the chunks.
func TestChunked100MiBRoundTrip(t *testing.T) {
	const topic = "BigTopic"
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 2)
	cl := newMember(t, c, "big")
	p, err := cl.NewProducer("pg-big")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	want := map[string][32]byte{}
	send := func(body []byte, chunks int) {
		m := message.NewMessage(topic, body)
		m.SetTags("big")
		m.SetKeys("k1")
		m.Properties["user"] = "v"
		res, err := p.Send(ctx, m)
		require.NoError(t, err)
		require.Equal(t, chunks, res.Chunks)
		require.NotEmpty(t, res.MsgID)
		want[res.MsgID] = sha256.Sum256(body)
	}
	send([]byte("small-before"), 0)
	send(randomBody(100<<20, 1), 25)
	send(bytes.Repeat([]byte("compressible text "), 12<<20/18), 1) // zlib: under 4 MiB
	send([]byte("small-after"), 0)

	// What the broker stores: chunks, each at most 4 MiB, with the chunk properties.
	chunks := 0
	for q := range int32(2) {
		for _, rec := range raw.records(topic, q) {
			require.LessOrEqual(t, len(rec.Body), message.DefaultMaxBodySize)
			if _, ok := rec.Property(PropertyChunkID); ok {
				chunks++
				require.Zero(t, rec.SysFlag&message.SysFlagCompressed, "no chunk is compressed on its own")
				tags, _ := rec.Property(message.PropertyTags)
				require.Equal(t, "big", string(tags))
			}
		}
	}
	require.Equal(t, 26, chunks)

	endsCommitted := func(group string) {
		t.Helper()
		for q := range int32(2) {
			require.Equal(t, raw.maxOffset(topic, q), raw.committed(group, topic, q), "%s: queue %d committed to its end", group, q)
		}
	}

	for _, kind := range []string{"push", "orderly"} {
		group := "cg-big-" + kind
		got := newHashes()
		opts := []ConsumerOption{}
		if kind == "orderly" {
			opts = append(opts, WithOrderly())
		}
		pc := startConsumer(t, cl, group, topic, "big", func(_ context.Context, msgs []*MessageExt) ConsumeResult {
			for _, m := range msgs {
				assert.Equal(t, "big", m.Tags())
				assert.Equal(t, []string{"k1"}, m.Keys())
				assert.Equal(t, "v", m.Property("user"))
				assert.Empty(t, m.Property(PropertyChunkID))
				got.add(m)
			}
			return ConsumeSuccess
		}, opts...)
		testutil.Eventually(t, time.Minute, func() bool { return got.has(want) }, kind+": every message")
		require.NoError(t, pc.Close())
		got.check(t, kind, want)
		endsCommitted(group)
		require.Zero(t, pc.ChunkStats().DroppedChunks)
	}

	// Pull consumer: CommitOffset stays at the first chunk while the message is partial.
	pull, err := cl.NewPullConsumer("cg-big-pull")
	require.NoError(t, err)
	mqs, err := pull.FetchQueues(ctx, topic)
	require.NoError(t, err)
	got := newHashes()
	held := false
	for _, mq := range mqs {
		for off := int64(0); ; {
			res, err := pull.Pull(ctx, mq, off, 32, "*")
			require.NoError(t, err)
			if res.Status == PullNoNewMessage {
				require.Equal(t, res.NextOffset, res.CommitOffset)
				break
			}
			for _, m := range res.Messages {
				got.add(m)
			}
			held = held || res.CommitOffset < res.NextOffset
			off = res.NextOffset
		}
	}
	got.check(t, "pull", want)
	require.True(t, held, "a pull inside the 100 MiB message commits at its first chunk")

	// Lite pull, auto-commit.
	lc := newLite(t, cl, "cg-big-lite", WithConsumeFrom(ConsumeFromFirstOffset))
	require.NoError(t, lc.Subscribe(topic, "*"))
	require.NoError(t, lc.Start(ctx))
	got = newHashes()
	for _, m := range pollN(t, lc, len(want), defaultPollBatch) {
		got.add(m)
	}
	require.NoError(t, lc.Close())
	got.check(t, "lite", want)
	endsCommitted("cg-big-lite")
}

// TestChunkedRetryLocallyThenDeadLetter: a chunked message whose handler fails is
// retried locally (the committed offset stays at its first chunk), then its chunks go to
// the dead-letter topic in order, where a pull consumer reassembles it.
func TestChunkedRetryLocallyThenDeadLetter(t *testing.T) {
	const topic, group = "BigRetry", "cg-big-retry"
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 1)
	cl := newMember(t, c, "big-retry")
	p, err := cl.NewProducer("pg-big-retry", WithMaxBodySize(1<<20))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx := stepCtx(t)
	body := randomBody(3<<20+5, 2)
	res, err := p.Send(ctx, message.NewMessage(topic, body))
	require.NoError(t, err)
	require.Equal(t, 4, res.Chunks)

	var mu sync.Mutex
	var reconsumes []int32
	var committed []int64 // the group's committed offset at each delivery
	pc := startConsumer(t, cl, group, topic, "*", func(_ context.Context, msgs []*MessageExt) ConsumeResult {
		c := raw.committed(group, topic, 0)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, body, msgs[0].Body)
		reconsumes = append(reconsumes, msgs[0].ReconsumeTimes)
		committed = append(committed, c)
		return ConsumeRetryLater
	}, WithMaxReconsumeTimes(2), WithCommitInterval(20*time.Millisecond),
		func(o *consumerOptions) { o.localRetry = 100 * time.Millisecond })
	dlq := protocol.DLQTopic(group)
	testutil.Eventually(t, 30*time.Second, func() bool { return raw.maxOffset(dlq, 0) >= 4 }, "four chunks dead-lettered")
	testutil.Eventually(t, 30*time.Second, func() bool {
		return raw.committed(group, topic, 0) == raw.maxOffset(topic, 0)
	}, "committed past the chunks once dead-lettered")
	require.NoError(t, pc.Close())
	mu.Lock()
	require.Equal(t, []int32{0, 1, 2}, reconsumes, "local retries, then the dead-letter topic")
	for _, c := range committed {
		require.LessOrEqual(t, c, int64(0), "never past the first chunk while the message is retried")
	}
	mu.Unlock()
	require.Zero(t, raw.maxOffset(protocol.RetryTopic(group), 0), "nothing through the retry topic")

	pull, err := cl.NewPullConsumer("cg-dlq-reader")
	require.NoError(t, err)
	_, err = pull.FetchQueues(ctx, topic) // learns the broker; the DLQ topic may not be routed yet
	require.NoError(t, err)
	dres, err := pull.Pull(ctx, MessageQueue{Topic: dlq, BrokerName: res.BrokerName, QueueID: 0}, 0, 32, "*")
	require.NoError(t, err)
	for off := dres.NextOffset; len(dres.Messages) == 0 && off < 4; off = dres.NextOffset {
		dres, err = pull.Pull(ctx, MessageQueue{Topic: dlq, BrokerName: res.BrokerName, QueueID: 0}, off, 32, "*")
		require.NoError(t, err)
	}
	require.Len(t, dres.Messages, 1)
	require.Equal(t, body, dres.Messages[0].Body)
	require.Equal(t, res.MsgID, dres.Messages[0].MsgID)
}

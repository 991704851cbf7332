package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
)

// chunkMsgs cuts body into chunks of size bytes as a producer does (zlib: body is
// compressed first), the chunks stored at the given queue offsets.
func chunkMsgs(t *testing.T, id string, body []byte, size int, zlib bool, offsets ...int64) []*MessageExt {
	t.Helper()
	payload := body
	if zlib {
		z, err := message.Compress(body, 5)
		require.NoError(t, err)
		payload = z
	}
	s := &chunkSpec{id: id, payload: payload, bodySize: len(body), zlib: zlib, size: size,
		props: map[string]string{message.PropertyTags: "big", "user": "v"}}
	s.count = (len(payload) + size - 1) / size
	require.GreaterOrEqual(t, len(offsets), s.count, "offsets for every chunk")
	out := make([]*MessageExt, s.count)
	for i := range s.count {
		raw, err := s.chunkProps(i)
		require.NoError(t, err)
		props := message.ParseProperties(raw)
		out[i] = &MessageExt{Message: message.Message{Topic: "T", Body: s.chunkRange(i), Properties: props},
			MsgID: props[message.PropertyUniqKey], QueueOffset: offsets[i], CommitLogOffset: 1000 + offsets[i]}
	}
	return out
}

// plain is an ordinary message at offset.
func plain(off int64) *MessageExt {
	return &MessageExt{Message: message.Message{Topic: "T", Body: []byte("p" + strconv.FormatInt(off, 10)),
		Properties: map[string]string{}}, QueueOffset: off}
}

func newTestReassembler(o reassemblyOptions) *reassembler {
	log := zerolog.Nop()
	return newReassembler(o, &log)
}

func TestChunkPropertiesOnEveryChunk(t *testing.T) {
	chunks := chunkMsgs(t, "ID1", bytes.Repeat([]byte("abc"), 10), 8, false, 0, 1, 2, 3)
	for i, m := range chunks {
		require.Equal(t, "ID1", m.Property(PropertyChunkID))
		require.Equal(t, strconv.Itoa(i), m.Property(PropertyChunkIndex))
		require.Equal(t, "4", m.Property(PropertyChunkCount))
		require.Equal(t, "30", m.Property(PropertyChunkSize))
		require.Equal(t, "30", m.Property(PropertyChunkBodySize))
		require.Equal(t, "big", m.Tags(), "tags on every chunk, so brokers filter them alike")
		require.Equal(t, "v", m.Property("user"))
	}
	require.Equal(t, "ID1", chunks[0].MsgID, "chunk 0 keeps the message id")
	require.Equal(t, "ID1.3", chunks[3].MsgID, "the others get their own, for dedup")
	require.Empty(t, chunks[0].Property(PropertyChunkZlib))
}

// TestReassembleInterleaved: chunks interleaved with other messages come out as one
// message in the place of its last chunk, covering the offsets of all its chunks.
func TestReassembleInterleaved(t *testing.T) {
	r := newTestReassembler(defaultReassemblyOptions())
	body := bytes.Repeat([]byte("0123456789"), 100)
	for _, zlib := range []bool{false, true} {
		chunks := chunkMsgs(t, "ID", body, 64, zlib, seq(10, 2, 100)...)
		var in []*MessageExt
		for _, c := range chunks {
			in = append(in, c, plain(c.QueueOffset+1))
		}
		var out []*MessageExt
		for i := 0; i < len(in); i += 3 { // over several pulls
			got, drops := r.feed("q", in[i:min(i+3, len(in))])
			require.Empty(t, drops)
			out = append(out, got...)
		}
		require.Len(t, out, len(chunks)+1, "zlib %v: the plain messages and one whole", zlib)
		whole := out[len(out)-2]
		require.Equal(t, body, whole.Body)
		require.Equal(t, "ID", whole.MsgID)
		require.Equal(t, "ID", whole.UniqKey())
		require.Equal(t, "big", whole.Tags())
		require.Empty(t, whole.Property(PropertyChunkID), "the chunk properties are removed")
		require.Equal(t, chunks[0].QueueOffset, whole.QueueOffset)
		require.Equal(t, chunks[len(chunks)-1].QueueOffset, whole.lastOffset())
		var offs []int64
		whole.eachOffset(func(o int64) { offs = append(offs, o) })
		require.Equal(t, seq(10, 2, len(chunks)), offs)
		require.Len(t, whole.chunks.logOffsets, len(chunks))
		require.Zero(t, r.stats().Partial)
		require.Zero(t, r.stats().PartialBytes)
	}
}

// seq is n offsets from start, step apart.
func seq(start, step int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out
}

// TestReassembleGivesUp: orphans, repeats, gaps, restarts and malformed chunks are
// dropped and reported, never delivered.
func TestReassembleGivesUp(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 40)
	c := chunkMsgs(t, "ID", body, 10, false, 0, 1, 2, 3)

	r := newTestReassembler(defaultReassemblyOptions())
	out, drops := r.feed("q", []*MessageExt{c[1], c[2]})
	require.Empty(t, out)
	require.Equal(t, []chunkDrop{{"q", []int64{1}}, {"q", []int64{2}}}, drops, "orphans: chunk 0 never seen")

	out, drops = r.feed("q", []*MessageExt{c[0], c[1], c[1], c[2]})
	require.Empty(t, out)
	require.Equal(t, []chunkDrop{{"q", []int64{1}}}, drops, "a repeated chunk")
	off, ok := r.held("q")
	require.True(t, ok)
	require.EqualValues(t, 0, off, "the partial message holds its first chunk's offset")
	_, ok = r.held("other")
	require.False(t, ok)
	out, drops = r.feed("q", []*MessageExt{c[3]})
	require.Empty(t, drops)
	require.Len(t, out, 1)
	require.Equal(t, body, out[0].Body)

	// A gap: chunk 2 never comes.
	out, drops = r.feed("q", []*MessageExt{c[0], c[1], c[3]})
	require.Empty(t, out)
	require.Equal(t, []chunkDrop{{"q", []int64{0, 1}}, {"q", []int64{3}}}, drops)

	// A restart: the producer resent the message from chunk 0.
	_, _ = r.feed("q", []*MessageExt{c[0], c[1]})
	out, drops = r.feed("q", c)
	require.Equal(t, []chunkDrop{{"q", []int64{0, 1}}}, drops)
	require.Len(t, out, 1)

	// Malformed.
	bad := *c[0]
	bad.Properties = map[string]string{PropertyChunkID: "X", PropertyChunkIndex: "zero"}
	out, drops = r.feed("q", []*MessageExt{&bad})
	require.Empty(t, out)
	require.Equal(t, []chunkDrop{{"q", []int64{0}}}, drops)
	st := r.stats()
	require.EqualValues(t, 9, st.DroppedChunks)
	require.EqualValues(t, 2, st.DroppedMessages)
	require.Zero(t, st.Partial)
}

// TestReassembleBounds: the memory limit drops the oldest partial message, the max gap
// and the max wait drop stalled ones, and a message larger than the limit is never kept.
func TestReassembleBounds(t *testing.T) {
	a := chunkMsgs(t, "A", bytes.Repeat([]byte("a"), 40), 10, false, 0, 1, 2, 3)
	b := chunkMsgs(t, "B", bytes.Repeat([]byte("b"), 40), 10, false, 10, 11, 12, 13)
	big := chunkMsgs(t, "C", bytes.Repeat([]byte("c"), 70), 10, false, seq(20, 1, 7)...)

	r := newTestReassembler(reassemblyOptions{maxBytes: 60, maxGap: 100, maxWait: time.Hour})
	_, drops := r.feed("qa", a[:2])
	require.Empty(t, drops)
	require.Equal(t, 40, r.stats().PartialBytes)
	_, drops = r.feed("qb", b[:1])
	require.Equal(t, []chunkDrop{{"qa", []int64{0, 1}}}, drops, "the oldest partial message, of another queue")
	out, drops := r.feed("qb", b[1:])
	require.Empty(t, drops)
	require.Len(t, out, 1)
	out, drops = r.feed("qc", big[:1])
	require.Empty(t, out)
	require.Equal(t, []chunkDrop{{"qc", []int64{20}}}, drops, "larger than the limit")

	// Max gap: the queue went on for more than 100 offsets past the last chunk.
	_, _ = r.feed("qa", a[:2])
	_, drops = r.feed("qa", []*MessageExt{plain(101)})
	require.Empty(t, drops)
	_, drops = r.feed("qa", []*MessageExt{plain(102)})
	require.Equal(t, []chunkDrop{{"qa", []int64{0, 1}}}, drops)

	// Max wait, checked when the partial's own queue is fed (even with nothing): another
	// queue's pulls do not time it out, since its own may have stopped (a full cache).
	now := time.Now()
	r = newTestReassembler(reassemblyOptions{maxBytes: 60, maxGap: 100, maxWait: time.Minute})
	r.now = func() time.Time { return now }
	_, _ = r.feed("qa", a[:2])
	now = now.Add(time.Minute + time.Second)
	out, drops = r.feed("qb", nil)
	require.Empty(t, out)
	require.Empty(t, drops, "another queue's pull")
	out, drops = r.feed("qa", nil)
	require.Empty(t, out)
	require.Equal(t, []chunkDrop{{"qa", []int64{0, 1}}}, drops)

	// Forget: the queue is no longer consumed here; nothing is reported.
	_, _ = r.feed("qa", a[:2])
	r.forget("qa")
	require.Zero(t, r.stats().Partial)
	require.Zero(t, r.stats().PartialBytes)
}

// TestChunkWindowCommitOffset: a push consumer's queue commits past a chunked message's
// first chunk only once the reassembled message is consumed; chunks given up count as
// consumed; chunks do not count against the cache limits.
func TestChunkWindowCommitOffset(t *testing.T) {
	pc := &PushConsumer{opts: defaultConsumerOptions()}
	pc.opts.cacheMessages = 3
	log := zerolog.Nop()
	pc.chunks = newReassembler(defaultReassemblyOptions(), &log)
	q := &processQueue{pc: pc, wake: make(chan struct{}, 1)}
	q.start(10)
	body := bytes.Repeat([]byte("z"), 50)
	c := chunkMsgs(t, "ID", body, 10, false, 10, 12, 14, 16, 18)
	in := []*MessageExt{c[0], plain(11), c[1], plain(13), c[2]}
	out := q.reassemble(q.advance(in, 15))
	require.Equal(t, []*MessageExt{in[1], in[3]}, out)
	require.Equal(t, 2, q.mu.count, "chunks are not counted")
	require.False(t, q.full(), "5 chunks and 2 messages with a 3-message limit")
	q.markDone(out)
	off, _ := q.commitOffset()
	require.EqualValues(t, 10, off, "held at the first chunk")

	out = q.reassemble(q.advance([]*MessageExt{c[3], plain(17), c[4], plain(19)}, 20))
	require.Len(t, out, 3)
	whole := out[1]
	require.Equal(t, body, whole.Body)
	require.Equal(t, 3, q.mu.count, "the whole message counts once")
	require.Equal(t, len(body)+2*len("p17"), q.mu.bytes)
	q.markDone([]*MessageExt{out[0], out[2]})
	off, _ = q.commitOffset()
	require.EqualValues(t, 10, off, "the whole message is not consumed yet")
	q.markDone([]*MessageExt{whole})
	off, _ = q.commitOffset()
	require.EqualValues(t, 20, off)
	require.Zero(t, q.mu.count)
	require.Zero(t, q.mu.bytes)
	require.Zero(t, q.mu.chunks)

	// An orphan chunk is consumed at once.
	orphan := chunkMsgs(t, "O", body, 10, false, 20, 21, 22, 23, 24)
	out = q.reassemble(q.advance(orphan[1:3], 23))
	require.Empty(t, out)
	off, _ = q.commitOffset()
	require.EqualValues(t, 23, off)
}

func TestChunkedSendRefusals(t *testing.T) {
	cl, err := New(WithNameServers("127.0.0.1:1"))
	require.NoError(t, err)
	defer func() { require.NoError(t, cl.Close()) }()
	p, err := cl.NewProducer("PG", WithMaxBodySize(10), WithMaxMessageSize(100))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	_, err = p.prepareChunks(message.NewMessage("T", make([]byte, 101)))
	require.ErrorIs(t, err, ErrIllegalMessage)
	require.ErrorIs(t, err, message.ErrBodyTooLarge)
	m := message.NewMessage("T", make([]byte, 50))
	m.SetDelayLevel(3)
	_, err = p.prepareChunks(m)
	require.ErrorIs(t, err, ErrIllegalMessage, "a chunked message cannot be delayed")
	s, err := p.prepareChunks(message.NewMessage("T", bytes.Repeat([]byte("ab"), 50)))
	require.NoError(t, err)
	require.True(t, s.zlib, "a compressible body is compressed as a whole")
	require.Equal(t, (len(s.payload)+9)/10, s.count)
	noise := make([]byte, 95)
	_, _ = rand.Read(noise)
	s, err = p.prepareChunks(message.NewMessage("T", noise))
	require.NoError(t, err)
	require.False(t, s.zlib, "random bytes are not compressed")
	require.Equal(t, 10, s.count)

	_, err = cl.NewProducer("PG2", WithMaxMessageSize(-1))
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = cl.NewPushConsumer("CG", "T", "*", func(context.Context, []*MessageExt) ConsumeResult { return ConsumeSuccess },
		WithChunkReassembly(0, 1, time.Second))
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = cl.NewPullConsumer("CG", WithChunkReassembly(1, 1, 0))
	require.ErrorIs(t, err, ErrInvalidOptions)
	require.False(t, errors.Is(err, ErrIllegalMessage))
}

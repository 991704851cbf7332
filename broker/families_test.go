package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/transaction"
)

// Unit tests of the request families other than send, each built from fakes of the
// interfaces in deps.go.

type offsetFakes struct {
	MessageStore
	min, max int64
}

func (f *offsetFakes) MinOffset(string, int32) int64 { return f.min }
func (f *offsetFakes) MaxOffset(string, int32) int64 { return f.max }

type fakeOffsets struct {
	OffsetTable
	m map[string]int64
}

func (f *fakeOffsets) Query(group, topic string, q int32) (int64, bool) {
	v, ok := f.m[group+"/"+topic]
	return v, ok
}

func (f *fakeOffsets) Commit(group, topic string, q int32, off int64) { f.m[group+"/"+topic] = off }

func (f *fakeOffsets) CommitFrom(group, topic string, q int32, off int64, _, _ uint64) bool {
	f.m[group+"/"+topic] = off
	return true
}

func request(code protocol.RequestCode, h protocol.Header) *remoting.Command {
	return protocol.NewRequest(code, h)
}

func TestQueryConsumerOffsetRules(t *testing.T) {
	st := &offsetFakes{}
	offs := &fakeOffsets{m: map[string]int64{"g/T": 42}}
	h := &offsetHandler{store: st, offsets: offs}
	ask := func(group string) *remoting.Command {
		resp, err := h.handleQueryConsumerOffset(context.Background(), nil,
			request(protocol.QueryConsumerOffset, &protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: "T", QueueID: 0}))
		require.NoError(t, err)
		return resp
	}
	require.Equal(t, "42", ask("g").Ext("offset"), "a committed offset")
	st.min, st.max = 0, 0
	require.Equal(t, int16(protocol.QueryNotFound), ask("new").Code, "empty queue: no offset")
	st.min, st.max = 0, 10
	resp := ask("new")
	require.Equal(t, int16(protocol.Success), resp.Code, "a new group starts at 0 while the queue still holds offset 0")
	require.Equal(t, "0", resp.Ext("offset"))
	st.min = 3
	require.Equal(t, int16(protocol.QueryNotFound), ask("new").Code, "cleaned queue: the client decides")

	_, err := h.handleUpdateConsumerOffset(context.Background(), fakeChannel{},
		request(protocol.UpdateConsumerOffset, &protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "T", CommitOffset: 50}))
	require.NoError(t, err)
	require.Equal(t, "50", ask("g").Ext("offset"))

	_, err = h.handleQueryConsumerOffset(context.Background(), nil, remoting.NewRequest(int16(protocol.QueryConsumerOffset), nil))
	var ce *remoting.CodeError
	require.ErrorAs(t, err, &ce, "a header without its fields is refused")
	require.Equal(t, int16(protocol.SystemError), ce.Code)
}

type queryFakes struct {
	MessageStore
	hits [][]byte
}

func (f *queryFakes) QueryByKey(_, _ string, uniq bool, maxNum int, _, _ int64) (*store.QueryResult, error) {
	return &store.QueryResult{Records: f.hits}, nil
}

func (f *queryFakes) DispatchedOffset() int64 { return 777 }

func TestQueryMessageAnswers(t *testing.T) {
	st := &queryFakes{}
	q := &queryHandler{store: st, clock: func() time.Time { return time.UnixMilli(1_700_000_000_000) }}
	req := request(protocol.QueryMessage, &protocol.QueryMessageRequestHeader{Topic: "T", Key: "k", MaxNum: 10, EndTimestamp: 1})
	resp, err := q.handleQueryMessage(context.Background(), nil, req)
	require.NoError(t, err)
	require.Equal(t, int16(protocol.QueryNotFound), resp.Code)

	st.hits = [][]byte{[]byte("rec1"), []byte("rec2")}
	resp, err = q.handleQueryMessage(context.Background(), nil, req)
	require.NoError(t, err)
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Equal(t, st.hits, resp.BodyVec, "the stored records, not copies")
	var rh protocol.QueryMessageResponseHeader
	require.NoError(t, rh.DecodeExt(resp.ExtFields))
	require.Equal(t, int64(777), rh.IndexLastUpdatePhyoffset)
}

type adminTopics struct {
	TopicTable
	created []protocol.TopicConfig
}

func (f *adminTopics) CreateOrUpdate(cfg protocol.TopicConfig) (bool, error) {
	f.created = append(f.created, cfg)
	return true, nil
}

func (f *adminTopics) Get(topic string) (protocol.TopicConfig, bool) {
	for _, c := range slices.Backward(f.created) {
		if c.TopicName == topic {
			return c, true
		}
	}
	return protocol.TopicConfig{}, false
}

func TestCreateTopicRegistersBeforeAnswering(t *testing.T) {
	topics := &adminTopics{}
	registered := 0
	a := &adminHandler{topics: topics, registerNow: func(context.Context) { registered++ }}
	h := &protocol.CreateTopicRequestHeader{Topic: "Orders", DefaultTopic: "TBW102", ReadQueueNums: 3, WriteQueueNums: 3,
		Perm: 6, TopicFilterType: "SINGLE_TAG"}
	resp, err := a.handleCreateTopic(context.Background(), nil, request(protocol.UpdateAndCreateTopic, h))
	require.NoError(t, err)
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Equal(t, 1, registered)
	require.Equal(t, int32(3), topics.created[0].WriteQueueNums)

	for _, bad := range []string{protocol.ScheduleTopic, "bad topic", protocol.AutoCreateTopicKey} {
		h.Topic = bad
		_, err := a.handleCreateTopic(context.Background(), nil, request(protocol.UpdateAndCreateTopic, h))
		var ce *remoting.CodeError
		require.ErrorAs(t, err, &ce, bad)
		require.Equal(t, int16(protocol.InvalidParameter), ce.Code, bad)
	}
	require.Len(t, topics.created, 1)
	require.Equal(t, 1, registered)
}

type fakeTxEnd struct {
	TxnService
	got transaction.EndRequest
	res transaction.EndResult
	err error
}

func (f *fakeTxEnd) End(req transaction.EndRequest) (transaction.EndResult, error) {
	f.got = req
	return f.res, f.err
}

func TestEndTransactionAnswers(t *testing.T) {
	tx := &fakeTxEnd{res: transaction.EndCommitted}
	h := &txHandler{tx: tx}
	hdr := &protocol.EndTransactionRequestHeader{ProducerGroup: "pg", TranStateTableOffset: 3, CommitLogOffset: 4096,
		CommitOrRollback: protocol.TransactionCommit, MsgID: "m", TransactionID: "t"}
	resp, err := h.handleEndTransaction(context.Background(), nil, request(protocol.EndTransaction, hdr))
	require.NoError(t, err)
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Equal(t, transaction.EndRequest{ProducerGroup: "pg", TranStateTableOffset: 3, CommitLogOffset: 4096,
		CommitOrRollback: protocol.TransactionCommit, MsgID: "m", TransactionID: "t"}, tx.got)

	tx.res = transaction.EndNotFound
	resp, err = h.handleEndTransaction(context.Background(), nil, request(protocol.EndTransaction, hdr))
	require.NoError(t, err)
	require.Equal(t, int16(protocol.SystemError), resp.Code)

	tx.err = store.ErrDiskFull
	_, err = h.handleEndTransaction(context.Background(), nil, request(protocol.EndTransaction, hdr))
	var ce *remoting.CodeError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int16(protocol.ServiceNotAvailable), ce.Code)
}

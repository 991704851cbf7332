package broker

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/dedup"
	"github.com/ferrymq/ferry/broker/groupconf"
	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/transaction"
)

// fakeStore records what handlers put; the rest of MessageStore is not used by the
// send path and panics through the nil embedded interface if it is.
type fakeStore struct {
	MessageStore
	puts [][]message.Record
	wait []bool
	err  error
}

func (f *fakeStore) PutMessages(recs []message.Record, wait bool) (store.PutResult, error) {
	cp := make([]message.Record, len(recs))
	for i, r := range recs {
		r.Properties = append([]byte(nil), r.Properties...)
		r.Topic = append([]byte(nil), r.Topic...)
		cp[i] = r
	}
	f.puts = append(f.puts, cp)
	f.wait = append(f.wait, wait)
	if f.err != nil {
		return store.PutResult{}, f.err
	}
	return store.PutResult{PhysicalOffset: 4096, QueueOffset: 7, Count: len(recs), Status: store.PutOK}, nil
}

type fakeTopics struct {
	TopicTable
	cfgs map[string]protocol.TopicConfig
}

func (f *fakeTopics) Get(topic string) (protocol.TopicConfig, bool) {
	c, ok := f.cfgs[topic]
	return c, ok
}

func (f *fakeTopics) CreateDLQTopic(group string) (protocol.TopicConfig, bool, error) {
	c := protocol.TopicConfig{TopicName: protocol.DLQTopic(group), ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
	f.cfgs[c.TopicName] = c
	return c, true, nil
}

type fakeGroups struct {
	GroupTable
	retryMax int32
}

func (f *fakeGroups) FindOrCreate(group string) (groupconf.Config, bool, error) {
	c := groupconf.DefaultConfig(group)
	c.RetryMaxTimes = f.retryMax
	return c, false, nil
}

// fakeSched records what the send path asks of the schedule rewrite; it parks nothing.
type fakeSched struct {
	calls     int
	lastDelay []byte // the DELAY level the last call's scan carried
}

func (f *fakeSched) RewriteScanned(rec *message.Record, sp *message.SendProps, _ []byte) ([]byte, bool, error) {
	f.calls++
	f.lastDelay = sp.DelayLevel
	return rec.Properties, false, nil
}

type fakeTx struct {
	TxnService
	prepared []message.SendProps
}

func (f *fakeTx) PrepareScanned(rec *message.Record, sp *message.SendProps, _ bool) (transaction.PrepareResult, error) {
	f.prepared = append(f.prepared, *sp)
	return transaction.PrepareResult{QueueID: rec.QueueID, TransactionID: string(sp.UniqKey)}, nil
}

type fakeChannel struct{ remoting.Channel }

func (fakeChannel) ID() uint64         { return 1 }
func (fakeChannel) RemoteAddr() string { return "127.0.0.1:5555" }

type senderFixture struct {
	s     *sender
	store *fakeStore
	tx    *fakeTx
	sched *fakeSched
}

func newSenderFixture(retryMax int32) *senderFixture {
	topics := &fakeTopics{cfgs: map[string]protocol.TopicConfig{
		"T":        {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
		"%RETRY%g": {TopicName: "%RETRY%g", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6},
		"ReadOnly": {TopicName: "ReadOnly", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4},
		"D": {TopicName: "D", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6,
			Attributes: map[string]string{topicconf.AttrDedupWindow: "1m"}},
	}}
	f := &senderFixture{store: &fakeStore{}, tx: &fakeTx{}, sched: &fakeSched{}}
	groups := &fakeGroups{retryMax: retryMax}
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	f.s = &sender{store: f.store, topics: topics, sched: f.sched, tx: f.tx, conns: &conns{},
		retry: &retryPolicy{topics: topics, groups: groups, log: zerolog.Nop()},
		uniq:  message.NewUniqKeyGenerator(host.Addr(), 0), storeHost: host, cluster: "C", log: zerolog.Nop()}
	var err error
	if f.s.dedup, err = dedup.New(dedup.DefaultOptions()); err != nil {
		panic(err)
	}
	return f
}

func sendRequest(code protocol.RequestCode, h protocol.SendMessageRequestHeader, body []byte) *remoting.Command {
	req := remoting.NewRequestExt(int16(code), nil)
	if protocol.SendHeaderUsesV2(code) {
		h.EncodeExtV2(&req.ExtFields)
	} else {
		h.EncodeExt(&req.ExtFields)
	}
	req.Body = body
	return req
}

func TestSendAddsUniqKeyAndClusterOnce(t *testing.T) {
	f := newSenderFixture(16)
	props, err := message.EncodeProperties(map[string]string{message.PropertyTags: "a", message.PropertyWaitStoreMsgOK: "false"})
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", QueueID: 2, Properties: string(props)}
	resp, err := f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendMessageV2, h, []byte("body")))
	require.NoError(t, err)
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Len(t, f.store.puts, 1)
	rec := f.store.puts[0][0]
	uniq, ok := message.LookupProperty(rec.Properties, message.PropertyUniqKey)
	require.True(t, ok)
	require.Equal(t, 1, countKey(rec.Properties, message.PropertyUniqKey))
	require.Equal(t, 1, countKey(rec.Properties, message.PropertyCluster))
	require.Equal(t, []bool{false}, f.store.wait, "WAIT=false is honoured")
	var rh protocol.SendMessageResponseHeader
	require.NoError(t, rh.DecodeExt(resp.ExtFields))
	require.Equal(t, string(uniq), rh.TransactionID)
	require.Equal(t, int32(2), rh.QueueID)
	require.Equal(t, 1, f.sched.calls, "a plain send goes through the schedule rewrite")

	// A producer's own UNIQ_KEY and CLUSTER are kept, not doubled.
	props, err = message.EncodeProperties(map[string]string{message.PropertyUniqKey: "MINE", message.PropertyCluster: "X"})
	require.NoError(t, err)
	h.Properties = string(props)
	_, err = f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendMessage, h, []byte("b")))
	require.NoError(t, err)
	rec = f.store.puts[1][0]
	v, _ := message.LookupProperty(rec.Properties, message.PropertyUniqKey)
	require.Equal(t, "MINE", string(v))
	require.Equal(t, 1, countKey(rec.Properties, message.PropertyUniqKey))
	require.Equal(t, 1, countKey(rec.Properties, message.PropertyCluster))
}

func TestSendPreparedGoesToTransactionService(t *testing.T) {
	f := newSenderFixture(16)
	props, err := message.EncodeProperties(map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "pg"})
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", QueueID: 1, Properties: string(props)}
	resp, err := f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendMessageV2, h, []byte("b")))
	require.NoError(t, err)
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Empty(t, f.store.puts, "a half message is stored by the transaction service only")
	require.Len(t, f.tx.prepared, 1)
	require.Equal(t, "pg", string(f.tx.prepared[0].ProducerGroup))
	require.NotEmpty(t, f.tx.prepared[0].UniqKey, "the broker's UNIQ_KEY is in the scan the service gets")
	require.Zero(t, f.sched.calls, "prepared messages are not rewritten at prepare time")
	id, ok := f.s.conns.txConn("pg")
	require.True(t, ok)
	require.Equal(t, uint64(1), id)
}

func TestDirectRetrySendPastLimitGoesToDLQ(t *testing.T) {
	for _, tc := range []struct {
		reconsume, headerMax, groupMax int32
		dlq                            bool
	}{
		{reconsume: 2, groupMax: 3, dlq: false},
		{reconsume: 3, groupMax: 3, dlq: true}, // the same ≥ as CONSUMER_SEND_MSG_BACK
		{reconsume: 3, headerMax: 5, groupMax: 3, dlq: false},
		{reconsume: 5, headerMax: 5, groupMax: 16, dlq: true},
	} {
		f := newSenderFixture(tc.groupMax)
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "%RETRY%g", DefaultTopic: "TBW102",
			QueueID: 0, ReconsumeTimes: tc.reconsume, MaxReconsumeTimes: tc.headerMax, Properties: "DELAY\x013\x02"}
		_, err := f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendMessage, h, []byte("b")))
		require.NoError(t, err)
		rec := f.store.puts[0][0]
		if tc.dlq {
			require.Equal(t, "%DLQ%g", string(rec.Topic), "%+v", tc)
			_, delayed := message.LookupProperty(rec.Properties, message.PropertyDelayLevel)
			require.False(t, delayed, "a dead letter is not delayed")
			require.Nil(t, f.sched.lastDelay, "nor asked to be parked by the schedule rewrite")
		} else {
			require.Equal(t, "%RETRY%g", string(rec.Topic), "%+v", tc)
			require.Equal(t, "3", string(f.sched.lastDelay), "a retry keeps its delay")
		}
	}
}

func TestSendRefusals(t *testing.T) {
	f := newSenderFixture(16)
	for name, tc := range map[string]struct {
		h    protocol.SendMessageRequestHeader
		code protocol.RequestCode
		want protocol.ResponseCode
	}{
		"bad topic name":     {protocol.SendMessageRequestHeader{Topic: "bad topic", DefaultTopic: "TBW102"}, protocol.SendMessage, protocol.InvalidParameter},
		"not writeable":      {protocol.SendMessageRequestHeader{Topic: "ReadOnly", DefaultTopic: "TBW102"}, protocol.SendMessage, protocol.NoPermission},
		"unknown, no auto":   {protocol.SendMessageRequestHeader{Topic: "Nope", DefaultTopic: "TBW102"}, protocol.SendMessage, protocol.TopicNotExist},
		"queue out of range": {protocol.SendMessageRequestHeader{Topic: "T", DefaultTopic: "TBW102", QueueID: 9}, protocol.SendMessage, protocol.InvalidParameter},
		"delayed batch":      {protocol.SendMessageRequestHeader{Topic: "T", DefaultTopic: "TBW102", Properties: "DELAY\x012\x02", Batch: true}, protocol.SendBatchMessage, protocol.MessageIllegal},
		"batch to retry":     {protocol.SendMessageRequestHeader{Topic: "%RETRY%g", DefaultTopic: "TBW102", Batch: true}, protocol.SendBatchMessage, protocol.MessageIllegal},
		"garbage batch":      {protocol.SendMessageRequestHeader{Topic: "T", DefaultTopic: "TBW102", Batch: true}, protocol.SendBatchMessage, protocol.MessageIllegal},
	} {
		_, err := f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(tc.code, tc.h, []byte{0, 0, 0, 9}))
		var ce *remoting.CodeError
		require.True(t, errors.As(err, &ce), name)
		require.Equal(t, int16(tc.want), ce.Code, "%s: %v", name, err)
	}
	require.Empty(t, f.store.puts)
}

func TestStoreErrorCodes(t *testing.T) {
	f := newSenderFixture(16)
	f.store.err = store.ErrDiskFull
	h := protocol.SendMessageRequestHeader{Topic: "T", DefaultTopic: "TBW102"}
	_, err := f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendMessage, h, []byte("b")))
	var ce *remoting.CodeError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int16(protocol.ServiceNotAvailable), ce.Code)
}

func TestRetryLimitRule(t *testing.T) {
	require.Equal(t, int32(16), limit(16, 0, false))
	require.Equal(t, int32(0), limit(16, 0, true), "a client's explicit 0 means no retries")
	require.Equal(t, int32(16), limit(16, -1, true), "negative means the group's own")
	require.True(t, exhausted(3, 3))
	require.False(t, exhausted(2, 3))
}

func countKey(props []byte, key string) int {
	n := 0
	for k := range message.PropertyPairs(props) {
		if string(k) == key {
			n++
		}
	}
	return n
}

// nopStore accepts puts without keeping anything (allocation test).
type nopStore struct{ MessageStore }

func (nopStore) PutMessages(recs []message.Record, _ bool) (store.PutResult, error) {
	return store.PutResult{PhysicalOffset: 4096, QueueOffset: 7, Count: len(recs), Status: store.PutOK}, nil
}

// A plain send costs the response, its msgId and its transactionId strings, and nothing
// else: the header decodes into the request's own ext list, and the property scan, the
// record and the property buffers are pooled.
func TestSendHandlerAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector; make test runs this without it")
	}
	f := newSenderFixture(16)
	f.s.store = nopStore{}
	props, err := message.EncodeProperties(map[string]string{message.PropertyTags: "a", message.PropertyKeys: "k1 k2"})
	require.NoError(t, err)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", QueueID: 1, Properties: string(props)}
	req := sendRequest(protocol.SendMessageV2, h, make([]byte, 1024))
	var ch remoting.Channel = fakeChannel{}
	n := testing.AllocsPerRun(200, func() {
		if _, err := f.s.handleSend(context.Background(), ch, req); err != nil {
			t.Fatal(err)
		}
	})
	require.LessOrEqual(t, n, 3.0)
}

// A batch too large to answer is refused before anything is stored.
func TestBatchMessageCountIsBounded(t *testing.T) {
	f := newSenderFixture(16)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", Batch: true}
	item := protocol.BatchItem{Body: []byte("x")}
	var body []byte
	var err error
	for range maxBatchMessages {
		body, err = protocol.AppendBatchItem(body, item)
		require.NoError(t, err)
	}
	resp, err := f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendBatchMessage, h, body))
	require.NoError(t, err, "exactly the limit is accepted")
	require.Equal(t, int16(protocol.Success), resp.Code)
	require.Len(t, f.store.puts[0], maxBatchMessages)

	body, err = protocol.AppendBatchItem(body, item)
	require.NoError(t, err)
	_, err = f.s.handleSend(context.Background(), fakeChannel{}, sendRequest(protocol.SendBatchMessage, h, body))
	var ce *remoting.CodeError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int16(protocol.MessageIllegal), ce.Code)
	require.Len(t, f.store.puts, 1, "nothing more was stored")
}

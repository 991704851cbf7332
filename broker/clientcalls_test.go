package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// resetFakes is a store whose queue q holds offsets [min[q], max[q]) stored at times
// 1000·offset, and an offset table by queue.
type resetFakes struct {
	min, max []int64
	offsets  map[int32]int64
}

func (f *resetFakes) MinOffset(_ string, q int32) int64 { return f.min[q] }
func (f *resetFakes) MaxOffset(_ string, q int32) int64 { return f.max[q] }
func (f *resetFakes) OffsetByTime(_ string, q int32, ts int64, _ bool) (int64, error) {
	return min(max((ts+999)/1000, f.min[q]), f.max[q]), nil
}
func (f *resetFakes) ReadRecordBytes(int64) ([]byte, *store.View, error) {
	return nil, nil, errors.New("no record")
}
func (f *resetFakes) Commit(_, _ string, q int32, off int64) { f.offsets[q] = off }
func (f *resetFakes) CommitFrom(_, _ string, q int32, off int64, _, _ uint64) bool {
	f.offsets[q] = off
	return true
}
func (f *resetFakes) Query(_, _ string, q int32) (int64, bool) {
	off, ok := f.offsets[q]
	return off, ok
}
func (f *resetFakes) DeleteTopic(string) int { return 0 }

// noConsumers is a registry without members.
type noConsumers struct{}

func (noConsumers) ConsumerChannels(string) []uint64              { return nil }
func (noConsumers) ConsumerChannel(string, string) (uint64, bool) { return 0, false }

func TestResetOffsetRules(t *testing.T) {
	f := &resetFakes{min: []int64{0, 5, 0}, max: []int64{10, 20, 0}, offsets: map[int32]int64{}}
	h := &clientCallHandler{store: f, offsets: f, clients: noConsumers{}, conns: &conns{}, brokerName: "b",
		topics:  &fakeTopics{cfgs: map[string]protocol.TopicConfig{"T": {TopicName: "T", ReadQueueNums: 3, WriteQueueNums: 4}}},
		timeout: clientCallTimeout, log: zerolog.Nop()}
	reset := func(rh protocol.ResetOffsetRequestHeader) map[int32]int64 {
		t.Helper()
		rh.Topic, rh.Group = "T", "g"
		resp, err := h.handleResetOffset(context.Background(), nil, protocol.NewRequest(protocol.InvokeBrokerToResetOffset, &rh))
		require.NoError(t, err)
		require.Equal(t, int16(protocol.Success), resp.Code)
		body, err := protocol.DecodeResetOffsetBody(resp.Body)
		require.NoError(t, err)
		out := map[int32]int64{}
		for mq, off := range body.OffsetTable {
			require.Equal(t, protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: mq.QueueID}, mq)
			out[mq.QueueID] = off
			require.Equal(t, off, f.offsets[mq.QueueID], "queue %d written to the offset table", mq.QueueID)
		}
		return out
	}
	// The group is offline: the offsets are written all the same, for the read queues.
	require.Equal(t, map[int32]int64{0: 0, 1: 5, 2: 0}, reset(protocol.ResetOffsetRequestHeader{Timestamp: 0, IsForce: true}), "past: min")
	require.Equal(t, map[int32]int64{0: 10, 1: 20, 2: 0}, reset(protocol.ResetOffsetRequestHeader{Timestamp: 1 << 50, IsForce: true}), "future: max")
	require.Equal(t, map[int32]int64{0: 7, 1: 7, 2: 0}, reset(protocol.ResetOffsetRequestHeader{Timestamp: 6500, IsForce: true}), "by time")
	require.Equal(t, map[int32]int64{0: 10, 1: 20, 2: 0}, reset(protocol.ResetOffsetRequestHeader{Timestamp: -1, IsForce: true}), "-1: max")
	f.offsets = map[int32]int64{0: 3, 1: 15}
	require.Equal(t, map[int32]int64{0: 3, 1: 7, 2: 0}, reset(protocol.ResetOffsetRequestHeader{Timestamp: 6500}), "not forced: only back")
	q, off := int32(1), int64(99)
	require.Equal(t, map[int32]int64{1: 20}, reset(protocol.ResetOffsetRequestHeader{QueueID: &q, Offset: &off, IsForce: true}), "5.x: one queue, clamped")

	rh := protocol.ResetOffsetRequestHeader{Topic: "Nope", Group: "g", IsForce: true}
	_, err := h.handleResetOffset(context.Background(), nil, protocol.NewRequest(protocol.InvokeBrokerToResetOffset, &rh))
	var ce *remoting.CodeError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int16(protocol.TopicNotExist), ce.Code)
	q = 3
	rh = protocol.ResetOffsetRequestHeader{Topic: "T", Group: "g", QueueID: &q}
	_, err = h.handleResetOffset(context.Background(), nil, protocol.NewRequest(protocol.InvokeBrokerToResetOffset, &rh))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int16(protocol.InvalidParameter), ce.Code)

	// Calls to a consumer that is not connected.
	_, err = h.handleRunningInfo(context.Background(), nil, protocol.NewRequest(protocol.GetConsumerRunningInfo,
		&protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "g", ClientID: "c"}))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int16(protocol.ConsumerNotOnline), ce.Code)
	_, err = h.handleConsumeDirectly(context.Background(), nil, protocol.NewRequest(protocol.ConsumeMessageDirectly,
		&protocol.ConsumeMessageDirectlyResultRequestHeader{ConsumerGroup: "g", ClientID: "c", MsgID: "not-an-id"}))
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int16(protocol.InvalidParameter), ce.Code)
}

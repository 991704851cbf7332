package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// A slave copies its master's topics, subscription groups, consumer offsets and delay
// progress within the sync interval, from the master's broker address the name server
// gave it; its own topic changes are replaced by the master's table at the next sync.
func TestSlaveSyncsMetadata(t *testing.T) {
	const interval = 100 * time.Millisecond
	c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) { o.SlaveSyncInterval = interval }))
	s := c.StartSlave(t, nil)
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()
	ok := func(resp *remoting.Command) {
		t.Helper()
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	}

	ok(call(t, rc, c.BrokerAddr, protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: "SyncTopic",
		DefaultTopic: "TBW102", ReadQueueNums: 3, WriteQueueNums: 3, Perm: protocol.PermRead | protocol.PermWrite}, nil))
	sg := protocol.DefaultSubscriptionGroupConfig("SyncCG")
	sg.RetryMaxTimes = 5
	body, err := protocol.EncodeSubscriptionGroupConfig(&sg)
	require.NoError(t, err)
	ok(call(t, rc, c.BrokerAddr, protocol.UpdateAndCreateSubscriptionGroup, nil, body))
	for q, off := range []int64{7, 3} {
		ok(call(t, rc, c.BrokerAddr, protocol.UpdateConsumerOffset, &protocol.UpdateConsumerOffsetRequestHeader{
			ConsumerGroup: "SyncCG", Topic: "SyncTopic", QueueID: int32(q), CommitOffset: off}, nil))
	}
	// A delayed message (level 1, 1 s) moves the master's level-1 cursor once delivered.
	props, err := message.EncodeProperties(map[string]string{message.PropertyDelayLevel: "1"})
	require.NoError(t, err)
	ok(call(t, rc, c.BrokerAddr, protocol.SendMessageV2, &protocol.SendMessageRequestHeaderV2{
		SendMessageRequestHeader: protocol.SendMessageRequestHeader{ProducerGroup: "SyncPG", Topic: "SyncTopic",
			DefaultTopic: "TBW102", DefaultTopicQueueNums: 3, BornTimestamp: time.Now().UnixMilli(),
			Properties: string(props)}}, []byte("later")))
	// A timer message raises the master's timer watermark once delivered. Its delay is
	// relative (TIMER_DELAY_MS): an absolute TIMER_DELIVER_MS already past when a loaded
	// broker stores it is delivered at once, never entering the timer queue.
	props, err = message.EncodeProperties(map[string]string{message.PropertyTimerDelayMs: "200"})
	require.NoError(t, err)
	ok(call(t, rc, c.BrokerAddr, protocol.SendMessageV2, &protocol.SendMessageRequestHeaderV2{
		SendMessageRequestHeader: protocol.SendMessageRequestHeader{ProducerGroup: "SyncPG", Topic: "SyncTopic",
			DefaultTopic: "TBW102", DefaultTopicQueueNums: 3, BornTimestamp: time.Now().UnixMilli(),
			Properties: string(props)}}, []byte("at a time")))

	// The master answers the whole tables.
	resp := call(t, rc, c.BrokerAddr, protocol.GetAllConsumerOffset, nil, nil)
	ok(resp)
	offs, err := protocol.DecodeConsumerOffsetSerializeWrapper(resp.Body)
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{0: 7, 1: 3}, offs.OffsetTable["SyncTopic@SyncCG"])

	testutil.Eventually(t, 10*time.Second, func() bool {
		resp := call(t, rc, s.Addr, protocol.GetAllTopicConfig, nil, nil)
		w, err := protocol.DecodeTopicConfigSerializeWrapper(resp.Body)
		return err == nil && w.TopicConfigTable["SyncTopic"].ReadQueueNums == 3
	}, "the slave has the master's topic")
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp := call(t, rc, s.Addr, protocol.GetAllSubscriptionGroupConfig, nil, nil)
		w, err := protocol.DecodeSubscriptionGroupWrapper(resp.Body)
		return err == nil && w.SubscriptionGroupTable["SyncCG"].RetryMaxTimes == 5
	}, "the slave has the master's subscription group")
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp := call(t, rc, s.Addr, protocol.QueryConsumerOffset, &protocol.QueryConsumerOffsetRequestHeader{
			ConsumerGroup: "SyncCG", Topic: "SyncTopic", QueueID: 0}, nil)
		var h protocol.OffsetResponseHeader
		return resp.Code == int16(protocol.Success) && h.DecodeExt(resp.ExtFields) == nil && h.Offset == 7
	}, "the slave has the master's consumer offsets")
	testutil.Eventually(t, 15*time.Second, func() bool {
		resp := call(t, rc, s.Addr, protocol.GetAllDelayOffset, nil, nil)
		w, err := protocol.DecodeDelayOffsetSerializeWrapper(resp.Body)
		return err == nil && w.OffsetTable[1] == 1
	}, "the slave has the master's delay progress")
	testutil.Eventually(t, 15*time.Second, func() bool {
		resp := call(t, rc, s.Addr, protocol.GetAllDelayOffset, nil, nil)
		w, err := protocol.DecodeDelayOffsetSerializeWrapper(resp.Body)
		return err == nil && w.TimerProgress != nil && w.TimerProgress.Watermark == 1
	}, "the slave has the master's timer progress")

	// Written to the slave's own files, in RocketMQ's shapes.
	for file, want := range map[string]string{"topics.json": `"SyncTopic"`, "subscriptionGroup.json": `"SyncCG"`,
		"consumerOffset.json": `"SyncTopic@SyncCG"`, "delayOffset.json": `"1":1`, "timerProgress.json": `"watermark":1`} {
		data, err := os.ReadFile(filepath.Join(s.Dir, "config", file))
		require.NoError(t, err, file)
		require.Contains(t, string(data), want, file)
	}
	info := kv(t, rc, s.Addr, protocol.GetBrokerRuntimeInfo)
	require.Equal(t, c.BrokerAddr, info["ferrySlaveSyncMaster"])
	require.NotEqual(t, "0", info["ferrySlaveSyncTime"])
	require.Empty(t, info["ferrySlaveSyncError"])

	// A topic created on the slave alone is gone after the next sync: the master's table
	// wins.
	ok(call(t, rc, s.Addr, protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: "SlaveOnly",
		DefaultTopic: "TBW102", ReadQueueNums: 1, WriteQueueNums: 1, Perm: protocol.PermRead | protocol.PermWrite}, nil))
	testutil.Eventually(t, 10*time.Second, func() bool {
		resp := call(t, rc, s.Addr, protocol.GetAllTopicConfig, nil, nil)
		w, err := protocol.DecodeTopicConfigSerializeWrapper(resp.Body)
		_, there := w.TopicConfigTable["SlaveOnly"]
		return err == nil && !there && w.TopicConfigTable["SyncTopic"].ReadQueueNums == 3
	}, "the slave's own topic replaced by the master's table")

	// Offsets committed to the slave (clients do while the master is down) stay for keys
	// the master lacks; the master's values win for the keys it has.
	committed := time.Now().UnixMilli()
	ok(call(t, rc, s.Addr, protocol.UpdateConsumerOffset, &protocol.UpdateConsumerOffsetRequestHeader{
		ConsumerGroup: "SyncCG", Topic: "SyncTopic", QueueID: 2, CommitOffset: 11}, nil))
	ok(call(t, rc, s.Addr, protocol.UpdateConsumerOffset, &protocol.UpdateConsumerOffsetRequestHeader{
		ConsumerGroup: "SyncCG", Topic: "SyncTopic", QueueID: 0, CommitOffset: 9}, nil))
	testutil.Eventually(t, 10*time.Second, func() bool {
		var at int64
		_, err := fmt.Sscan(kv(t, rc, s.Addr, protocol.GetBrokerRuntimeInfo)["ferrySlaveSyncTime"], &at)
		return err == nil && at > committed+int64(interval/time.Millisecond)
	}, "a sync after the commits to the slave")
	for q, want := range map[int32]int64{0: 7, 2: 11} {
		resp := call(t, rc, s.Addr, protocol.QueryConsumerOffset, &protocol.QueryConsumerOffsetRequestHeader{
			ConsumerGroup: "SyncCG", Topic: "SyncTopic", QueueID: q}, nil)
		var h protocol.OffsetResponseHeader
		require.NoError(t, h.DecodeExt(resp.ExtFields))
		require.Equal(t, want, h.Offset, fmt.Sprintf("queue %d", q))
	}
}

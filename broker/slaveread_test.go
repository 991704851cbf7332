package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// pullSuggestion pulls one message of queue 0 of topic at offset from addr for group
// and returns the answer's code and suggestWhichBrokerId.
func pullSuggestion(t *testing.T, rc *remoting.Client, addr, group, topic string, offset int64) (int16, int64) {
	t.Helper()
	resp := call(t, rc, addr, protocol.PullMessage, &protocol.PullMessageRequestHeader{
		ConsumerGroup: group, Topic: topic, QueueOffset: offset, MaxMsgNums: 1,
		SysFlag: protocol.PullFlagSubscription, Subscription: "*"}, nil)
	var rh protocol.PullMessageResponseHeader
	require.NoError(t, rh.DecodeExt(resp.ExtFields), resp.Remark)
	return resp.Code, rh.SuggestWhichBrokerID
}

// Pull answers of a master and of its slave suggest the broker of the next pull (storage
// spec §6.2), with a 4 KiB in-memory limit and ten 1 KiB messages: the first message is
// "in disk" (about 10 KiB behind the log's end), the last "in memory". Without
// slaveReadEnable both brokers suggest the master (0) and the slave still serves the
// pull, where RocketMQ would refuse it; with it both follow the group: its
// whichBrokerWhenConsumeSlowly in disk, its brokerId in memory — 1 and 0 for a default
// group, 3 and 2 for one configured so.
func TestPullSuggestionsOnMasterAndSlave(t *testing.T) {
	const topic, limit, n = "SuggestTopic", 4 << 10, 10
	for _, slaveRead := range []bool{false, true} {
		t.Run(fmt.Sprintf("slaveReadEnable=%v", slaveRead), func(t *testing.T) {
			c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) {
				o.SlaveReadEnable = slaveRead
				o.Store.InMemoryMaxBytes = limit
				o.SlaveSyncInterval = 100 * time.Millisecond
			}))
			s := c.StartSlave(t, nil)
			rc, err := remoting.NewClient(remoting.DefaultClientOptions())
			require.NoError(t, err)
			defer func() { require.NoError(t, rc.Close()) }()
			cl, err := client.New(client.WithNameServers(c.NamesrvAddr), client.WithRequestTimeout(3*time.Second))
			require.NoError(t, err)
			defer func() { require.NoError(t, cl.Close()) }()

			for i := range n {
				resp := sendRaw(t, rc, c.BrokerAddr, topic, bytes.Repeat([]byte{'a' + byte(i)}, 1<<10), false)
				require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
			}
			slow := protocol.DefaultSubscriptionGroupConfig("SlowCG")
			slow.BrokerID, slow.WhichBrokerWhenConsumeSlowly = 2, 3
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			require.NoError(t, cl.Admin().CreateSubscriptionGroup(ctx, slow, client.Target{Brokers: []string{c.BrokerAddr}}))

			end := c.Broker.Store().CommitLog().MaxOffset()
			testutil.Eventually(t, 10*time.Second, func() bool {
				groups, err := cl.Admin().SubscriptionGroups(ctx, s.Addr)
				return err == nil && groups["SlowCG"].WhichBrokerWhenConsumeSlowly == 3 &&
					c.Broker.Store().DispatchedOffset() >= end && s.Broker.Store().DispatchedOffset() >= end &&
					s.Broker.Store().MaxOffset(topic, 0) == n
			}, "both brokers serve the messages; the slave has the topic and the group")

			want := func(group string, inDisk bool) int64 {
				switch {
				case !slaveRead:
					return 0
				case group == "SlowCG" && inDisk:
					return 3
				case group == "SlowCG":
					return 2
				case inDisk:
					return 1
				}
				return 0
			}
			for _, b := range []struct{ name, addr string }{{"master", c.BrokerAddr}, {"slave", s.Addr}} {
				for _, group := range []string{"DefaultCG", "SlowCG"} {
					for _, at := range []struct {
						offset int64
						inDisk bool
					}{{0, true}, {n - 1, false}} {
						code, got := pullSuggestion(t, rc, b.addr, group, topic, at.offset)
						require.Equal(t, int16(protocol.Success), code, "%s serves the pull", b.name)
						require.Equal(t, want(group, at.inDisk), got, "%s, group %s, offset %d", b.name, group, at.offset)
					}
				}
			}

			for _, addr := range []string{c.BrokerAddr, s.Addr} {
				cfg := kv(t, rc, addr, protocol.GetBrokerConfig)
				require.Equal(t, strconv.FormatBool(slaveRead), cfg["slaveReadEnable"])
				require.Equal(t, "40", cfg["accessMessageInMemoryMaxRatio"])
				require.Equal(t, strconv.Itoa(limit), cfg["ferryAccessMessageInMemoryMaxBytes"])
			}
		})
	}
}

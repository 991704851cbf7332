package broker_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// With enablePropertyFilter off, SQL92 subscriptions are refused with SYSTEM_ERROR at
// CHECK_CLIENT_CONFIG and at pulls (never served unfiltered), TAG ones still served, and
// GET_BROKER_CONFIG says so; with it on (the default) the same expression is accepted.
func TestPropertyFilterSetting(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) { o.EnablePropertyFilter = enabled }))
		rc, err := remoting.NewClient(remoting.DefaultClientOptions())
		require.NoError(t, err)
		sub := protocol.SubscriptionData{Topic: "SqlOff", SubString: "a > 1", ExpressionType: protocol.ExpressionSQL92}
		body, err := protocol.EncodeCheckClientRequestBody(&protocol.CheckClientRequestBody{ClientID: "c@1", Group: "cg", SubscriptionData: &sub})
		require.NoError(t, err)
		resp := call(t, rc, c.BrokerAddr, protocol.CheckClientConfig, nil, body)
		tag := sub
		tag.SubString, tag.ExpressionType = "TagA", protocol.ExpressionTag
		tagBody, err := protocol.EncodeCheckClientRequestBody(&protocol.CheckClientRequestBody{ClientID: "c@1", Group: "cg", SubscriptionData: &tag})
		require.NoError(t, err)
		require.Equal(t, int16(protocol.Success), call(t, rc, c.BrokerAddr, protocol.CheckClientConfig, nil, tagBody).Code)
		cfg := kv(t, rc, c.BrokerAddr, protocol.GetBrokerConfig)
		if enabled {
			require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
			require.Equal(t, "true", cfg["enablePropertyFilter"])
			require.NoError(t, rc.Close())
			continue
		}
		require.Equal(t, int16(protocol.SystemError), resp.Code)
		require.Contains(t, resp.Remark, "SQL92")
		require.Equal(t, "false", cfg["enablePropertyFilter"])

		ok(t, call(t, rc, c.BrokerAddr, protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: "SqlOff",
			DefaultTopic: "TBW102", ReadQueueNums: 1, WriteQueueNums: 1, Perm: protocol.PermRead | protocol.PermWrite}, nil))
		resp = call(t, rc, c.BrokerAddr, protocol.PullMessage, &protocol.PullMessageRequestHeader{ConsumerGroup: "cg",
			Topic: "SqlOff", MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, Subscription: "a > 1",
			ExpressionType: protocol.ExpressionSQL92}, nil)
		require.Equal(t, int16(protocol.SystemError), resp.Code, "an SQL92 pull is refused, not served unfiltered")
		require.NoError(t, rc.Close())
	}
}

func ok(t *testing.T, resp *remoting.Command) {
	t.Helper()
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
}

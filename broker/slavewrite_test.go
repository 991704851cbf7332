package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// A slave refuses exactly the writes, each with RocketMQ's code (sends, send-backs,
// replies and Ferry's cancels SERVICE_NOT_AVAILABLE, END_TRANSACTION SLAVE_NOT_AVAILABLE), and hands every
// other request code to its handler; a master refuses none of them as a slave would.
func TestSlaveRefusesExactlyTheWrites(t *testing.T) {
	c := testutil.StartCluster(t)
	s := c.StartSlave(t, nil)
	rc, err := remoting.NewClient(remoting.DefaultClientOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()

	writes := map[protocol.RequestCode]protocol.ResponseCode{
		protocol.SendMessage:          protocol.ServiceNotAvailable,
		protocol.SendMessageV2:        protocol.ServiceNotAvailable,
		protocol.SendBatchMessage:     protocol.ServiceNotAvailable,
		protocol.ConsumerSendMsgBack:  protocol.ServiceNotAvailable,
		protocol.SendReplyMessage:     protocol.ServiceNotAvailable,
		protocol.SendReplyMessageV2:   protocol.ServiceNotAvailable,
		protocol.EndTransaction:       protocol.SlaveNotAvailable,
		protocol.FerryCancelScheduled: protocol.ServiceNotAvailable, // stores a cancel record
	}
	const slaveRemark = "is a SLAVE and serves reads only"
	// An empty request: a refusal does not read it, a handler refuses it as bad input.
	invoke := func(addr string, code int16) *remoting.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := rc.Invoke(ctx, addr, remoting.NewRequest(code, nil))
		require.NoError(t, err, "code %d", code)
		return resp
	}
	codes := s.Broker.RequestCodes()
	for code := range writes {
		require.Contains(t, codes, int16(code), "the slave serves write code %d", code)
	}
	for _, code := range codes {
		resp := invoke(s.Addr, code)
		if want, ok := writes[protocol.RequestCode(code)]; ok {
			require.Equal(t, int16(want), resp.Code, "write code %d on the slave: %s", code, resp.Remark)
			require.Contains(t, resp.Remark, slaveRemark, "write code %d on the slave", code)
			continue
		}
		require.NotContains(t, resp.Remark, slaveRemark, "code %d is not a write", code)
	}
	for code := range writes {
		resp := invoke(c.BrokerAddr, int16(code))
		require.NotContains(t, resp.Remark, slaveRemark, "write code %d on the master", code)
	}
}

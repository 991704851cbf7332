package launch

import (
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
)

// The failover agent gets the controllers' addresses, the heartbeat interval, the
// broker's credentials and TLS to its peers, the broker port and the broker's options.
func TestAgentOptionsFromTheConfiguration(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, ln.Close()) }()
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir, cfg.BrokerName = t.TempDir(), "ctl-b"
	cfg.ControllerMode, cfg.ControllerAddrs = true, []string{"127.0.0.1:9878", "127.0.0.1:9880"}
	cfg.ControllerHeartbeatInterval = 700 * time.Millisecond
	cfg.AccessKey, cfg.SecretKey = "brokerKey1", "brokerSecret1"
	cfg.TLSToNamesrv = true

	o, err := AgentOptions(cfg, ln, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.Equal(t, cfg.ControllerAddrs, o.Controller.Addrs)
	require.Equal(t, 700*time.Millisecond, o.HeartbeatInterval)
	require.NotNil(t, o.Controller.Credentials)
	require.Equal(t, "brokerKey1", o.Controller.Credentials.AccessKey)
	require.NotNil(t, o.Controller.TLS, "the controllers are dialled as the name servers are")
	require.Equal(t, ln, o.Listener)
	require.Equal(t, "ctl-b", o.Broker.BrokerName)
	require.True(t, o.Broker.ControllerMode)
	require.Equal(t, cfg.DataDir, o.Broker.Store.Dir)

	cfg.AccessKey, cfg.SecretKey, cfg.TLSToNamesrv = "", "", false
	o, err = AgentOptions(cfg, ln, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.Nil(t, o.Controller.Credentials, "unsigned without an access key")
	require.Nil(t, o.Controller.TLS)

	cfg.ControllerMode, cfg.ControllerAddrs = false, nil
	_, err = AgentOptions(cfg, ln, mmap.OSFS{}, zerolog.Nop())
	require.ErrorIs(t, err, conf.ErrInvalidConfig, "a fixed-role broker has no agent")
}

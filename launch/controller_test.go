package launch

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/observe"
)

func TestControllerOptions(t *testing.T) {
	cfg := conf.DefaultControllerConfig()
	cfg.NodeID, cfg.Peers = "n1", []string{"n0@10.0.0.1:9877", "n1@10.0.0.2:9877", "n2@10.0.0.3:9877"}
	cfg.Listen, cfg.RaftListen, cfg.DataDir = ":9878", ":9877", "/srv/ctl"
	cfg.BrokerHeartbeatTimeout, cfg.ElectUncleanMaster = 6*time.Second, true
	cfg.ACLEnable, cfg.ACLFile = true, "plain_acl.yml"
	o, err := ControllerOptions(cfg, zerolog.Nop())
	require.NoError(t, err)
	require.Equal(t, "n1", o.Raft.NodeID)
	require.Equal(t, cfg.Peers, o.Raft.Peers)
	require.Equal(t, ":9877", o.Raft.RaftListen)
	require.Equal(t, "/srv/ctl", o.Raft.DataDir)
	require.Equal(t, ":9878", o.Listen)
	require.Equal(t, 6*time.Second, o.BrokerHeartbeatTimeout)
	require.Equal(t, 500*time.Millisecond, o.CheckInterval)
	require.True(t, o.ElectUncleanMaster)
	require.Equal(t, "plain_acl.yml", o.ACLFile)
	require.Nil(t, o.TLS)

	// A short timeout checks more often; ACL off ignores the file.
	cfg.BrokerHeartbeatTimeout, cfg.ACLEnable = 600*time.Millisecond, false
	o, err = ControllerOptions(cfg, zerolog.Nop())
	require.NoError(t, err)
	require.Equal(t, 100*time.Millisecond, o.CheckInterval)
	require.Empty(t, o.ACLFile)

	cfg.TLSMode, cfg.TLSCertFile, cfg.TLSKeyFile = "enforcing", "missing.pem", "missing.key"
	_, err = ControllerOptions(cfg, zerolog.Nop())
	require.ErrorContains(t, err, "launch: controller")
	cfg.NodeID = "n7"
	_, err = ControllerOptions(cfg, zerolog.Nop())
	require.ErrorIs(t, err, conf.ErrInvalidConfig)
}

func TestHTTPListenOfTheController(t *testing.T) {
	cfg := conf.DefaultConfig()
	cfg.Controller.HTTPListen, cfg.Broker.HTTPListen = "127.0.0.1:9879", "127.0.0.1:9880"
	require.Equal(t, "127.0.0.1:9879", HTTPListen(ModeController, &cfg))
	o, err := ObserveOptions(ModeController, &cfg, observe.NewProbes(nil), zerolog.Nop())
	require.NoError(t, err)
	require.Nil(t, o.TLS)
}

package conf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Controller mode: the defaults, the controllers required, the role and id left to the
// controller (refused when set, even to their defaults, with the source named), and the
// SyncStateSet keys refused without it.
func TestControllerModeConfig(t *testing.T) {
	b := DefaultBrokerConfig()
	require.False(t, b.ControllerMode)
	require.Empty(t, b.ControllerAddrs)
	require.Equal(t, time.Second, b.ControllerHeartbeatInterval)
	require.False(t, b.AllAckInSyncStateSet)
	require.Equal(t, 1, b.MinInSyncReplicas)
	require.Equal(t, 15*time.Second, b.HAMaxTimeSlaveNotCatchup)

	const ctl = `
broker:
  controllerMode: true
  controllerAddrs: [10.0.0.1:9878, 10.0.0.2:9878]
  allAckInSyncStateSet: true
  minInSyncReplicas: 2
  haMaxTimeSlaveNotCatchup: 5s
`
	cfg, err := Load(LoadOptions{ConfigFile: writeFile(t, ctl), LookupEnv: envMap(nil)})
	require.NoError(t, err)
	require.True(t, cfg.Broker.ControllerMode)
	require.Equal(t, []string{"10.0.0.1:9878", "10.0.0.2:9878"}, cfg.Broker.ControllerAddrs)
	require.Equal(t, 2, cfg.Broker.MinInSyncReplicas)
	require.Equal(t, 5*time.Second, cfg.Broker.HAMaxTimeSlaveNotCatchup)

	for _, tc := range []struct {
		name, file string
		env        map[string]string
		key, says  string
	}{
		{"brokerId in the file", ctl + "  brokerId: 0\n", nil, "broker.brokerId", "controller assigns it (set by file"},
		{"brokerRole in the file", ctl + "  brokerRole: SYNC_MASTER\n", nil, "broker.brokerRole", "controller assigns it (set by file"},
		{"brokerId in the environment", ctl, map[string]string{"FERRY_BROKER_BROKER_ID": "2"}, "broker.brokerId", "env FERRY_BROKER_BROKER_ID"},
		{"no controllers", "broker:\n  controllerMode: true\n", nil, "broker.controllerAddrs", "must list the controllers"},
		{"a bad controller address", "broker:\n  controllerMode: true\n  controllerAddrs: [nowhere]\n", nil, "broker.controllerAddrs", ""},
		{"a static master", ctl + "  haMasterAddr: 10.0.0.9:10912\n", nil, "broker.haMasterAddr", "controller names the master"},
		{"allAck without controller mode", "broker:\n  allAckInSyncStateSet: true\n", nil, "broker.allAckInSyncStateSet", "needs broker.controllerMode"},
		{"minInSyncReplicas without controller mode", "broker:\n  minInSyncReplicas: 2\n", nil, "broker.minInSyncReplicas", "needs broker.controllerMode"},
	} {
		_, err := Load(LoadOptions{ConfigFile: writeFile(t, tc.file), LookupEnv: envMap(tc.env)})
		require.ErrorIs(t, err, ErrInvalidConfig, tc.name)
		require.ErrorContains(t, err, tc.key, tc.name)
		require.ErrorContains(t, err, tc.says, tc.name)
	}

	// Validate alone (no sources) refuses the values the controller assigns.
	b.ControllerMode, b.ControllerAddrs = true, []string{"10.0.0.1:9878"}
	require.NoError(t, b.Validate())
	b.BrokerID = 1
	require.ErrorContains(t, b.Validate(), "broker.brokerId: must not be set with broker.controllerMode")
	b.BrokerID, b.Role = 0, Slave
	require.ErrorContains(t, b.Validate(), "broker.brokerRole: must not be set with broker.controllerMode")
}

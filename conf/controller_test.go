package conf

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestControllerDefaultsAreOneLocalNode(t *testing.T) {
	c := DefaultControllerConfig()
	require.NoError(t, c.Validate())
	require.Equal(t, "n0", c.NodeID)
	require.Equal(t, []string{"n0@127.0.0.1:9877"}, c.Peers)
	require.Equal(t, "127.0.0.1:9877", c.RaftListen)
	require.Equal(t, "127.0.0.1:9878", c.Listen)
	require.Equal(t, 3*time.Second, c.BrokerHeartbeatTimeout)
	require.False(t, c.ElectUncleanMaster)
	require.Empty(t, c.HTTPListen)
}

func TestControllerSample(t *testing.T) {
	c := loadSample(t, "controller.yaml").Controller
	require.Len(t, c.Peers, 3)
	require.Equal(t, "n0", c.NodeID)
	require.Equal(t, "10.0.0.11:9879", c.HTTPListen)
	// The sample shows every controller key.
	data, err := os.ReadFile("controller.yaml")
	require.NoError(t, err)
	var m struct {
		Controller map[string]any `yaml:"controller"`
	}
	require.NoError(t, yaml.Unmarshal(data, &m))
	for _, k := range Keys() {
		if name, ok := strings.CutPrefix(k, "controller."); ok {
			require.Contains(t, m.Controller, name, "controller.yaml lacks %s", k)
		}
	}
}

// Bad controller settings are refused naming the key.
func TestControllerValidate(t *testing.T) {
	for key, edit := range map[string]func(*ControllerConfig){
		"controller.nodeId":                 func(c *ControllerConfig) { c.NodeID = "n 1" },
		"controller.nodeId ":                func(c *ControllerConfig) { c.NodeID = "n9" },
		"controller.listen":                 func(c *ControllerConfig) { c.Listen = "nope" },
		"controller.raftListen":             func(c *ControllerConfig) { c.RaftListen = "" },
		"controller.peers":                  func(c *ControllerConfig) { c.Peers = nil },
		"controller.peers ":                 func(c *ControllerConfig) { c.Peers = []string{"127.0.0.1:9877"} },
		"controller.peers  ":                func(c *ControllerConfig) { c.Peers = []string{"n0@0.0.0.0:9877"} },
		"controller.peers   ":               func(c *ControllerConfig) { c.Peers = []string{"n0@127.0.0.1:9877", "n0@127.0.0.1:9876"} },
		"controller.dataDir":                func(c *ControllerConfig) { c.DataDir = "" },
		"controller.brokerHeartbeatTimeout": func(c *ControllerConfig) { c.BrokerHeartbeatTimeout = 0 },
		"controller.httpListen":             func(c *ControllerConfig) { c.HTTPListen = "x" },
		"controller.aclFile":                func(c *ControllerConfig) { c.ACLEnable = true },
		"controller.tlsMode":                func(c *ControllerConfig) { c.TLSMode = "on" },
		"controller.tlsCertFile":            func(c *ControllerConfig) { c.TLSMode = "enforcing" },
	} {
		c := DefaultControllerConfig()
		edit(&c)
		err := c.Validate()
		require.ErrorIs(t, err, ErrInvalidConfig, key)
		require.ErrorContains(t, err, key[:len(key)-countTrailingSpaces(key)], key)
		full := DefaultConfig()
		full.Controller = c
		require.ErrorIs(t, full.Validate(), ErrInvalidConfig, key)
	}
}

// countTrailingSpaces lets one key name several cases of the map above.
func countTrailingSpaces(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == ' ' {
		n++
	}
	return n
}

// --http-listen sets controller.httpListen for ferry controller.
func TestHTTPListenFlagOfTheController(t *testing.T) {
	keys := map[string]string{}
	for _, b := range flagBindings(ServerController) {
		keys[b.name] = b.key
	}
	require.Equal(t, "controller.httpListen", keys[FlagHTTPListen])
}

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

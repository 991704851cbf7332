package conf

import (
	"strings"
	"time"
)

// ControllerConfig is the "controller" section: one node of the Raft cluster of
// controllers that elects each broker group's master (`ferry controller`, RocketMQ 5's
// controller mode). Three nodes, each with the same peers, tolerate one failure. The
// defaults are a single node on 127.0.0.1.
//
// Every field's comment gives its default, its key and its environment variable (see
// EnvVarName).
type ControllerConfig struct {
	// NodeID is this node's id in the Raft cluster; it must be one of Peers. Default
	// "n0". Key controller.nodeId, env FERRY_CONTROLLER_NODE_ID.
	NodeID string `mapstructure:"nodeId" default:"n0" check:"name" option:"Raft.NodeID" meaning:"this controller's id, one of controller.peers"`
	// Listen is the remoting address brokers and ferryctl reach the controller on
	// (host:port; empty host = every interface). Default "127.0.0.1:9878". Key
	// controller.listen, env FERRY_CONTROLLER_LISTEN.
	Listen string `mapstructure:"listen" default:"127.0.0.1:9878" check:"listen" option:"Listen" meaning:"address brokers and ferryctl reach the controller on"`
	// RaftListen is the address the Raft transport listens on; other nodes reach it at
	// this node's address in Peers. Default "127.0.0.1:9877". Key controller.raftListen,
	// env FERRY_CONTROLLER_RAFT_LISTEN.
	RaftListen string `mapstructure:"raftListen" default:"127.0.0.1:9877" check:"listen" option:"Raft.RaftListen" meaning:"address the Raft transport listens on"`
	// Peers lists every node of the cluster, this one included, as nodeId@host:raftPort
	// (the same list on every node). Default ["n0@127.0.0.1:9877"]. Key
	// controller.peers, env FERRY_CONTROLLER_PEERS.
	Peers []string `mapstructure:"peers" default:"n0@127.0.0.1:9877" option:"Raft.Peers" meaning:"every controller node as nodeId@host:raftPort, this one included"`
	// DataDir holds the Raft log (raft.db) and snapshots. Default "./data/controller".
	// Key controller.dataDir, env FERRY_CONTROLLER_DATA_DIR.
	DataDir string `mapstructure:"dataDir" default:"./data/controller" check:"notEmpty" option:"Raft.DataDir" meaning:"Raft log and snapshots of this controller node"`
	// BrokerHeartbeatTimeout is how long a broker stays alive after its last
	// heartbeat; a master silent that long is replaced. Default 3s. Key
	// controller.brokerHeartbeatTimeout, env FERRY_CONTROLLER_BROKER_HEARTBEAT_TIMEOUT.
	BrokerHeartbeatTimeout time.Duration `mapstructure:"brokerHeartbeatTimeout" default:"3s" check:"positive" option:"BrokerHeartbeatTimeout" meaning:"a master without a heartbeat for this long is replaced"`
	// ElectUncleanMaster lets an election pick a broker outside the SyncStateSet when
	// no member of the set is alive: service returns, acknowledged messages may be
	// lost. Default false. Key controller.electUncleanMaster, env
	// FERRY_CONTROLLER_ELECT_UNCLEAN_MASTER.
	ElectUncleanMaster bool `mapstructure:"electUncleanMaster" default:"false" option:"ElectUncleanMaster" meaning:"elect outside the SyncStateSet when none of it is alive (may lose acknowledged messages)"`
	// HTTPListen is the address of `ferry controller`'s HTTP listener (/healthz,
	// /readyz, /metrics), TLS as controller.tlsMode. Empty turns it off. Default ""
	// (off). Key controller.httpListen, env FERRY_CONTROLLER_HTTP_LISTEN, flag
	// --http-listen (with ferry controller).
	HTTPListen string `mapstructure:"httpListen" default:"" check:"listenOrOff" process:"command" meaning:"HTTP address of /healthz, /readyz, /metrics (TLS as tlsMode); empty = off"`

	// ACLEnable checks every request against the accounts in ACLFile: every request
	// then needs an admin account's signature. Default false. Key
	// controller.aclEnable, env FERRY_CONTROLLER_ACL_ENABLE.
	ACLEnable bool `mapstructure:"aclEnable" default:"false" option:"ACL" meaning:"every request needs an admin account of the ACL accounts file"`
	// ACLFile is the accounts file (the brokers' format), re-read when it changes.
	// Required with ACLEnable. Default "". Key controller.aclFile, env
	// FERRY_CONTROLLER_ACL_FILE.
	ACLFile string `mapstructure:"aclFile" default:"" option:"ACLFile" meaning:"ACL accounts file (plain_acl.yml shape), re-read when it changes"`

	// TLSMode is what the controller's port accepts: "disabled", "permissive" (TLS
	// and plain) or "enforcing" (TLS only). Default "disabled". Key
	// controller.tlsMode, env FERRY_CONTROLLER_TLS_MODE.
	TLSMode string `mapstructure:"tlsMode" default:"disabled" option:"TLS.Mode" meaning:"TLS on the controller port: disabled, permissive (TLS and plain) or enforcing (TLS only)"`
	// TLSCertFile is the PEM certificate chain presented. Required unless tlsMode is
	// disabled. Default "". Key controller.tlsCertFile, env
	// FERRY_CONTROLLER_TLS_CERT_FILE.
	TLSCertFile string `mapstructure:"tlsCertFile" default:"" option:"TLS.Config" meaning:"PEM certificate chain the controller presents"`
	// TLSKeyFile is the PEM private key of TLSCertFile. Default "". Key
	// controller.tlsKeyFile, env FERRY_CONTROLLER_TLS_KEY_FILE.
	TLSKeyFile string `mapstructure:"tlsKeyFile" default:"" option:"TLS.Config" meaning:"PEM private key of controller.tlsCertFile"`
	// TLSClientCAFile lists the PEM certificate authorities client certificates are
	// verified against. Default "". Key controller.tlsClientCaFile, env
	// FERRY_CONTROLLER_TLS_CLIENT_CA_FILE.
	TLSClientCAFile string `mapstructure:"tlsClientCaFile" default:"" option:"TLS.Config" meaning:"PEM CAs client certificates are verified against (empty: not checked)"`
	// TLSRequireClientCert refuses TLS clients without a certificate signed by
	// TLSClientCAFile. Default false. Key controller.tlsRequireClientCert, env
	// FERRY_CONTROLLER_TLS_REQUIRE_CLIENT_CERT.
	TLSRequireClientCert bool `mapstructure:"tlsRequireClientCert" default:"false" option:"TLS.Config" meaning:"refuse TLS clients without a certificate from controller.tlsClientCaFile"`
}

// DefaultControllerConfig returns the defaults of the controller (the default tags of
// ControllerConfig): a single node on 127.0.0.1.
func DefaultControllerConfig() ControllerConfig {
	return defaultsOf[ControllerConfig]()
}

// Validate checks every field (the check tags of the key table, then the peers and the
// rules between fields). The returned error names the offending key
// ("controller.<field>") and wraps ErrInvalidConfig.
func (c ControllerConfig) Validate() error {
	if err := checkKeys(c, "controller."); err != nil {
		return err
	}
	if len(c.Peers) == 0 {
		return invalid("controller.peers", "must list every controller node as nodeId@host:raftPort")
	}
	ids, addrs := map[string]bool{}, map[string]bool{}
	for _, p := range c.Peers {
		id, addr, ok := strings.Cut(p, "@")
		if !ok {
			return invalid("controller.peers", "%q is not nodeId@host:raftPort", p)
		}
		if err := checkName("controller.peers", id); err != nil {
			return err
		}
		if err := checkDialAddr("controller.peers", addr); err != nil {
			return err
		}
		if ids[id] || addrs[addr] {
			return invalid("controller.peers", "%q repeats a node id or address", p)
		}
		ids[id], addrs[addr] = true, true
	}
	if !ids[c.NodeID] {
		return invalid("controller.nodeId", "%q is not among controller.peers %v", c.NodeID, c.Peers)
	}
	if c.ACLEnable && c.ACLFile == "" {
		return invalid("controller.aclFile", "must name the accounts file when controller.aclEnable is true")
	}
	return checkTLS("controller", c.TLSMode, c.TLSCertFile, c.TLSKeyFile, c.TLSClientCAFile, c.TLSRequireClientCert)
}

// Package controller is Ferry's controller for automatic failover (RocketMQ 5's
// controller mode): the replicated state of each broker group — its members (broker id →
// remoting and HA addresses), master, master epoch and SyncStateSet — kept by a
// deterministic state machine (Machine) that an existing Raft library (hashicorp/raft,
// see Node) applies on every controller node.
//
// Commands are Raft log entries: register a broker (assigning its id), elect a master,
// alter the SyncStateSet. A broker's liveness is not replicated: the Raft leader keeps it
// locally (its heartbeats) and proposes an election, carrying the alive brokers and their
// reported epochs and log offsets, when a master's heartbeat lapses for
// BrokerHeartbeatTimeout or a group without a master has a member alive. A node that
// becomes leader waits one BrokerHeartbeatTimeout before it declares any broker dead.
//
// Server serves the controller's remoting requests (wire.go: register, heartbeat, alter
// SyncStateSet, elect, replica info, metadata) on `ferry controller`'s port; followers
// answer reads and refuse writes with CONTROLLER_NOT_LEADER naming the leader. Client is
// what brokers and ferryctl use: it follows the leader and retries other nodes.
package controller

// Package controller is Ferry's controller for automatic failover (RocketMQ 5's
// controller mode): the replicated state of each broker group — its members (broker id →
// address), master, master epoch and SyncStateSet — kept by a deterministic state machine
// (Machine) that an existing Raft library (hashicorp/raft, see Node) applies on every
// controller node.
//
// Commands are Raft log entries: register a broker (assigning its id), elect a master,
// alter the SyncStateSet. A broker's liveness is not replicated: the Raft leader keeps it
// locally and proposes an election, carrying the alive brokers and their reported log
// offsets, when a master's heartbeat lapses. The package is not yet wired into the
// brokers or the ferry command.
package controller

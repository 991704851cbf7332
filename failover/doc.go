// Package failover is a broker's agent in controller mode (automatic failover, RocketMQ
// 5's controller mode reimplemented): it stands between the controllers (package
// controller), which decide each broker group's master, and the broker (package broker),
// which knows nothing of them.
//
// An Agent registers the broker with the controllers, keeping the id they assign in the
// store directory (identity.go), heartbeats every HeartbeatInterval with the broker's
// epoch and commit-log end, and serves the role each answer assigns, always as a new
// broker.Broker on the same data directory and port:
//
//   - master: before it serves anything, a new master epoch is appended to the epoch file
//     (package ha), starting at the log's end; the broker gets a SyncStateSetKeeper that
//     changes the set through the controllers (keeper.go);
//   - slave: the agent asks the master for its epoch history (GET_BROKER_EPOCH_CACHE),
//     cuts the local log back to where the two histories agree (ha.ConsistentPoint,
//     store.Truncate) when it is longer, adopts the master's history, and starts the broker
//     replicating from the master's HA address.
//
// The timeline of a failover: the master dies; after the controllers' broker heartbeat
// timeout the Raft leader elects the member of the SyncStateSet with the longest log and
// bumps the master epoch; at its next heartbeat the elected broker's agent stops its slave
// broker and starts a master (tens of milliseconds), which registers with the name servers
// under the new epoch; the other slaves' agents follow at their next heartbeat. A master
// that learns of another master or a newer epoch stops serving before anything else
// (fenced); while the controllers cannot be reached every broker keeps its role.
// docs/operations.md ("The broker's agent") has the measured numbers and what an operator
// sees.
package failover

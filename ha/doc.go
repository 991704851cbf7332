// Package ha is master–slave commit-log replication with RocketMQ 4.x's HA protocol
// (spec: storage-and-broker.md §7).
//
// A Master accepts slave connections on a listener the caller gives it (the broker's
// HA port, listenPort+1). Each slave reports its replica end (the offset after the last
// byte it holds); the first report is where the master starts streaming, every later
// one is an acknowledgement. The master streams its commit log from there in frames of
// raw log bytes that are not aligned to records, sends an empty frame as a heartbeat
// when it has had nothing to send for a while, and keeps the highest offset any slave
// acknowledged (WaitAck, SlaveAckOffset, Lag) for SYNC_MASTER.
//
// A Slave connects to its master (reconnecting with backoff), reports its offset at
// connect, after every append and periodically, and appends each frame with
// commitlog.Log.AppendReplica, so its log is a byte-identical prefix of the master's and
// its store's dispatcher builds consume queues and index from the replicated records.
//
// Ferry adds, off by default and compatible with RocketMQ peers when off: TLS on the
// master's listener (MasterOptions.TLS, the broker's tlsMode; SlaveOptions.TLS) and a
// slave's proof of an account (SlaveOptions.Credentials, checked by
// MasterOptions.Auth, the broker's ACL) in a hello before its first report; a master
// that requires it sends nothing to a connection without a valid one. A master answers
// WaitAck with ErrNoSlave as soon as its last slave disconnects.
//
// Controller mode (Ferry's, for automatic failover): a slave identifies itself with its
// broker id and master epoch in an identity hello (SlaveOptions.BrokerID/Epoch); a master
// serving an epoch (MasterOptions.Epoch) admits only slaves of that epoch, reports a
// slave of a higher one (OnStaleEpoch: the master is stale), and keeps each slave's
// acknowledgement and last catch-up time by broker id (Peers, AckedBy), which the broker
// uses to keep the SyncStateSet and to wait for all of its members.
//
// Files: frame.go (wire format, hellos included), auth.go (TLS and hello handshake),
// options.go, master.go (listener and per-slave connections), peers.go (identified
// slaves), slave.go, group.go (goroutine tracking), epoch.go (the epoch file and
// ConsistentPoint, for controller mode).
//
// Goroutines: Master owns one accept loop and, per slave connection, a reader (offset
// reports) and a writer (frames); Slave owns one connection loop and, per connection, a
// reporter. Close stops and waits for all of them.
package ha

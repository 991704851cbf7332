// Package sign computes and verifies the proofs of RocketMQ's ACL 1.0 accounts: the
// Signature ext field of a remoting request (HMAC-SHA1, [Sign], [Credentials.SignFields],
// [Verifier]) and the MAC a slave sends in its replication hello (HMAC-SHA256,
// [ReplicationMAC]).
//
// It is the part of ACL a client needs. Package acl (the rule files, their watcher and
// the decisions) builds on it; clients, the broker's outgoing requests and package ha
// import this package alone.
package sign

package sign

// Replication (the HA port, package ha) is not a remoting request, so it carries no
// Signature field. A slave proves an account in the first bytes of its connection
// instead (the layout is in ha/auth.go): a message of its own and a MAC over it,
// HMAC-SHA256 keyed with the account's secret key. acl.ACL.CheckReplication decides who
// may replicate.

import (
	"crypto/hmac"
	"crypto/sha256"
)

// ReplicationMACSize is the size of a replication MAC (HMAC-SHA256).
const ReplicationMACSize = sha256.Size

// ReplicationMAC is the MAC a slave sends over msg: HMAC-SHA256 keyed with the UTF-8
// bytes of secretKey.
func ReplicationMAC(secretKey string, msg []byte) []byte {
	m := hmac.New(sha256.New, []byte(secretKey))
	m.Write(msg)
	return m.Sum(nil)
}

// ReplicationMACMatches reports, in constant time, whether mac is [ReplicationMAC] of msg
// under secretKey.
func ReplicationMACMatches(secretKey string, msg, mac []byte) bool {
	return hmac.Equal(ReplicationMAC(secretKey, msg), mac)
}

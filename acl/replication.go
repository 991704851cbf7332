package acl

// Replication (the HA port, package ha) is not a remoting request, so [ACL.Check] does
// not see it. A slave proves an account in the first bytes of its connection instead
// (the layout is in ha/auth.go): a message of its own and a MAC over it,
// HMAC-SHA256 keyed with the account's secret key (sign.ReplicationMAC). The master
// checks the proof with [ACL.CheckReplication].
//
// Who may replicate: admin accounts, and only with a valid MAC. A slave reads every
// message of every topic, so replication is an admin's right, like the admin-only
// request codes; brokers already hold an admin account for their name-server
// registration (broker.accessKey/secretKey), so the slave proves that one. Neither the
// global white list nor an account's whiteRemoteAddress lets a connection replicate
// without a MAC: an address proves nothing about who holds the stream.

import (
	"fmt"
	"net/netip"

	"github.com/ferrymq/ferry/acl/sign"
)

// CheckReplication decides whether a slave at addr that sent msg with mac under
// accessKey may replicate: nil when accessKey is an admin account and mac is
// sign.ReplicationMAC of msg under its secret key (compared in constant time). Refusals
// wrap [ErrNoPermission] and one of [ErrUnknownAccessKey], [ErrBadSignature] or
// [ErrAdminOnly]; their texts name no secret.
func (a *ACL) CheckReplication(addr netip.Addr, accessKey string, msg, mac []byte) error {
	acct := a.accounts[accessKey]
	if acct == nil {
		return fmt.Errorf("%w %s (replication from %s)", ErrUnknownAccessKey, quote(accessKey), addrText(addr.Unmap()))
	}
	if !sign.ReplicationMACMatches(string(acct.secret), msg, mac) {
		return fmt.Errorf("%w: replication MAC mismatch for access key %s from %s", ErrBadSignature, quote(accessKey),
			addrText(addr.Unmap()))
	}
	if !acct.admin {
		return fmt.Errorf("%w: replication needs an admin account, access key %s is not one", ErrAdminOnly, quote(accessKey))
	}
	return nil
}

// CheckReplication is [ACL.CheckReplication] with the rules in force.
func (w *Watcher) CheckReplication(addr netip.Addr, accessKey string, msg, mac []byte) error {
	return w.cur.Load().CheckReplication(addr, accessKey, msg, mac)
}

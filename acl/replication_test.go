package acl

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl/sign"
)

// Replication needs an admin account and its MAC; the global white list and an account's
// white-listed address are no substitute.
func TestCheckReplication(t *testing.T) {
	a, err := Parse([]byte(`
globalWhiteRemoteAddresses: [10.0.0.*]
accounts:
  - accessKey: ferryAdmin
    secretKey: admin-secret
    admin: true
  - accessKey: appUser1
    secretKey: app-secret
    whiteRemoteAddress: 10.0.0.*
    defaultTopicPerm: PUB|SUB
`))
	require.NoError(t, err)
	addr := netip.MustParseAddr("10.0.0.7")
	msg := []byte("hello from a slave")
	require.NoError(t, a.CheckReplication(addr, "ferryAdmin", msg, sign.ReplicationMAC("admin-secret", msg)))
	require.Len(t, sign.ReplicationMAC("admin-secret", msg), sign.ReplicationMACSize)

	err = a.CheckReplication(addr, "ferryAdmin", msg, sign.ReplicationMAC("wrong-secret", msg))
	require.ErrorIs(t, err, ErrBadSignature)
	require.NotContains(t, err.Error(), "admin-secret")
	require.ErrorIs(t, a.CheckReplication(addr, "ferryAdmin", []byte("another message"), sign.ReplicationMAC("admin-secret", msg)),
		ErrBadSignature)
	require.ErrorIs(t, a.CheckReplication(addr, "ferryAdmin", msg, nil), ErrBadSignature)
	require.ErrorIs(t, a.CheckReplication(addr, "nobody00", msg, sign.ReplicationMAC("admin-secret", msg)), ErrUnknownAccessKey)
	require.ErrorIs(t, a.CheckReplication(addr, "", msg, nil), ErrUnknownAccessKey)
	err = a.CheckReplication(addr, "appUser1", msg, sign.ReplicationMAC("app-secret", msg))
	require.ErrorIs(t, err, ErrAdminOnly, "a valid non-admin account")
	require.ErrorIs(t, err, ErrNoPermission)
}

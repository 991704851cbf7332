package broker

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/store"
)

func TestQueueLocks(t *testing.T) {
	l := newQueueLocks()
	now := time.Unix(1000, 0)
	q0 := protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	q1 := protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	require.Equal(t, []protocol.MessageQueue{q0, q1}, l.lock("g", "c1", []protocol.MessageQueue{q0, q1}, now))
	require.Empty(t, l.lock("g", "c2", []protocol.MessageQueue{q0}, now.Add(time.Second)), "held by a live client")
	require.Equal(t, []protocol.MessageQueue{q0}, l.lock("g", "c1", []protocol.MessageQueue{q0}, now.Add(30*time.Second)), "renewed by its holder")
	require.Equal(t, []protocol.MessageQueue{q1}, l.lock("g", "c2", []protocol.MessageQueue{q1}, now.Add(lockExpiry+time.Second)), "expired lock taken over")
	require.Equal(t, []protocol.MessageQueue{q0}, l.lock("other", "c2", []protocol.MessageQueue{q0}, now), "groups are independent")
	l.unlock("g", "c2", []protocol.MessageQueue{q0}) // not the holder: no effect
	require.Empty(t, l.lock("g", "c2", []protocol.MessageQueue{q0}, now.Add(31*time.Second)))
	l.unlock("g", "c1", []protocol.MessageQueue{q0})
	require.Equal(t, []protocol.MessageQueue{q0}, l.lock("g", "c2", []protocol.MessageQueue{q0}, now.Add(32*time.Second)))
}

func TestTagFilters(t *testing.T) {
	require.Nil(t, parseTagExpression("*"))
	require.Nil(t, parseTagExpression(" "))
	f := parseTagExpression("TagA || 标签 ||  ")
	require.True(t, f.matchCode(message.TagsHash("TagA")))
	require.True(t, f.matchCode(message.TagsHash("标签")), "non-ASCII tags hash the Java way")
	require.False(t, f.matchCode(message.TagsHash("TagB")))
	require.Nil(t, tagFilterFrom("*", []string{"x"}))
	require.NotNil(t, tagFilterFrom("a", []string{"a"}))
}

func TestPullCodes(t *testing.T) {
	r := &store.GetResult{NextBeginOffset: 7, MinOffset: 2, MaxOffset: 9}
	for _, tc := range []struct {
		st     store.GetStatus
		offset int64
		code   protocol.ResponseCode
		next   int64
	}{
		{store.Found, 3, protocol.Success, 7},
		{store.NoMatchedMessage, 3, protocol.PullRetryImmediately, 7},
		{store.NoMessageInQueue, 0, protocol.PullNotFound, 0},
		{store.NoMessageInQueue, 5, protocol.PullOffsetMoved, 0},
		{store.OffsetOverflowOne, 9, protocol.PullNotFound, 9},
		{store.OffsetOverflowBadly, 12, protocol.PullOffsetMoved, 7},
		{store.OffsetTooSmall, 0, protocol.PullOffsetMoved, 7},
	} {
		code, next := pullCode(tc.st, tc.offset, r)
		require.Equal(t, tc.code, code, "%v", tc.st)
		require.Equal(t, tc.next, next, "%v", tc.st)
	}
}

// The HA listener binds HAListen, else HAAddr, else the advertised port + 1; the
// registered address is the bound one, with the advertised host for 0.0.0.0.
func TestHAAddresses(t *testing.T) {
	o := DefaultOptions()
	o.AdvertisedAddr = "10.0.0.5:10911"
	got, err := haListenAddr(&o)
	require.NoError(t, err)
	require.Equal(t, "10.0.0.5:10912", got)
	o.HAListen = "0.0.0.0:0"
	got, err = haListenAddr(&o)
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0:0", got)
	o.AdvertisedAddr = "10.0.0.5:65535"
	o.HAListen = ""
	_, err = haListenAddr(&o)
	require.Error(t, err)

	o.AdvertisedAddr = "10.0.0.5:10911"
	require.Equal(t, "10.0.0.5:20912", haRegisterAddr(&o, &net.TCPAddr{IP: net.IPv4zero, Port: 20912}))
	require.Equal(t, "127.0.0.1:20912", haRegisterAddr(&o, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 20912}))
	o.HAAddr = "ha.example:10912"
	require.Equal(t, "ha.example:10912", haRegisterAddr(&o, &net.TCPAddr{IP: net.IPv4zero, Port: 20912}))

	for _, tc := range []struct {
		role Role
		id   int64
		ok   bool
	}{{RoleAsyncMaster, 0, true}, {RoleSyncMaster, 0, true}, {RoleSlave, 1, true}, {RoleSlave, 0, false}, {RoleAsyncMaster, 1, false}, {Role(9), 0, false}} {
		o := DefaultOptions()
		o.Role, o.BrokerID = tc.role, tc.id
		if tc.ok {
			require.NoError(t, o.Validate(), "%s %d", tc.role, tc.id)
		} else {
			require.ErrorIs(t, o.Validate(), ErrInvalidOptions, "%s %d", tc.role, tc.id)
		}
	}
}

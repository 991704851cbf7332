package nameserver

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Three brokers of broker-a in controller mode: A, the master of epoch 1, and the
// slaves B (id 2) and C (id 3).
const (
	addrA = "10.0.0.1:10911"
	addrB = "10.0.0.2:10911"
	addrC = "10.0.0.3:10911"
)

// epochHeader is a registration of broker-a at addr under id, in controller mode at epoch.
func epochHeader(addr string, id int64, epoch int32) *protocol.RegisterBrokerRequestHeader {
	h := regHeader("c1", "broker-a", addr, id)
	h.MasterEpoch = epoch
	return h
}

// from is the connection ch from addr's host.
func from(ch uint64, addr string) Registrant {
	return Registrant{ChannelID: ch, IP: netip.MustParseAddrPort(addr).Addr()}
}

// epochTable registers A, B and C at epoch 1 on connections 1, 2 and 3.
func epochTable(t *testing.T) (*RouteTable, map[uint64]bool) {
	t.Helper()
	open := map[uint64]bool{1: true, 2: true, 3: true}
	rt := newTable(t, func(o *RouteTableOptions) { o.ChannelOpen = func(id uint64) bool { return open[id] } })
	for i, r := range []struct {
		addr string
		id   int64
	}{{addrA, 0}, {addrB, 2}, {addrC, 3}} {
		res, err := rt.RegisterBroker(epochHeader(r.addr, r.id, 1), regBody(1, topicConfig("T", 4, 6)), from(uint64(i+1), r.addr), t0)
		require.NoError(t, err)
		require.EqualValues(t, 1, res.MasterEpoch)
	}
	requireRoute(t, rt, map[int64]string{0: addrA, 2: addrB, 3: addrC}, 4)
	return rt, open
}

// An election: B registers as the master of epoch 2 while A still holds id 0. B takes
// over id 0 at once and frees A's address; A, stale, is refused (trusted or not) and
// told the newer epoch; A comes back as a slave under its own id from the same address;
// C, still at epoch 1, learns epoch 2 from its answer.
func TestHigherEpochTakesOverTheMasterBinding(t *testing.T) {
	rt, open := epochTable(t)
	now := t0.Add(time.Second)

	// Without a newer epoch nothing moves: C claiming id 0 at the same epoch, or B
	// without an epoch.
	_, err := rt.RegisterBroker(epochHeader(addrC, 0, 1), regBody(1), from(3, addrC), now)
	require.ErrorIs(t, err, ErrTakeover)
	_, err = rt.RegisterBroker(epochHeader(addrB, 0, 0), regBody(1), from(2, addrB), now)
	require.ErrorIs(t, err, ErrTakeover)

	open[4] = true // B restarted in-process as the master: a new connection
	res, err := rt.RegisterBroker(epochHeader(addrB, 0, 2), regBody(2, topicConfig("T", 8, 6)), from(4, addrB), now)
	require.NoError(t, err)
	require.True(t, res.EpochTakeover)
	require.Equal(t, addrA, res.Displaced)
	require.True(t, res.TopicsUpdated)
	require.EqualValues(t, 2, res.MasterEpoch)
	requireRoute(t, rt, map[int64]string{0: addrB, 3: addrC}, 8)

	for _, trusted := range []bool{false, true} {
		r := from(1, addrA)
		r.Trusted = trusted
		res, err = rt.RegisterBroker(epochHeader(addrA, 0, 1), regBody(1, topicConfig("T", 2, 6)), r, now)
		require.ErrorIs(t, err, ErrStaleEpoch, "trusted %v", trusted)
		require.EqualValues(t, 2, res.MasterEpoch, "the refusal names the newer epoch")
	}
	require.Empty(t, rt.RemoveByChannel(1), "the old master's connection holds nothing any more")
	requireRoute(t, rt, map[int64]string{0: addrB, 3: addrC}, 8)

	open[5] = true
	res, err = rt.RegisterBroker(epochHeader(addrA, 1, 2), regBody(1), from(5, addrA), now)
	require.NoError(t, err)
	require.Equal(t, addrB, res.MasterAddr)
	require.Equal(t, "ha-"+addrB, res.HAServerAddr)
	require.EqualValues(t, 2, res.MasterEpoch)
	requireRoute(t, rt, map[int64]string{0: addrB, 1: addrA, 3: addrC}, 8)

	res, err = rt.RegisterBroker(epochHeader(addrC, 3, 1), regBody(1), from(3, addrC), now)
	require.NoError(t, err, "C's own binding, still of epoch 1")
	require.EqualValues(t, 2, res.MasterEpoch, "C learns the new epoch")

	// A slave of epoch 2 cannot go back to epoch 1 on its binding.
	_, err = rt.RegisterBroker(epochHeader(addrA, 1, 1), regBody(1), from(5, addrA), now)
	require.ErrorIs(t, err, ErrStaleEpoch)
}

// The other order: the old master's connection closed (its binding reserved) and it
// comes back as a slave before the new master registers; then the new master takes id
// 0 from its own slave binding.
func TestOldMasterReturnsAsSlaveBeforeTheNewMasterRegisters(t *testing.T) {
	rt, open := epochTable(t)
	open[1] = false
	require.Equal(t, []string{addrA}, rt.RemoveByChannel(1))
	requireRoute(t, rt, map[int64]string{2: addrB, 3: addrC}, 4) // the slaves keep the queue data
	now := t0.Add(time.Second)

	open[5] = true
	res, err := rt.RegisterBroker(epochHeader(addrA, 1, 2), regBody(1), from(5, addrA), now)
	require.NoError(t, err)
	require.True(t, res.EpochTakeover, "its own reserved master binding, of epoch 1")
	require.Empty(t, res.MasterAddr, "no master yet")
	open[4] = true
	res, err = rt.RegisterBroker(epochHeader(addrB, 0, 2), regBody(2, topicConfig("T", 8, 6)), from(4, addrB), now)
	require.NoError(t, err)
	require.True(t, res.EpochTakeover)
	requireRoute(t, rt, map[int64]string{0: addrB, 1: addrA, 3: addrC}, 8)
}

// A fixed-role binding (no epoch) is never taken over by an epoch, however high.
func TestEpochNeverTakesOverAFixedRoleBinding(t *testing.T) {
	rt, _ := bindingTable(t) // broker-a's fixed-role master at 10.0.0.5:10911
	h := epochHeader("10.6.6.6:10911", 0, 99)
	_, err := rt.RegisterBroker(h, regBody(1, topicConfig("T", 8, 6)), Registrant{ChannelID: 7, IP: impostorIP}, t0)
	require.ErrorIs(t, err, ErrTakeover)
	requireRoute(t, rt, map[int64]string{0: "10.0.0.5:10911"}, 4)
}

// Over the wire: a stale registration is answered SYSTEM_ERROR with the newer epoch in
// ferryMasterEpoch, and a slave's answer carries its master's epoch.
func TestServerAnswersTheMasterEpoch(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, remoting.SerializeJSON)
	resp := invoke(t, c, s.Addr(), registerRequest(t, epochHeader("127.0.0.1:10911", 0, 3), regBody(1, topicConfig("T", 4, 6))))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	resp = invoke(t, c, s.Addr(), registerRequest(t, epochHeader("127.0.0.1:10921", 1, 3), regBody(1)))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	var rh protocol.RegisterBrokerResponseHeader
	require.NoError(t, rh.DecodeExt(resp.ExtFields))
	require.EqualValues(t, 3, rh.MasterEpoch)
	require.Equal(t, "127.0.0.1:10911", rh.MasterAddr)

	resp = invoke(t, c, s.Addr(), registerRequest(t, epochHeader("127.0.0.1:10931", 0, 2), regBody(1)))
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Contains(t, resp.Remark, "stale master epoch")
	require.NoError(t, rh.DecodeExt(resp.ExtFields))
	require.EqualValues(t, 3, rh.MasterEpoch)
}

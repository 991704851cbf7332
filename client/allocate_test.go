package client

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

func testQueues(n int) []MessageQueue {
	out := make([]MessageQueue, n)
	for i := range out {
		out[i] = MessageQueue{Topic: "T", BrokerName: fmt.Sprintf("broker-%c", 'a'+i%3), QueueID: int32(i / 3)}
	}
	slices.SortFunc(out, compareQueues)
	return out
}

func testMembers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.0.%d@%d", i+1, 4000+i)
	}
	slices.Sort(out)
	return out
}

// owners maps each queue to the member that allocate gives it to, failing if a queue
// goes to none or to two.
func owners(t *testing.T, allocate AllocateFunc, queues []MessageQueue, members []string) map[MessageQueue]string {
	t.Helper()
	out := map[MessageQueue]string{}
	for _, m := range members {
		mine := allocate(queues, members, m)
		require.True(t, slices.IsSortedFunc(mine, compareQueues), "%s's share keeps the queue order", m)
		for _, mq := range mine {
			require.Empty(t, out[mq], "%s given to %s and %s", mq, out[mq], m)
			out[mq] = m
		}
	}
	require.Len(t, out, len(queues), "every queue allocated")
	return out
}

// moved counts the queues whose owner differs, and checks that each went to want when
// want is set.
func moved(t *testing.T, before, after map[MessageQueue]string, want string) int {
	t.Helper()
	n := 0
	for mq, o := range before {
		if after[mq] != o {
			n++
			if want != "" {
				require.Equal(t, want, after[mq], "%s moved from %s to another old member", mq, o)
			}
		}
	}
	return n
}

// TestAllocateConsistentHash: each queue goes to exactly one member; a member joining
// takes about 1/n of the queues and every queue that moves moves to it; a member leaving
// moves only its own queues; non-members get nothing. The average strategy moves far
// more in the same change.
func TestAllocateConsistentHash(t *testing.T) {
	queues := testQueues(600)
	for _, vnodes := range []int{0, 10, 100} {
		ch := AllocateConsistentHash(vnodes)
		for k := 1; k <= 6; k++ {
			members := testMembers(k + 1)
			old, joiner := slices.Clone(members[:k]), members[k]
			before := owners(t, ch, queues, old)
			require.Equal(t, before, owners(t, ch, queues, old), "deterministic")
			after := owners(t, ch, queues, members)
			n := moved(t, before, after, joiner)
			frac := float64(n) / float64(len(queues))
			t.Logf("%d virtual nodes, %d → %d members: %d of %d queues moved (%.2f; ideal %.2f)",
				vnodes, k, k+1, n, len(queues), frac, 1/float64(k+1))
			require.Positive(t, n, "the new member gets queues")
			if vnodes >= 100 {
				require.InDelta(t, 1/float64(k+1), frac, 0.15, "about 1/n of the queues move")
			} else {
				require.Less(t, frac, 1/float64(k+1)+0.25, "not many more than 1/n of the queues move")
			}
			// The joiner leaves again: exactly its queues move back.
			require.Equal(t, before, owners(t, ch, queues, old))
			leaver := members[0]
			rest := members[1:]
			afterLeave := owners(t, ch, queues, rest)
			for mq, o := range after {
				if o != leaver {
					require.Equal(t, o, afterLeave[mq], "%s moved though its owner stayed", mq)
				}
			}
			if k == 3 {
				avg := moved(t, owners(t, AllocateAveragely, queues, old), owners(t, AllocateAveragely, queues, members), "")
				t.Logf("average allocation, 3 → 4 members: %d queues moved", avg)
				require.Greater(t, avg, n, "consistent hashing moves fewer queues than average allocation")
			}
		}
		require.Nil(t, ch(queues, testMembers(3), "stranger"))
		require.Nil(t, ch(nil, testMembers(3), testMembers(3)[0]))
		require.Equal(t, queues, ch(queues, testMembers(1), testMembers(1)[0]), "a lone member gets everything")
	}
}

// TestConsistentHashFollowsJava pins the hashes and keys RocketMQ's Java
// AllocateMessageQueueConsistentHash uses (MD5, first four bytes big endian;
// "<clientId>-<i>" virtual nodes; MessageQueue.toString).
func TestConsistentHashFollowsJava(t *testing.T) {
	require.Equal(t, uint32(0x0cc175b9), ringHash("a"), "md5(a) = 0cc175b9…")
	require.Equal(t, uint32(0xd41d8cd9), ringHash(""), "md5() = d41d8cd9…")
	require.Equal(t, "MessageQueue [topic=T, brokerName=broker-a, queueId=3]",
		MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}.javaString())
	r := newHashRing([]string{"c1"}, 3)
	require.Len(t, r, 3)
	var hs []uint32
	for i := range 3 {
		hs = append(hs, ringHash(fmt.Sprintf("c1-%d", i)))
	}
	slices.Sort(hs)
	for i, p := range r {
		require.Equal(t, hs[i], p.hash)
	}
	// A key past the last point wraps to the first.
	r = hashRing{{hash: 10, member: "x"}, {hash: 20, member: "y"}}
	for h, want := range map[uint32]string{0: "x", 10: "x", 11: "y", 20: "y", 21: "x", 1<<32 - 1: "x"} {
		require.Equal(t, want, r.at(h), "hash %d", h)
	}
}

func TestAllocateAveragelyMatchesAllocateAverage(t *testing.T) {
	queues, members := testQueues(10), testMembers(3)
	for _, m := range members {
		require.Equal(t, allocateAverage(queues, members, m), AllocateAveragely(queues, members, m))
	}
}

// Consumers read from the master, else from the lowest-numbered slave (the master is
// down), as the official clients fall back.
func TestReadAddr(t *testing.T) {
	for _, c := range []struct {
		addrs map[int64]string
		want  string
	}{
		{map[int64]string{0: "m:1", 1: "s:1"}, "m:1"},
		{map[int64]string{2: "s:2", 1: "s:1"}, "s:1"},
		{map[int64]string{3: "s:3"}, "s:3"},
		{map[int64]string{0: "", 1: "s:1"}, "s:1"},
		{nil, ""},
	} {
		require.Equal(t, c.want, readAddr(c.addrs), "%v", c.addrs)
	}
}

// A pull goes to the member the last answer suggested when the route lists it, else to
// the master, else to the lowest slave.
func TestPullAddr(t *testing.T) {
	both := map[int64]string{0: "m:1", 1: "s:1", 2: "s:2"}
	for _, c := range []struct {
		addrs     map[int64]string
		suggested int64
		want      string
	}{
		{both, 0, "m:1"},
		{both, 1, "s:1"},
		{both, 2, "s:2"},
		{both, 3, "m:1"}, // not in the route: the master
		{map[int64]string{1: "s:1", 2: "s:2"}, 0, "s:1"}, // no master: the lowest slave
		{map[int64]string{1: "s:1", 2: "s:2"}, 2, "s:2"},
		{map[int64]string{0: "m:1", 1: ""}, 1, "m:1"},
		{nil, 1, ""},
	} {
		require.Equal(t, c.want, pullAddr(c.addrs, c.suggested), "%v, suggested %d", c.addrs, c.suggested)
	}
}

// memberListBroker serves GET_CONSUMER_LIST_BY_GROUP and HEART_BEAT with the answers
// the test sets: a list code other than SUCCESS is answered with no body (SYSTEM_ERROR:
// with Ferry's empty list); a successful heartbeat puts the client on the list unless
// ignore is set.
type memberListBroker struct {
	mu struct {
		sync.Mutex
		list, heartbeat protocol.ResponseCode
		members         []string
		ignore          bool
	}
}

func startMemberListBroker(t *testing.T) (*memberListBroker, string) {
	t.Helper()
	b := &memberListBroker{}
	s, err := remoting.NewServer(remoting.DefaultServerOptions())
	require.NoError(t, err)
	require.NoError(t, s.Handle(int16(protocol.GetConsumerListByGroup), remoting.DefaultPool,
		remoting.HandlerFunc(func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			resp := remoting.NewResponse(req, int16(b.mu.list), "")
			var err error
			switch b.mu.list {
			case protocol.Success:
				resp.Body, err = protocol.EncodeConsumerIDList(b.mu.members)
			case protocol.SystemError:
				resp.Remark = "no consumer for this group"
				resp.Body, err = protocol.EncodeConsumerIDList(nil)
			}
			return resp, err
		})))
	require.NoError(t, s.Handle(int16(protocol.HeartBeat), remoting.DefaultPool,
		remoting.HandlerFunc(func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
			hb, err := protocol.DecodeHeartbeatData(req.Body)
			if err != nil {
				return nil, err
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.mu.heartbeat == protocol.Success && !b.mu.ignore {
				b.mu.list, b.mu.members = protocol.Success, append(b.mu.members, hb.ClientID)
			}
			return remoting.NewResponse(req, int16(b.mu.heartbeat), ""), nil
		})))
	remoting.ServeTest(t, s, nil)
	return b, s.Addr().String()
}

// A rebalance takes itself for no member of the group — and drops the broker's queues —
// only when the broker says so: it knows no consumer of the group (SYSTEM_ERROR) or
// lists others, and still does after a heartbeat. An answer that says nothing about the
// members (SYSTEM_BUSY, as a broker shutting down gives) or a failed heartbeat is an
// error, and the queues are kept.
func TestAllocateOnlyTrustsMemberLists(t *testing.T) {
	tests := []struct {
		name            string
		list, heartbeat protocol.ResponseCode
		members         []string
		ignore          bool
		wantMember      bool
		wantErr         bool
	}{
		{name: "busy", list: protocol.SystemBusy, heartbeat: protocol.Success, wantErr: true},
		{name: "heartbeat fails", list: protocol.SystemError, heartbeat: protocol.SystemBusy, wantErr: true},
		{name: "registered by the heartbeat", list: protocol.SystemError, heartbeat: protocol.Success, wantMember: true},
		{name: "others only", list: protocol.Success, heartbeat: protocol.Success, members: []string{"10.0.0.1@1"},
			ignore: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, addr := startMemberListBroker(t)
			b.mu.Lock()
			b.mu.list, b.mu.heartbeat, b.mu.members, b.mu.ignore = tt.list, tt.heartbeat, tt.members, tt.ignore
			b.mu.Unlock()
			cl, err := New(WithNameServers("127.0.0.1:1"), WithRequestTimeout(3*time.Second))
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, cl.Close()) })
			pc, err := cl.NewPushConsumer("cg-members", "T", "*",
				func(context.Context, []*MessageExt) ConsumeResult { return ConsumeSuccess })
			require.NoError(t, err)
			qs := []readQueue{{mq: MessageQueue{Topic: "T", BrokerName: "broker-a"}, addr: addr}}
			mine, member, err := pc.allocate(stepCtx(t), qs)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantMember, member)
			if tt.wantMember {
				require.Equal(t, qs, mine)
			} else {
				require.Empty(t, mine)
			}
		})
	}
}

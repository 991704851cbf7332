package clients

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
)

var t0 = time.Unix(1_700_000_000, 0)

func ch(id uint64, clientID string) ChannelInfo {
	return ChannelInfo{ID: id, RemoteAddr: fmt.Sprintf("10.0.0.%d:5%04d", id, id), ClientID: clientID,
		Language: "GO", Version: 317}
}

func sub(topic, expr string, version int64) protocol.SubscriptionData {
	return protocol.SubscriptionData{Topic: topic, SubString: expr, SubVersion: version,
		ExpressionType: protocol.ExpressionTag}
}

func consumer(group string, subs ...protocol.SubscriptionData) protocol.ConsumerData {
	return protocol.ConsumerData{GroupName: group, ConsumeType: protocol.ConsumePassively,
		MessageModel: protocol.Clustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset,
		SubscriptionDataSet: subs}
}

func hb(clientID string, producers []string, consumers ...protocol.ConsumerData) protocol.HeartbeatData {
	h := protocol.HeartbeatData{ClientID: clientID, ConsumerDataSet: consumers}
	for _, p := range producers {
		h.ProducerDataSet = append(h.ProducerDataSet, protocol.ProducerData{GroupName: p})
	}
	return h
}

func newRegistry() *Registry { return New(DefaultOptions()) }

func TestOptions(t *testing.T) {
	o := DefaultOptions()
	require.NoError(t, o.Validate())
}

func TestHeartbeatChangeDetection(t *testing.T) {
	retry := sub("%RETRY%cg", "*", 2)
	steps := []struct {
		name    string
		ch      ChannelInfo
		data    protocol.HeartbeatData
		changed []string
		ids     []string // ConsumerIDs("cg") afterwards
		topics  []string // subscribed topics of cg afterwards
	}{
		{"first member joins", ch(1, "c1"), hb("c1", nil, consumer("cg", sub("T1", "*", 1), retry)),
			[]string{"cg"}, []string{"c1"}, []string{"%RETRY%cg", "T1"}},
		{"same heartbeat again", ch(1, "c1"), hb("c1", nil, consumer("cg", sub("T1", "*", 1), retry)),
			nil, []string{"c1"}, []string{"%RETRY%cg", "T1"}},
		{"producer only", ch(1, "c1"), hb("c1", []string{"pg"}, consumer("cg", sub("T1", "*", 1), retry)),
			nil, []string{"c1"}, []string{"%RETRY%cg", "T1"}},
		{"second member joins", ch(2, "c2"), hb("c2", nil, consumer("cg", sub("T1", "*", 1), retry)),
			[]string{"cg"}, []string{"c1", "c2"}, []string{"%RETRY%cg", "T1"}},
		{"expression change is not a change", ch(2, "c2"), hb("c2", nil, consumer("cg", sub("T1", "TagA", 5), retry)),
			nil, []string{"c1", "c2"}, []string{"%RETRY%cg", "T1"}},
		{"member adds a topic", ch(2, "c2"), hb("c2", nil, consumer("cg", sub("T1", "TagA", 5), sub("T2", "*", 5), retry)),
			[]string{"cg"}, []string{"c1", "c2"}, []string{"%RETRY%cg", "T1", "T2"}},
		{"other member without the topic keeps it", ch(1, "c1"), hb("c1", nil, consumer("cg", sub("T1", "*", 1), retry)),
			nil, []string{"c1", "c2"}, []string{"%RETRY%cg", "T1", "T2"}},
		{"member drops the only reference", ch(2, "c2"), hb("c2", nil, consumer("cg", sub("T1", "TagA", 5), retry)),
			[]string{"cg"}, []string{"c1", "c2"}, []string{"%RETRY%cg", "T1"}},
		{"without-sub heartbeat keeps subscriptions", ch(2, "c2"),
			protocol.HeartbeatData{ClientID: "c2", WithoutSub: true, ConsumerDataSet: []protocol.ConsumerData{consumer("cg")}},
			nil, []string{"c1", "c2"}, []string{"%RETRY%cg", "T1"}},
		{"client id of a channel changes", ch(2, "c2b"), hb("c2b", nil, consumer("cg", sub("T1", "TagA", 5), retry)),
			[]string{"cg"}, []string{"c1", "c2b"}, []string{"%RETRY%cg", "T1"}},
		{"several groups at once", ch(3, "c3"), hb("c3", nil, consumer("zz", sub("T9", "*", 1)), consumer("cg", sub("T1", "*", 1)), consumer("aa")),
			[]string{"aa", "cg", "zz"}, []string{"c1", "c2b", "c3"}, []string{"%RETRY%cg", "T1"}},
		{"empty group names are ignored", ch(4, "c4"), hb("c4", []string{""}, consumer("")),
			nil, []string{"c1", "c2b", "c3"}, []string{"%RETRY%cg", "T1"}},
	}
	r := newRegistry()
	for i, st := range steps {
		changed := r.Heartbeat(st.ch, st.data, t0.Add(time.Duration(i)*time.Second))
		require.Equal(t, st.changed, changed, st.name)
		require.Equal(t, st.ids, r.ConsumerIDs("cg"), st.name)
		info, ok := r.ConsumerGroupInfo("cg")
		require.True(t, ok, st.name)
		var topics []string
		for topic := range info.Subscriptions {
			topics = append(topics, topic)
		}
		require.ElementsMatch(t, st.topics, topics, st.name)
	}
	require.Equal(t, []string{"aa", "cg", "zz"}, r.Groups())
	require.Equal(t, []string{"pg"}, r.ProducerGroups())
	require.Equal(t, []uint64{1}, r.ProducerChannels("pg"))
}

func TestSubscriptionVersionRule(t *testing.T) {
	r := newRegistry()
	r.Heartbeat(ch(1, "a"), hb("a", nil, consumer("cg", sub("T", "TagA", 100))), t0)
	got, ok := r.Subscription("cg", "T")
	require.True(t, ok)
	require.Equal(t, "TagA", got.SubString)

	// An older version (e.g. a Java member, milliseconds) does not replace a newer one.
	r.Heartbeat(ch(2, "b"), hb("b", nil, consumer("cg", sub("T", "TagB", 50))), t0)
	got, _ = r.Subscription("cg", "T")
	require.Equal(t, "TagA", got.SubString)

	// A newer version does.
	r.Heartbeat(ch(2, "b"), hb("b", nil, consumer("cg", sub("T", "TagC", 200))), t0)
	got, _ = r.Subscription("cg", "T")
	require.Equal(t, "TagC", got.SubString)

	_, ok = r.Subscription("cg", "Other")
	require.False(t, ok)
	_, ok = r.Subscription("nogroup", "T")
	require.False(t, ok)
}

func TestStoredSubscriptionIsACopy(t *testing.T) {
	r := newRegistry()
	s := protocol.SubscriptionData{Topic: "T", SubString: "a || b", TagsSet: []string{"a", "b"},
		CodeSet: protocol.CodeSet{97, 98}, SubVersion: 1}
	data := hb("c", nil, consumer("cg", s))
	r.Heartbeat(ch(1, "c"), data, t0)
	data.ConsumerDataSet[0].SubscriptionDataSet[0].TagsSet[0] = "changed"
	data.ConsumerDataSet[0].SubscriptionDataSet[0].CodeSet[0] = 0
	got, ok := r.Subscription("cg", "T")
	require.True(t, ok)
	require.Equal(t, s.SubString, got.SubString)
	require.Equal(t, []string{"a", "b"}, got.TagsSet)
	require.Equal(t, protocol.CodeSet{97, 98}, got.CodeSet)
}

func TestClientIDFallsBackToHeartbeat(t *testing.T) {
	r := newRegistry()
	r.Heartbeat(ChannelInfo{ID: 7}, hb("10.0.0.9@4242", []string{"pg"}, consumer("cg")), t0)
	require.Equal(t, []string{"10.0.0.9@4242"}, r.ConsumerIDs("cg"))
	require.Equal(t, "10.0.0.9@4242", r.Producers("pg")[0].Channel.ClientID)
}

func TestUnregister(t *testing.T) {
	r := newRegistry()
	r.Heartbeat(ch(1, "c1"), hb("c1", []string{"pg"}, consumer("cg", sub("T", "*", 1))), t0)
	r.Heartbeat(ch(2, "c2"), hb("c2", []string{"pg"}, consumer("cg", sub("T", "*", 1), sub("U", "*", 1))), t0)
	r.Heartbeat(ch(3, "c2"), hb("c2", nil, consumer("cg", sub("T", "*", 1))), t0) // second connection of c2

	cases := []struct {
		name           string
		client, pg, cg string
		changed        []string
		ids            []string
		producers      []uint64
		hasU           bool
	}{
		{"unknown client", "zz", "pg", "cg", nil, []string{"c1", "c2"}, []uint64{1, 2}, true},
		{"unknown group", "c1", "nope", "nope", nil, []string{"c1", "c2"}, []uint64{1, 2}, true},
		{"producer only", "c1", "pg", "", nil, []string{"c1", "c2"}, []uint64{2}, true},
		{"consumer with two connections", "c2", "", "cg", []string{"cg"}, []string{"c1"}, []uint64{2}, false},
		{"last member", "c1", "pg", "cg", []string{"cg"}, nil, []uint64{2}, false},
	}
	for _, tc := range cases {
		changed := r.Unregister(tc.client, tc.pg, tc.cg)
		require.Equal(t, tc.changed, changed, tc.name)
		require.Equal(t, tc.ids, r.ConsumerIDs("cg"), tc.name)
		require.Equal(t, tc.producers, r.ProducerChannels("pg"), tc.name)
		_, hasU := r.Subscription("cg", "U")
		require.Equal(t, tc.hasU, hasU, tc.name)
	}
	require.Empty(t, r.Groups())
	_, ok := r.ConsumerGroupInfo("cg")
	require.False(t, ok)
	require.Equal(t, []string{"pg"}, r.ProducerGroups())
	require.Nil(t, r.ChannelClosed(2), "producer-only connection: no consumer group changes")
	require.Empty(t, r.ProducerGroups())
	require.Empty(t, r.mu.channels)
}

func TestChannelClosed(t *testing.T) {
	r := newRegistry()
	r.Heartbeat(ch(1, "c1"), hb("c1", []string{"pg", "pg2"}, consumer("b", sub("T", "*", 1)), consumer("a")), t0)
	r.Heartbeat(ch(2, "c2"), hb("c2", []string{"pg"}, consumer("b", sub("T", "*", 1))), t0)

	require.Nil(t, r.ChannelClosed(99), "unknown channel")
	require.Equal(t, []string{"a", "b"}, r.ChannelClosed(1))
	require.Equal(t, []string{"b"}, r.Groups())
	require.Equal(t, []string{"c2"}, r.ConsumerIDs("b"))
	require.Equal(t, []uint64{2}, r.ConsumerChannels("b"))
	require.Equal(t, []uint64{2}, r.ProducerChannels("pg"))
	require.Nil(t, r.ProducerChannels("pg2"))
	require.Equal(t, []string{"pg"}, r.ProducerGroups())
	require.Nil(t, r.ChannelClosed(1), "already closed")

	require.Equal(t, []string{"b"}, r.ChannelClosed(2), "a group losing its last member is reported")
	require.Empty(t, r.Groups())
	require.Empty(t, r.ProducerGroups())
	require.Empty(t, r.mu.channels, "reverse index is cleaned up")
	_, ok := r.Subscription("b", "T")
	require.False(t, ok)
}

func TestExpire(t *testing.T) {
	r := newRegistry()
	r.Heartbeat(ch(1, "old"), hb("old", []string{"pg"}, consumer("cg", sub("T", "*", 1)), consumer("solo")), t0)
	r.Heartbeat(ch(2, "fresh"), hb("fresh", []string{"pg"}, consumer("cg", sub("T", "*", 1))), t0.Add(60*time.Second))

	require.Nil(t, r.Expire(t0.Add(DefaultExpiry), DefaultExpiry), "exactly at the timeout is still alive")
	require.Equal(t, []string{"cg", "solo"}, r.Expire(t0.Add(DefaultExpiry+time.Millisecond), DefaultExpiry))
	require.Equal(t, []string{"fresh"}, r.ConsumerIDs("cg"))
	require.Equal(t, []string{"cg"}, r.Groups())
	require.Equal(t, []uint64{2}, r.ProducerChannels("pg"))
	_, ok := r.Subscription("cg", "T")
	require.True(t, ok)

	// A heartbeat refreshes only the groups it lists.
	r.Heartbeat(ch(2, "fresh"), hb("fresh", []string{"pg"}), t0.Add(170*time.Second))
	require.Equal(t, []string{"cg"}, r.Expire(t0.Add(181*time.Second), DefaultExpiry))
	require.Empty(t, r.Groups())
	require.Equal(t, []uint64{2}, r.ProducerChannels("pg"))
	require.Nil(t, r.Expire(t0.Add(200*time.Second), DefaultExpiry))
	require.Nil(t, r.Expire(t0.Add(291*time.Second), DefaultExpiry), "producers expire silently")
	require.Empty(t, r.ProducerGroups())
	require.Empty(t, r.mu.channels)
}

func TestQueries(t *testing.T) {
	r := newRegistry()
	r.Heartbeat(ch(5, "b@1"), hb("b@1", []string{"pg"}, consumer("cg", sub("T", "*", 1))), t0)
	r.Heartbeat(ch(3, "a@1"), hb("a@1", []string{"pg"}, consumer("cg", sub("T", "*", 1))), t0.Add(time.Second))
	r.Heartbeat(ch(9, "b@1"), hb("b@1", nil, consumer("cg", sub("T", "*", 1))), t0.Add(2*time.Second))

	require.Equal(t, []string{"a@1", "b@1"}, r.ConsumerIDs("cg"), "sorted and distinct")
	require.Equal(t, []uint64{3, 5, 9}, r.ConsumerChannels("cg"))
	require.Nil(t, r.ConsumerIDs("none"))
	require.Nil(t, r.ConsumerChannels("none"))
	require.Equal(t, []uint64{3, 5}, r.ProducerChannels("pg"))
	require.Nil(t, r.ProducerChannels("none"))
	require.Empty(t, r.Producers("none"))

	id, ok := r.ConsumerChannel("cg", "b@1")
	require.True(t, ok)
	require.Equal(t, uint64(9), id, "most recently refreshed connection")
	_, ok = r.ConsumerChannel("cg", "zz")
	require.False(t, ok)
	_, ok = r.ConsumerChannel("none", "b@1")
	require.False(t, ok)

	info, ok := r.ConsumerGroupInfo("cg")
	require.True(t, ok)
	require.Equal(t, "cg", info.Group)
	require.Equal(t, protocol.ConsumePassively, info.ConsumeType)
	require.Equal(t, protocol.Clustering, info.MessageModel)
	require.Equal(t, protocol.ConsumeFromLastOffset, info.ConsumeFromWhere)
	require.Equal(t, t0.Add(2*time.Second), info.LastUpdate)
	require.Len(t, info.Members, 3)
	require.Equal(t, []uint64{3, 5, 9}, []uint64{info.Members[0].Channel.ID, info.Members[1].Channel.ID, info.Members[2].Channel.ID})
	require.Equal(t, ch(3, "a@1"), info.Members[0].Channel)
	require.Equal(t, t0.Add(time.Second), info.Members[0].LastUpdate)
	delete(info.Subscriptions, "T")
	_, ok = r.Subscription("cg", "T")
	require.True(t, ok, "ConsumerGroupInfo returns a copy of the table")

	producers := r.Producers("pg")
	require.Equal(t, []Member{{Channel: ch(3, "a@1"), LastUpdate: t0.Add(time.Second)}, {Channel: ch(5, "b@1"), LastUpdate: t0}}, producers)
}

func TestConcurrentUse(t *testing.T) {
	r := newRegistry()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				id := uint64(w*1000 + i%10)
				client := fmt.Sprintf("c%d", id)
				now := t0.Add(time.Duration(i) * time.Second)
				r.Heartbeat(ch(id, client), hb(client, []string{"pg"}, consumer(fmt.Sprintf("g%d", i%3), sub("T", "*", int64(i)))), now)
				_ = r.ConsumerIDs("g1")
				_, _ = r.Subscription("g2", "T")
				_ = r.ProducerChannels("pg")
				switch i % 7 {
				case 0:
					r.ChannelClosed(id)
				case 3:
					r.Unregister(client, "pg", "g0")
				case 5:
					r.Expire(now, 5*time.Second)
				}
			}
		}()
	}
	wg.Wait()
	for _, g := range r.Groups() {
		info, ok := r.ConsumerGroupInfo(g)
		require.True(t, ok)
		require.NotEmpty(t, info.Members)
		require.Contains(t, info.Subscriptions, "T")
	}
	for _, id := range []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9} {
		for w := range 8 {
			r.ChannelClosed(uint64(w*1000) + id)
		}
	}
	require.Empty(t, r.Groups())
	require.Empty(t, r.ProducerGroups())
	require.Empty(t, r.mu.channels)
}

// ClientChannel finds a client's connection among producers first, then consumers.
func TestClientChannel(t *testing.T) {
	r := newRegistry()
	r.Heartbeat(ch(5, "b@1"), hb("b@1", []string{"pg"}), t0)
	r.Heartbeat(ch(9, "b@1"), hb("b@1", nil, consumer("cg", sub("T", "*", 1))), t0.Add(time.Second))
	r.Heartbeat(ch(7, "c@1"), hb("c@1", nil, consumer("cg", sub("T", "*", 1))), t0)
	id, ok := r.ClientChannel("b@1")
	require.True(t, ok)
	require.Equal(t, uint64(5), id, "a producer connection wins over a newer consumer one")
	id, ok = r.ClientChannel("c@1")
	require.True(t, ok)
	require.Equal(t, uint64(7), id, "a consumer-only client is found too")
	_, ok = r.ClientChannel("zz")
	require.False(t, ok)
	r.ChannelClosed(5)
	id, ok = r.ClientChannel("b@1")
	require.True(t, ok)
	require.Equal(t, uint64(9), id)
}

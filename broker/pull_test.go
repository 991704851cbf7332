package broker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/groupconf"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/store"
)

// foundStore answers every read with one record, reporting inDisk; the rest of
// MessageStore is not used by the pull path.
type foundStore struct {
	MessageStore
	r      store.GetResult
	record []byte
	inDisk bool
}

func (f *foundStore) PullMessages(string, int32, int64, int, int, store.Filter) (*store.GetResult, error) {
	f.r.Status, f.r.NextBeginOffset, f.r.MinOffset, f.r.MaxOffset = store.Found, 8, 0, 10
	f.r.Messages = append(f.r.Messages, f.record)
	f.r.Bytes, f.r.InDisk = len(f.record), f.inDisk
	return &f.r, nil
}

// oneGroup answers every group with cfg (its name aside).
type oneGroup struct {
	GroupTable
	cfg groupconf.Config
}

func (g oneGroup) FindOrCreate(group string) (groupconf.Config, bool, error) {
	c := g.cfg
	c.GroupName = group
	return c, false, nil
}

// newPullFixture is a puller over fs with topic T (4 queues) and groups configured as
// group.
func newPullFixture(fs *foundStore, slaveRead bool, group groupconf.Config) *puller {
	topics := &fakeTopics{cfgs: map[string]protocol.TopicConfig{
		"T": {TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}}}
	return &puller{store: fs, topics: topics, groups: oneGroup{cfg: group}, slaveRead: slaveRead}
}

// pullReq is a pull of T queue 1 at offset 7 with its subscription.
func pullReq() *remoting.Command {
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "g", Topic: "T", QueueID: 1, QueueOffset: 7,
		MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG"}
	return protocol.NewRequest(protocol.PullMessage, &h)
}

// The answer's suggestWhichBrokerId (storage spec §6.2): the master without
// slaveReadEnable; with it, the group's whichBrokerWhenConsumeSlowly (default 1) when the
// read was in disk, else the group's brokerId (default 0).
func TestPullSuggestsBroker(t *testing.T) {
	def := groupconf.DefaultConfig("g")
	custom := def
	custom.BrokerID, custom.WhichBrokerWhenConsumeSlowly = 2, 3
	for _, tc := range []struct {
		group             groupconf.Config
		slaveRead, inDisk bool
		want              int64
	}{
		{def, false, false, 0}, {def, false, true, 0}, {def, true, false, 0}, {def, true, true, 1},
		{custom, false, false, 0}, {custom, false, true, 0}, {custom, true, false, 2}, {custom, true, true, 3},
	} {
		fs := &foundStore{record: make([]byte, 100), inDisk: tc.inDisk}
		pl := newPullFixture(fs, tc.slaveRead, tc.group)
		resp, err := pl.handlePull(context.Background(), fakeChannel{}, pullReq())
		require.NoError(t, err)
		require.Equal(t, int16(protocol.Success), resp.Code)
		var rh protocol.PullMessageResponseHeader
		require.NoError(t, rh.DecodeExt(resp.ExtFields))
		require.Equal(t, tc.want, rh.SuggestWhichBrokerID, "group %d/%d slaveRead %v inDisk %v",
			tc.group.BrokerID, tc.group.WhichBrokerWhenConsumeSlowly, tc.slaveRead, tc.inDisk)
		resp.OnWritten(nil)
	}
}

// A pull that finds messages costs the decoded request, its response and the callback
// releasing the read, however many messages it carries: records go out as the store's
// slices, and the suggestion adds nothing.
func TestPullHandlerAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector; make test runs this without it")
	}
	fs := &foundStore{record: make([]byte, 100), inDisk: true}
	pl := newPullFixture(fs, true, groupconf.DefaultConfig("g"))
	req := pullReq()
	var ch remoting.Channel = fakeChannel{}
	n := testing.AllocsPerRun(200, func() {
		resp, err := pl.handlePull(context.Background(), ch, req)
		if err != nil || resp.Code != int16(protocol.Success) {
			t.Fatal(err)
		}
		resp.OnWritten(nil)
	})
	require.LessOrEqual(t, n, 3.0)
}

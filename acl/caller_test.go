package acl

import (
	"bytes"
	"context"
	"net/netip"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Authorize returns who a request was allowed as: a non-admin account is held to its
// permissions for the topics a handler learns later, an admin account or a white-listed
// address is not, and a refused request's Caller (the zero one) permits nothing.
func TestAuthorizeCaller(t *testing.T) {
	a := testACL(t)
	view := code(protocol.ViewMessageByID)

	c, err := a.Authorize(rm("RocketMQ", view, "offset", "0"))
	require.NoError(t, err)
	require.False(t, c.Unrestricted())
	require.ErrorIs(t, c.CheckTopic("topicA", PermSub), ErrDenied, "explicit DENY")
	require.ErrorIs(t, c.CheckTopic("topicP", PermSub), ErrDenied, "PUB does not grant SUB")
	require.ErrorIs(t, c.CheckTopic("elsewhere", PermSub), ErrDenied, "default DENY")
	require.NoError(t, c.CheckTopic("topicC", PermSub))
	require.NoError(t, c.CheckTopic("%RETRY%groupC", PermSub), "a retry topic is its group")
	require.ErrorIs(t, c.CheckTopic("%RETRY%groupA", PermSub), ErrDenied)
	require.ErrorIs(t, c.CheckGroup("groupA", PermSub), ErrDenied)
	require.NoError(t, c.CheckGroup("groupB", PermSub))
	var denied *DeniedError
	require.ErrorAs(t, c.CheckTopic("topicA", PermSub), &denied)
	require.Equal(t, view, denied.Code)

	c, err = a.Authorize(signed("rocketmq2", "12345678", view, nil, "offset", "0"))
	require.NoError(t, err)
	require.True(t, c.Unrestricted(), "admin")
	require.NoError(t, c.CheckTopic("topicA", PermSub))

	c, err = a.Authorize(Request{Addr: netip.MustParseAddr("10.10.103.5"), Code: view})
	require.NoError(t, err)
	require.True(t, c.Unrestricted(), "global white list")

	c, err = a.Authorize(signed("RocketMQ", "wrong-secret", view, nil, "offset", "0"))
	require.ErrorIs(t, err, ErrBadSignature)
	require.False(t, c.Unrestricted())
	require.ErrorIs(t, c.CheckTopic("topicC", PermSub), ErrDenied, "a refused request's caller permits nothing")
	require.ErrorIs(t, Caller{}.CheckGroup("groupB", PermSub), ErrDenied, "the zero caller permits nothing")
}

// The default permission never covers the system topics, which hold or describe other
// topics' records (delayed, timer and half messages, traces), nor a dead-letter topic;
// an explicit entry does.
func TestDefaultPermSkipsInternalTopics(t *testing.T) {
	a, err := Parse([]byte(`
accounts:
  - accessKey: wideOpen1
    secretKey: wide-secret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
  - accessKey: scheduler
    secretKey: sched-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: ["SCHEDULE_TOPIC_XXXX=SUB"]
`))
	require.NoError(t, err)
	pull := code(protocol.PullMessage)
	for _, topic := range []string{protocol.ScheduleTopic, protocol.TransHalfTopic, protocol.TransOpHalfTopic, protocol.TransCheckMaxTimeTopic, protocol.TimerTopic, protocol.TraceTopic, "%DLQ%g1"} {
		err := a.Check(signed("wideOpen1", "wide-secret", pull, nil, "topic", topic, "consumerGroup", "g1"))
		require.ErrorIs(t, err, ErrDenied, topic)
	}
	require.NoError(t, a.Check(signed("wideOpen1", "wide-secret", pull, nil, "topic", "Orders", "consumerGroup", "g1")))
	require.NoError(t, a.Check(signed("scheduler", "sched-secret", pull, nil, "topic", protocol.ScheduleTopic, "consumerGroup", "g1")),
		"an explicit entry grants an internal topic")
}

// The gate hands a Grant to the handlers of Referenced and Filtered codes only; a Grant
// refuses with NO_PERMISSION and, for a record's topic, without naming it; a nil Grant
// (ACL off) permits everything.
func TestGateGrant(t *testing.T) {
	a := testACL(t)
	var logs bytes.Buffer
	g := NewGate(a, zerolog.New(&logs))
	var got *Grant
	h := remoting.HandlerFunc(func(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		got = GrantFrom(ctx)
		return remoting.NewResponse(req, int16(protocol.Success), ""), nil
	})
	ch := fakeChannel{addr: "172.16.0.9:4000"}
	call := func(c protocol.RequestCode, r Request) *remoting.Command {
		t.Helper()
		got = nil
		req := remoting.NewRequestExt(int16(c), remoting.Ext(r.Fields))
		req.Version, req.Body = r.Version, r.Body
		resp, err := g.Wrap(c, h)(context.Background(), ch, req)
		require.NoError(t, err)
		return resp
	}

	call(protocol.ViewMessageByID, rm("RocketMQ", code(protocol.ViewMessageByID), "offset", "0"))
	require.NotNil(t, got, "a Referenced code gets a grant")
	require.False(t, got.Unrestricted())
	require.True(t, got.MayTopic("topicC", PermSub))
	require.False(t, got.MayTopic("topicA", PermSub))
	err := got.CheckRecordTopic("topicA", PermSub)
	var ce *remoting.CodeError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, int16(protocol.NoPermission), ce.Code)
	require.NotContains(t, ce.Remark, "topicA", "a record's topic is not named to the caller")
	require.Contains(t, logs.String(), "request refused by ACL", "the refusal is logged like the gate's")
	require.Contains(t, logs.String(), "topicA", "the log line names the record's topic")
	require.ErrorAs(t, got.CheckTopic("topicA", PermSub), &ce)
	require.Contains(t, ce.Remark, "topicA")

	call(protocol.GetAllTopicConfig, rm("RocketMQ", code(protocol.GetAllTopicConfig)))
	require.NotNil(t, got, "a Filtered code gets a grant")
	call(protocol.GetAllTopicConfig, signed("rocketmq2", "12345678", code(protocol.GetAllTopicConfig), nil))
	require.True(t, got.Unrestricted(), "admin")

	call(protocol.SendMessage, rm("RocketMQ", code(protocol.SendMessage), "topic", "topicB"))
	require.Nil(t, got, "the send path gets nothing added")

	pull := code(protocol.PullMessage)
	call(protocol.PullMessage, rm("RocketMQ", pull, "topic", "topicB", "consumerGroup", "groupB"))
	require.Nil(t, got, "a pull of a plain topic gets nothing added")
	call(protocol.PullMessage, rm("RocketMQ", pull, "topic", "%RETRY%groupB", "consumerGroup", "groupB"))
	require.NotNil(t, got, "a pull of a retry topic by a restricted account gets a grant")
	require.False(t, got.MayTopic("topicA", PermSub))
	call(protocol.PullMessage, signed("rocketmq2", "12345678", pull, nil, "topic", "%RETRY%groupB", "consumerGroup", "groupB"))
	require.Nil(t, got, "an admin's pull of a retry topic is not filtered")

	var off *Grant
	require.True(t, off.Unrestricted())
	require.NoError(t, off.CheckTopic("topicA", PermSub))
	require.NoError(t, off.CheckRecordTopic("topicA", PermSub))
	require.True(t, off.MayGroup("groupA", PermSub))
}

// fakeChannel is a remoting.Channel with only an address.
type fakeChannel struct {
	remoting.Channel
	addr string
}

func (f fakeChannel) RemoteAddr() string { return f.addr }

// The gate adds nothing to the send and pull paths: checking an allowed send or a pull
// of a plain topic allocates nothing (only Referenced and Filtered codes, and pulls of
// a retry topic, get a Grant in their context).
func TestGateHotPathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector; make test runs this without it")
	}
	a := testACL(t)
	g := NewGate(a, zerolog.Nop())
	nop := func(_ context.Context, _ remoting.Channel, _ *remoting.Command) (*remoting.Command, error) {
		return nil, nil
	}
	var ch remoting.Channel = &fakeChannel{addr: "172.16.0.9:4000"}
	ctx := context.Background()
	for _, r := range []Request{
		rm("RocketMQ", code(protocol.SendMessage), "topic", "topicB"),
		rm("RocketMQ", code(protocol.PullMessage), "topic", "topicB", "consumerGroup", "groupB"),
	} {
		h := g.Wrap(protocol.RequestCode(r.Code), nop)
		req := remoting.NewRequestExt(r.Code, remoting.Ext(r.Fields))
		req.Version, req.Body = r.Version, r.Body
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := h(ctx, ch, req); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, protocol.RequestCode(r.Code).String())
	}
}

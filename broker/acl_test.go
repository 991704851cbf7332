package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/nameserver"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// The accounts of the ACL probe: probeUser may publish and subscribe to every topic
// but AclSecret and act as every group but AclSecretGroup (the widest grant that
// still denies something); probeAdmin is an admin account.
const probeAccounts = `
accounts:
  - accessKey: probeAdmin
    secretKey: probeAdminSecret
    admin: true
  - accessKey: probeUser
    secretKey: probeUserSecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
    topicPerms:
      - AclSecret=DENY
      - "%DLQ%cgDead=SUB"
    groupPerms:
      - AclSecretGroup=DENY
`

// Names and markers of the probe. Everything denied to probeUser contains secretName;
// every stored body of the denied topic contains secretBody.
const (
	secretName    = "AclSecret"
	secretTopic   = "AclSecret"
	secretGroup   = "AclSecretGroup"
	secretBody    = "TOPSECRET"
	openTopic     = "AclOpen"
	sharedGroup   = "cgShared" // subscribes to both topics; probeUser may act as it
	atkGroup      = "cgProbe"
	atkClientID   = "probe@1"
	adminClient   = "admin@1"
	secretPGroup  = "pgSecret"
	openRetryBody = "OPENBODY-retry"
	deadGroup     = "cgDead" // its DLQ is granted to the attacker explicitly
)

var (
	probeAdmin = sign.Credentials{AccessKey: "probeAdmin", SecretKey: "probeAdminSecret"}
	probeUser  = sign.Credentials{AccessKey: "probeUser", SecretKey: "probeUserSecret"}
)

// probeEnv is a cluster with ACL on in the broker and the name server, holding records
// of the denied topic: a plain message, a half (transactional) message and a delayed
// one, a group with offsets on it and a connected consumer subscribed to it.
type probeEnv struct {
	c             *testutil.Cluster
	admin, atk    *remoting.Client
	plainPhy      int64 // commit-log offset of the plain secret message
	plainID       string
	halfPhy       int64 // commit-log offset of the half message
	halfQueueOff  int64
	halfUniq      string
	forwardedMu   sync.Mutex
	forwardedBody [][]byte // bodies the broker forwarded to the attacker's client
}

func (e *probeEnv) call(t *testing.T, cli *remoting.Client, creds sign.Credentials, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	req.ExtFields = remoting.Ext(creds.SignFields(req.ExtFields, req.Body))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Invoke(ctx, addr, req)
	require.NoError(t, err)
	return resp
}

// adminOK sends req as the admin and requires SUCCESS.
func (e *probeEnv) adminOK(t *testing.T, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp := e.call(t, e.admin, probeAdmin, e.c.BrokerAddr, req)
	require.Equal(t, int16(protocol.Success), resp.Code, "%d: %s", req.Code, resp.Remark)
	return resp
}

func newReq(code protocol.RequestCode, h protocol.Header, body []byte) *remoting.Command {
	req := protocol.NewRequest(code, h)
	req.Body = body
	return req
}

func sendHeader(topic string, props map[string]string, sysFlag int32) *protocol.SendMessageRequestHeader {
	p, err := message.EncodeProperties(props)
	if err != nil {
		panic(err)
	}
	return &protocol.SendMessageRequestHeader{ProducerGroup: secretPGroup, Topic: topic, DefaultTopic: protocol.AutoCreateTopicKey,
		DefaultTopicQueueNums: 1, QueueID: 0, SysFlag: sysFlag, BornTimestamp: time.Now().UnixMilli(), Properties: string(p)}
}

func heartbeat(clientID, group string, producer string, topics ...string) []byte {
	cd := protocol.ConsumerData{GroupName: group, ConsumeType: protocol.ConsumePassively,
		MessageModel: protocol.MessageModel("CLUSTERING"), ConsumeFromWhere: protocol.ConsumeFromWhere("CONSUME_FROM_FIRST_OFFSET")}
	for _, topic := range topics {
		cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, protocol.SubscriptionData{Topic: topic, SubString: "*", SubVersion: 1})
	}
	hb := protocol.HeartbeatData{ClientID: clientID, ConsumerDataSet: []protocol.ConsumerData{cd}}
	if producer != "" {
		hb.ProducerDataSet = []protocol.ProducerData{{GroupName: producer}}
	}
	b, err := protocol.EncodeHeartbeatData(&hb)
	if err != nil {
		panic(err)
	}
	return b
}

func startProbeEnv(t *testing.T) *probeEnv {
	t.Helper()
	rules, err := acl.Parse([]byte(probeAccounts))
	require.NoError(t, err)
	e := &probeEnv{}
	e.c = testutil.StartCluster(t,
		testutil.WithNameServerOptions(func(o *nameserver.Options) { o.ACL = rules }),
		testutil.WithBrokerOptions(func(o *broker.Options) { o.ACL, o.Credentials = rules, probeAdmin }))
	newClient := func() *remoting.Client {
		cli, err := remoting.NewClient(remoting.DefaultClientOptions())
		require.NoError(t, err)
		t.Cleanup(func() { _ = cli.Close() })
		return cli
	}
	e.admin, e.atk = newClient(), newClient()
	capture := remoting.HandlerFunc(func(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		e.forwardedMu.Lock()
		e.forwardedBody = append(e.forwardedBody, slices.Clone(req.Body))
		e.forwardedMu.Unlock()
		return remoting.NewResponse(req, int16(protocol.Success), ""), nil
	})
	e.atk.Handle(int16(protocol.ConsumeMessageDirectly), capture)
	e.atk.Handle(int16(protocol.GetConsumerRunningInfo), capture)

	for _, topic := range []string{secretTopic, openTopic} {
		e.adminOK(t, newReq(protocol.UpdateAndCreateTopic, &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: protocol.AutoCreateTopicKey,
			ReadQueueNums: 1, WriteQueueNums: 1, Perm: protocol.PermRead | protocol.PermWrite}, nil))
	}
	sg, err := protocol.EncodeSubscriptionGroupConfig(&protocol.SubscriptionGroupConfig{GroupName: secretGroup, ConsumeEnable: true,
		RetryQueueNums: 1, RetryMaxTimes: 16})
	require.NoError(t, err)
	e.adminOK(t, newReq(protocol.UpdateAndCreateSubscriptionGroup, nil, sg))

	resp := e.adminOK(t, newReq(protocol.SendMessage, sendHeader(secretTopic, map[string]string{message.PropertyKeys: "secretKey1"}, 0), []byte(secretBody+"-plain")))
	var sh protocol.SendMessageResponseHeader
	require.NoError(t, sh.DecodeExt(resp.ExtFields))
	e.plainID = sh.MsgID
	_, e.plainPhy, err = message.DecodeOffsetMsgID(sh.MsgID)
	require.NoError(t, err)

	e.halfUniq = "0A0000000000000000000000000000AA"
	resp = e.adminOK(t, newReq(protocol.SendMessage, sendHeader(secretTopic, map[string]string{message.PropertyTransactionPrepared: "true",
		message.PropertyProducerGroup: secretPGroup, message.PropertyUniqKey: e.halfUniq}, message.TransactionPreparedType), []byte(secretBody+"-half")))
	require.NoError(t, sh.DecodeExt(resp.ExtFields))
	_, e.halfPhy, err = message.DecodeOffsetMsgID(sh.MsgID)
	require.NoError(t, err)
	e.halfQueueOff = sh.QueueOffset

	e.adminOK(t, newReq(protocol.SendMessage, sendHeader(secretTopic, map[string]string{message.PropertyDelayLevel: "18"}, 0), []byte(secretBody+"-delayed")))

	// A dead letter of the secret topic in the shared group's DLQ.
	e.adminOK(t, newReq(protocol.ConsumerSendMsgBack, &protocol.ConsumerSendMsgBackRequestHeader{Offset: e.plainPhy, Group: sharedGroup,
		DelayLevel: -1, OriginTopic: secretTopic}, nil))
	// Retry copies in the shared group's retry topic: one of the secret topic, one of the
	// open topic (which the attacker may read).
	resp = e.adminOK(t, newReq(protocol.SendMessage, sendHeader(openTopic, nil, 0), []byte(openRetryBody)))
	require.NoError(t, sh.DecodeExt(resp.ExtFields))
	_, openPhy, err := message.DecodeOffsetMsgID(sh.MsgID)
	require.NoError(t, err)
	for _, phy := range []int64{e.plainPhy, openPhy} {
		e.adminOK(t, newReq(protocol.ConsumerSendMsgBack, &protocol.ConsumerSendMsgBackRequestHeader{Offset: phy, Group: sharedGroup,
			DelayLevel: 1}, nil))
		// And dead letters of both in a DLQ the attacker was granted explicitly.
		e.adminOK(t, newReq(protocol.ConsumerSendMsgBack, &protocol.ConsumerSendMsgBackRequestHeader{Offset: phy, Group: deadGroup,
			DelayLevel: -1}, nil))
	}
	retryPull := func() *remoting.Command {
		return newReq(protocol.PullMessage, &protocol.PullMessageRequestHeader{ConsumerGroup: sharedGroup, Topic: "%RETRY%" + sharedGroup,
			MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, SubVersion: 1, Subscription: "*"}, nil)
	}
	testutil.Eventually(t, 20*time.Second, func() bool {
		resp := e.call(t, e.admin, probeAdmin, e.c.BrokerAddr, retryPull())
		return leaks(resp, false) != "" && strings.Contains(string(bytes.Join(resp.BodyVec, nil))+string(resp.Body), openRetryBody)
	}, "both retry copies delivered to the retry topic")
	st := e.c.Broker.Store()
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, hi := st.CommitLogRange()
		return st.DispatchedOffset() >= hi
	}, "the secret records dispatched to their queues and the index")

	// A consumer of the shared group, subscribed to both topics, with an offset on the
	// secret one; the attacker's own consumer in its own group.
	e.adminOK(t, newReq(protocol.HeartBeat, nil, heartbeat(adminClient, sharedGroup, secretPGroup, secretTopic, openTopic)))
	e.adminOK(t, newReq(protocol.UpdateConsumerOffset, &protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: sharedGroup,
		Topic: secretTopic, QueueID: 0, CommitOffset: 1}, nil))
	resp = e.call(t, e.atk, probeUser, e.c.BrokerAddr, newReq(protocol.HeartBeat, nil, heartbeat(atkClientID, atkGroup, "", openTopic)))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	return e
}

// probeCase is one request of the probe, sent as probeUser.
type probeCase struct {
	name string
	ns   bool // to the name server
	req  func(e *probeEnv) *remoting.Command
	// want is the code the attacker must get (0: any, as long as nothing of the secret
	// is in the answer).
	want protocol.ResponseCode
	// adminSees, when set, sends the same request as the admin and requires its answer
	// to hold something of the secret: the request does reach the secret, so the
	// attacker's empty answer is the ACL's doing.
	adminSees bool
	// adminMark, if set, is what the admin's answer must hold instead (answers that
	// hold the secret without naming it).
	adminMark string
	// attackerSees, if set, is what the attacker's answer must hold (a filtered answer
	// keeps what the attacker may read).
	attackerSees string
}

// probeCases are the cases by request code; every code a broker or name server serves
// must have one (TestACLEveryCodeHasRuleAndProbe).
func probeCases() map[protocol.RequestCode][]probeCase {
	denied := protocol.NoPermission
	sendTo := func(code protocol.RequestCode, topic string) func(*probeEnv) *remoting.Command {
		return func(*probeEnv) *remoting.Command {
			h := sendHeader(topic, nil, 0)
			if code == protocol.SendMessage || code == protocol.SendReplyMessage {
				return newReq(code, h, []byte("x"))
			}
			return newReq(code, &protocol.SendMessageRequestHeaderV2{SendMessageRequestHeader: *h}, []byte("x"))
		}
	}
	pull := func(code protocol.RequestCode, topic string, queue int32) func(*probeEnv) *remoting.Command {
		return func(*probeEnv) *remoting.Command {
			return newReq(code, &protocol.PullMessageRequestHeader{ConsumerGroup: atkGroup, Topic: topic, QueueID: queue,
				MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, SubVersion: 1, Subscription: "*"}, nil)
		}
	}
	fixed := func(code protocol.RequestCode, h protocol.Header, body []byte) func(*probeEnv) *remoting.Command {
		return func(*probeEnv) *remoting.Command { return newReq(code, h, body) }
	}
	mustJSON := func(b []byte, err error) []byte {
		if err != nil {
			panic(err)
		}
		return b
	}
	lock := mustJSON(protocol.EncodeLockBatchRequestBody(&protocol.LockBatchRequestBody{ConsumerGroup: atkGroup, ClientID: atkClientID,
		MQSet: []protocol.MessageQueue{{Topic: secretTopic, BrokerName: "broker-a", QueueID: 0}}}))
	check := mustJSON(protocol.EncodeCheckClientRequestBody(&protocol.CheckClientRequestBody{ClientID: atkClientID, Group: atkGroup,
		SubscriptionData: &protocol.SubscriptionData{Topic: openTopic, SubString: "*"}}))
	sg := mustJSON(protocol.EncodeSubscriptionGroupConfig(&protocol.SubscriptionGroupConfig{GroupName: secretGroup}))
	return map[protocol.RequestCode][]probeCase{
		protocol.SendMessage:        {{name: "send", req: sendTo(protocol.SendMessage, secretTopic), want: denied}},
		protocol.SendMessageV2:      {{name: "send v2", req: sendTo(protocol.SendMessageV2, secretTopic), want: denied}},
		protocol.SendBatchMessage:   {{name: "send batch", req: sendTo(protocol.SendBatchMessage, secretTopic), want: denied}},
		protocol.SendReplyMessage:   {{name: "reply", req: sendTo(protocol.SendReplyMessage, secretTopic), want: denied}},
		protocol.SendReplyMessageV2: {{name: "reply v2", req: sendTo(protocol.SendReplyMessageV2, secretTopic), want: denied}},
		protocol.ConsumerSendMsgBack: {{name: "send back a secret record into the attacker's retry topic", want: denied,
			req: func(e *probeEnv) *remoting.Command {
				return newReq(protocol.ConsumerSendMsgBack, &protocol.ConsumerSendMsgBackRequestHeader{Offset: e.plainPhy, Group: atkGroup,
					DelayLevel: -1, OriginTopic: openTopic}, nil)
			}}},
		protocol.PullMessage: {
			{name: "pull", req: pull(protocol.PullMessage, secretTopic, 0), want: denied, adminSees: true},
			{name: "pull the schedule topic", req: pull(protocol.PullMessage, protocol.ScheduleTopic, 17), want: denied, adminSees: true},
			{name: "pull the half topic", req: pull(protocol.PullMessage, protocol.TransHalfTopic, 0), want: denied, adminSees: true},
			{name: "pull the shared group's retry topic", req: func(*probeEnv) *remoting.Command {
				return newReq(protocol.PullMessage, &protocol.PullMessageRequestHeader{ConsumerGroup: sharedGroup, Topic: "%RETRY%" + sharedGroup,
					MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, SubVersion: 1, Subscription: "*"}, nil)
			}, want: protocol.Success, adminSees: true, attackerSees: openRetryBody},
			{name: "pull an explicitly granted dead-letter topic", req: func(*probeEnv) *remoting.Command {
				return newReq(protocol.PullMessage, &protocol.PullMessageRequestHeader{ConsumerGroup: deadGroup, Topic: "%DLQ%" + deadGroup,
					MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, SubVersion: 1, Subscription: "*"}, nil)
			}, want: protocol.Success, adminSees: true, attackerSees: openRetryBody},
			{name: "pull a dead-letter topic", req: func(*probeEnv) *remoting.Command {
				return newReq(protocol.PullMessage, &protocol.PullMessageRequestHeader{ConsumerGroup: sharedGroup, Topic: "%DLQ%" + sharedGroup,
					MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, SubVersion: 1, Subscription: "*"}, nil)
			}, want: denied, adminSees: true},
		},
		protocol.LitePullMessage: {
			{name: "lite pull", req: pull(protocol.LitePullMessage, secretTopic, 0), want: denied, adminSees: true},
			{name: "lite pull the shared group's retry topic", req: func(*probeEnv) *remoting.Command {
				return newReq(protocol.LitePullMessage, &protocol.PullMessageRequestHeader{ConsumerGroup: sharedGroup, Topic: "%RETRY%" + sharedGroup,
					MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, SubVersion: 1, Subscription: "*"}, nil)
			}, want: protocol.Success, adminSees: true, attackerSees: openRetryBody},
		},
		protocol.HeartBeat: {{name: "subscribe", want: denied, req: func(*probeEnv) *remoting.Command {
			return newReq(protocol.HeartBeat, nil, heartbeat(atkClientID, atkGroup, "", secretTopic))
		}}},
		protocol.CheckClientConfig: {{name: "check client config", req: fixed(protocol.CheckClientConfig, nil, check)}},
		protocol.UnregisterClient: {{name: "unregister", req: fixed(protocol.UnregisterClient,
			&protocol.UnregisterClientRequestHeader{ClientID: "nobody@1", ConsumerGroup: secretGroup}, nil), want: denied}},
		protocol.GetConsumerListByGroup: {{name: "consumers of the secret group", want: denied,
			req: fixed(protocol.GetConsumerListByGroup, &protocol.ConsumerListRequestHeader{ConsumerGroup: secretGroup}, nil)}},
		protocol.QueryConsumerOffset: {{name: "query offset", want: denied, req: fixed(protocol.QueryConsumerOffset,
			&protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: sharedGroup, Topic: secretTopic}, nil)}},
		protocol.UpdateConsumerOffset: {{name: "update offset", want: denied, req: fixed(protocol.UpdateConsumerOffset,
			&protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: atkGroup, Topic: secretTopic, CommitOffset: 0}, nil)}},
		protocol.GetMaxOffset: {{name: "max offset", want: denied, req: fixed(protocol.GetMaxOffset,
			&protocol.GetMaxOffsetRequestHeader{Topic: secretTopic}, nil)}},
		protocol.GetMinOffset: {{name: "min offset", want: denied, req: fixed(protocol.GetMinOffset,
			&protocol.GetMinOffsetRequestHeader{Topic: secretTopic}, nil)}},
		protocol.GetEarliestMsgStoretime: {{name: "earliest store time", want: denied, req: fixed(protocol.GetEarliestMsgStoretime,
			&protocol.GetEarliestMsgStoretimeRequestHeader{Topic: secretTopic}, nil)}},
		protocol.SearchOffsetByTimestamp: {{name: "search offset", want: denied, req: fixed(protocol.SearchOffsetByTimestamp,
			&protocol.SearchOffsetRequestHeader{Topic: secretTopic, Timestamp: time.Now().UnixMilli()}, nil)}},
		protocol.QueryMessage: {
			{name: "query by key", want: denied, adminSees: true, req: func(*probeEnv) *remoting.Command {
				return newReq(protocol.QueryMessage, &protocol.QueryMessageRequestHeader{Topic: secretTopic, Key: "secretKey1", MaxNum: 32,
					EndTimestamp: time.Now().Add(time.Hour).UnixMilli()}, nil)
			}},
			{name: "query a secret key in the shared group's retry topic", want: protocol.QueryNotFound, adminSees: true, req: func(*probeEnv) *remoting.Command {
				return newReq(protocol.QueryMessage, &protocol.QueryMessageRequestHeader{Topic: "%RETRY%" + sharedGroup, Key: "secretKey1", MaxNum: 32,
					EndTimestamp: time.Now().Add(time.Hour).UnixMilli()}, nil)
			}},
			{name: "query a secret key in an explicitly granted dead-letter topic", want: protocol.QueryNotFound, adminSees: true, req: func(*probeEnv) *remoting.Command {
				return newReq(protocol.QueryMessage, &protocol.QueryMessageRequestHeader{Topic: "%DLQ%" + deadGroup, Key: "secretKey1", MaxNum: 32,
					EndTimestamp: time.Now().Add(time.Hour).UnixMilli()}, nil)
			}},
			{name: "query a secret key under an allowed topic", req: func(*probeEnv) *remoting.Command {
				return newReq(protocol.QueryMessage, &protocol.QueryMessageRequestHeader{Topic: openTopic, Key: "secretKey1", MaxNum: 32,
					EndTimestamp: time.Now().Add(time.Hour).UnixMilli()}, nil)
			}},
		},
		protocol.ViewMessageByID: {
			{name: "view a secret record naming an allowed topic", want: denied, adminSees: true, req: func(e *probeEnv) *remoting.Command {
				return newReq(protocol.ViewMessageByID, &protocol.ViewMessageRequestHeader{Offset: e.plainPhy, Topic: openTopic}, nil)
			}},
			{name: "view a half message", want: denied, adminSees: true, req: func(e *probeEnv) *remoting.Command {
				return newReq(protocol.ViewMessageByID, &protocol.ViewMessageRequestHeader{Offset: e.halfPhy}, nil)
			}},
		},
		protocol.UpdateAndCreateTopic: {{name: "create topic", want: denied, req: fixed(protocol.UpdateAndCreateTopic,
			&protocol.CreateTopicRequestHeader{Topic: secretTopic, DefaultTopic: protocol.AutoCreateTopicKey, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}, nil)}},
		protocol.DeleteTopicInBroker: {{name: "delete topic", want: denied,
			req: fixed(protocol.DeleteTopicInBroker, &protocol.DeleteTopicRequestHeader{Topic: secretTopic}, nil)}},
		protocol.GetAllSubscriptionGroupConfig: {{name: "all groups", adminSees: true, req: fixed(protocol.GetAllSubscriptionGroupConfig, nil, nil)}},
		protocol.GetAllTopicConfig:             {{name: "all topics", adminSees: true, req: fixed(protocol.GetAllTopicConfig, nil, nil)}},
		protocol.GetAllConsumerOffset:          {{name: "all offsets", want: denied, adminSees: true, req: fixed(protocol.GetAllConsumerOffset, nil, nil)}},
		protocol.GetAllDelayOffset:             {{name: "all delay offsets", want: denied, req: fixed(protocol.GetAllDelayOffset, nil, nil)}},
		protocol.LockBatchMQ:                   {{name: "lock", want: denied, req: fixed(protocol.LockBatchMQ, nil, lock)}},
		protocol.UnlockBatchMQ:                 {{name: "unlock", want: denied, req: fixed(protocol.UnlockBatchMQ, nil, lock)}},
		protocol.EndTransaction: {{name: "commit another producer's half message naming an allowed topic", want: denied,
			req: func(e *probeEnv) *remoting.Command {
				return newReq(protocol.EndTransaction, &protocol.EndTransactionRequestHeader{ProducerGroup: secretPGroup,
					TranStateTableOffset: e.halfQueueOff, CommitLogOffset: e.halfPhy, CommitOrRollback: protocol.TransactionCommit,
					MsgID: e.halfUniq, TransactionID: e.halfUniq, Topic: openTopic}, nil)
			}}},
		protocol.GetTopicStatsInfo: {{name: "topic stats", want: denied, adminSees: true,
			req: fixed(protocol.GetTopicStatsInfo, &protocol.GetTopicStatsInfoRequestHeader{Topic: secretTopic}, nil)}},
		protocol.GetConsumeStats: {
			{name: "consume stats of the shared group", adminSees: true,
				req: fixed(protocol.GetConsumeStats, &protocol.GetConsumeStatsRequestHeader{ConsumerGroup: sharedGroup}, nil)},
			{name: "consume stats of the secret topic", want: denied, adminSees: true,
				req: fixed(protocol.GetConsumeStats, &protocol.GetConsumeStatsRequestHeader{ConsumerGroup: sharedGroup, Topic: secretTopic}, nil)},
			{name: "consume stats by topic list", want: denied, adminSees: true,
				req: fixed(protocol.GetConsumeStats, &protocol.GetConsumeStatsRequestHeader{ConsumerGroup: sharedGroup, TopicList: openTopic + ";" + secretTopic}, nil)},
		},
		protocol.GetConsumerConnectionList: {{name: "connections of the shared group", adminSees: true,
			req: fixed(protocol.GetConsumerConnectionList, &protocol.GetConsumerConnectionListRequestHeader{ConsumerGroup: sharedGroup}, nil)}},
		protocol.GetProducerConnectionList: {{name: "producer connections",
			req: fixed(protocol.GetProducerConnectionList, &protocol.GetProducerConnectionListRequestHeader{ProducerGroup: secretPGroup}, nil)}},
		protocol.UpdateAndCreateSubscriptionGroup: {{name: "create group", want: denied, req: fixed(protocol.UpdateAndCreateSubscriptionGroup, nil, sg)}},
		protocol.DeleteSubscriptionGroup: {{name: "delete group", want: denied, req: fixed(protocol.DeleteSubscriptionGroup,
			&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: secretGroup}, nil)}},
		protocol.QueryTopicConsumeByWho: {{name: "consumers of the secret topic", want: denied, adminSees: true, adminMark: sharedGroup,
			req: fixed(protocol.QueryTopicConsumeByWho, &protocol.QueryTopicConsumeByWhoRequestHeader{Topic: secretTopic}, nil)}},
		protocol.GetBrokerConfig:      {{name: "broker config", want: denied, req: fixed(protocol.GetBrokerConfig, nil, nil)}},
		protocol.GetBrokerRuntimeInfo: {{name: "runtime info", req: fixed(protocol.GetBrokerRuntimeInfo, nil, nil)}},
		protocol.InvokeBrokerToResetOffset: {{name: "reset offsets", want: denied, req: fixed(protocol.InvokeBrokerToResetOffset,
			&protocol.ResetOffsetRequestHeader{Topic: secretTopic, Group: atkGroup, Timestamp: 0, IsForce: true}, nil)}},
		protocol.ConsumeMessageDirectly: {{name: "have a secret record forwarded to the attacker's consumer", want: denied,
			req: func(e *probeEnv) *remoting.Command {
				return newReq(protocol.ConsumeMessageDirectly, &protocol.ConsumeMessageDirectlyResultRequestHeader{ConsumerGroup: atkGroup,
					ClientID: atkClientID, MsgID: e.plainID, Topic: openTopic}, nil)
			}}},
		protocol.GetConsumerRunningInfo: {{name: "running info of the shared group", want: denied, req: fixed(protocol.GetConsumerRunningInfo,
			&protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: sharedGroup, ClientID: adminClient}, nil)}},
		protocol.GetBrokerEpochCache: {{name: "epoch cache", want: denied, adminSees: true, adminMark: "epochList",
			req: fixed(protocol.GetBrokerEpochCache, nil, nil)}},
		protocol.FerryCancelScheduled: {{name: "cancel a scheduled message of the secret topic", want: denied,
			req: fixed(protocol.FerryCancelScheduled, &protocol.CancelScheduledRequestHeader{Topic: secretTopic, MsgID: "C0000202000000000000000000000001"}, nil)}},
		protocol.ViewBrokerStatsData: {{name: "traffic of the secret topic", want: denied, adminSees: true, adminMark: "statsMinute",
			req: fixed(protocol.ViewBrokerStatsData, &protocol.ViewBrokerStatsDataRequestHeader{StatsName: protocol.StatsTopicPutNums, StatsKey: secretTopic}, nil)}},
		// Name server.
		protocol.RegisterBroker: {{name: "register", ns: true, want: denied, req: fixed(protocol.RegisterBroker,
			&protocol.RegisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "127.0.0.1:1", ClusterName: "DefaultCluster", HAServerAddr: "127.0.0.1:2"}, nil)}},
		protocol.UnregisterBroker: {{name: "unregister broker", ns: true, want: denied, req: fixed(protocol.UnregisterBroker,
			&protocol.UnregisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "127.0.0.1:1", ClusterName: "DefaultCluster"}, nil)}},
		protocol.GetRouteInfoByTopic: {{name: "route", ns: true, want: denied, adminSees: true, adminMark: "brokerDatas", req: fixed(protocol.GetRouteInfoByTopic,
			&protocol.GetRouteInfoRequestHeader{Topic: secretTopic}, nil)}},
		protocol.GetBrokerClusterInfo:          {{name: "cluster info", ns: true, req: fixed(protocol.GetBrokerClusterInfo, nil, nil)}},
		protocol.GetAllTopicListFromNameServer: {{name: "topic list", ns: true, want: denied, adminSees: true, req: fixed(protocol.GetAllTopicListFromNameServer, nil, nil)}},
		protocol.DeleteTopicInNameSrv: {{name: "delete topic in name server", ns: true, want: denied, req: fixed(protocol.DeleteTopicInNameSrv,
			&protocol.DeleteTopicFromNamesrvRequestHeader{Topic: secretTopic}, nil)}},
		protocol.PutKVConfig: {{name: "put kv config", ns: true, want: denied, req: fixed(protocol.PutKVConfig,
			&protocol.PutKVConfigRequestHeader{Namespace: "ORDER_TOPIC_CONFIG", Key: secretTopic, Value: "x:1"}, nil)}},
		protocol.GetKVConfig: {{name: "get kv config", ns: true, want: denied, req: fixed(protocol.GetKVConfig,
			&protocol.GetKVConfigRequestHeader{Namespace: "ORDER_TOPIC_CONFIG", Key: secretTopic}, nil)}},
		protocol.DeleteKVConfig: {{name: "delete kv config", ns: true, want: denied, req: fixed(protocol.DeleteKVConfig,
			&protocol.DeleteKVConfigRequestHeader{Namespace: "ORDER_TOPIC_CONFIG", Key: secretTopic}, nil)}},
		protocol.GetKVListByNamespace: {{name: "kv list", ns: true, want: denied, req: fixed(protocol.GetKVListByNamespace,
			&protocol.GetKVListByNamespaceRequestHeader{Namespace: "ORDER_TOPIC_CONFIG"}, nil)}},
		protocol.WipeWritePermOfBroker: {{name: "drain broker", ns: true, want: denied, req: fixed(protocol.WipeWritePermOfBroker,
			&protocol.BrokerWritePermRequestHeader{BrokerName: "broker-a"}, nil)}},
		protocol.AddWritePermOfBroker: {{name: "undrain broker", ns: true, want: denied, req: fixed(protocol.AddWritePermOfBroker,
			&protocol.BrokerWritePermRequestHeader{BrokerName: "broker-a"}, nil)}},
	}
}

// leaks reports what of the secret an answer holds: a body of the denied topic, or
// (except in a refusal of a resource the request itself named) a denied name.
func leaks(resp *remoting.Command, refusalMayNameIt bool) string {
	var all bytes.Buffer
	all.WriteString(resp.Remark)
	for _, f := range resp.ExtFields {
		all.WriteString(f.Key + "=" + f.Value + ";")
	}
	all.Write(resp.Body)
	for _, b := range resp.BodyVec {
		all.Write(b)
	}
	if bytes.Contains(all.Bytes(), []byte(secretBody)) {
		return "a body of the denied topic"
	}
	refusal := refusalMayNameIt && resp.Code == int16(protocol.NoPermission)
	if !refusal && bytes.Contains(all.Bytes(), []byte(secretName)) {
		return "a denied name"
	}
	return ""
}

// TestACLEveryCodeHasRuleAndProbe: every request code the broker and the name server
// serve has an explicit row in acl.Rules() and a case in the probe table, so a new code
// cannot ship without deciding its rule and testing it.
func TestACLEveryCodeHasRuleAndProbe(t *testing.T) {
	rules, err := acl.Parse([]byte(probeAccounts))
	require.NoError(t, err)
	c := testutil.StartCluster(t,
		testutil.WithNameServerOptions(func(o *nameserver.Options) { o.ACL = rules }),
		testutil.WithBrokerOptions(func(o *broker.Options) { o.ACL, o.Credentials = rules, probeAdmin }))
	codes := append(c.Broker.RequestCodes(), c.NameServer.RequestCodes()...)
	require.Greater(t, len(codes), 40)
	cases := probeCases()
	for _, code := range codes {
		name := protocol.RequestCode(code).String()
		r, ok := acl.RuleOf(code)
		require.True(t, ok, "request code %s (%d) is served but has no row in acl.Rules()", name, code)
		require.True(t, r.Admin || r.Open || r.TopicPerm != 0 || r.GroupPerm != 0,
			"the row of %s (%d) decides nothing: mark it Admin, Open or give it a permission", name, code)
		require.NotEmpty(t, cases[protocol.RequestCode(code)], "request code %s (%d) has no case in probeCases", name, code)
	}
}

// TestACLProbe: with ACL on, an account denied one topic (and one group) but granted
// everything else gets nothing of that topic by any request code the broker or the name
// server serves: no record body, no name of it in a listing or statistic, no record
// forwarded to its consumer. Where a case says so, the admin's same request does get
// the secret, so the attacker's empty answer is the ACL's doing.
func TestACLProbe(t *testing.T) {
	e := startProbeEnv(t)
	cases := probeCases()
	codes := make([]protocol.RequestCode, 0, len(cases))
	for code := range cases {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		rule, _ := acl.RuleOf(int16(code)) // TestACLEveryCodeHasRuleAndProbe requires one
		for _, pc := range cases[code] {
			t.Run(fmt.Sprintf("%d %s", code, pc.name), func(t *testing.T) {
				addr := e.c.BrokerAddr
				if pc.ns {
					addr = e.c.NamesrvAddr
				}
				if pc.adminSees {
					resp := e.call(t, e.admin, probeAdmin, addr, pc.req(e))
					if pc.adminMark != "" {
						require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
						require.Contains(t, string(resp.Body), pc.adminMark)
					} else {
						require.NotEmpty(t, leaks(resp, false), "the admin's answer (code %d, %s) should hold the secret", resp.Code, resp.Remark)
					}
				}
				resp := e.call(t, e.atk, probeUser, addr, pc.req(e))
				if pc.want != 0 {
					require.Equal(t, int16(pc.want), resp.Code, resp.Remark)
				}
				require.Empty(t, leaks(resp, !rule.Referenced), "code %d remark %q", resp.Code, resp.Remark)
				if pc.attackerSees != "" {
					require.Contains(t, string(bytes.Join(resp.BodyVec, nil))+string(resp.Body), pc.attackerSees)
				}
			})
		}
	}
	e.forwardedMu.Lock()
	defer e.forwardedMu.Unlock()
	for _, b := range e.forwardedBody {
		require.NotContains(t, string(b), secretBody, "a secret record was forwarded to the attacker's consumer")
	}
	// The refused END_TRANSACTION left the half message uncommitted: nothing but the
	// plain message is in the secret topic's queue.
	resp := e.adminOK(t, newReq(protocol.GetMaxOffset, &protocol.GetMaxOffsetRequestHeader{Topic: secretTopic}, nil))
	var mh protocol.OffsetResponseHeader
	require.NoError(t, mh.DecodeExt(resp.ExtFields))
	require.Equal(t, int64(1), mh.Offset, "only the plain message is visible in %s", secretTopic)
	require.True(t, strings.HasPrefix(secretGroup, secretName) && strings.HasPrefix(secretTopic, secretName))
}

// TestACLHeldRetryPullFiltered: a pull of a retry topic held by long polling is answered
// later through the connection; that answer too leaves out the copies of a topic the
// caller may not read.
func TestACLHeldRetryPullFiltered(t *testing.T) {
	e := startProbeEnv(t)
	retry := "%RETRY%" + sharedGroup
	resp := e.adminOK(t, newReq(protocol.GetMaxOffset, &protocol.GetMaxOffsetRequestHeader{Topic: retry}, nil))
	var mh protocol.OffsetResponseHeader
	require.NoError(t, mh.DecodeExt(resp.ExtFields))

	req := newReq(protocol.PullMessage, &protocol.PullMessageRequestHeader{ConsumerGroup: sharedGroup, Topic: retry, QueueOffset: mh.Offset,
		MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription | protocol.PullFlagSuspend, SuspendTimeoutMillis: 20000, SubVersion: 1,
		Subscription: "*"}, nil)
	req.ExtFields = remoting.Ext(probeUser.SignFields(req.ExtFields, req.Body))
	type answer struct {
		resp *remoting.Command
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := e.atk.Invoke(ctx, e.c.BrokerAddr, req)
		got <- answer{resp, err}
	}()
	// Another copy of the secret record reaches the retry topic after its 1 s delay,
	// by when the pull is held, and wakes it. (Were the pull not held yet, it would
	// find the copy at once and the immediate answer, filtered as well, is checked.)
	e.adminOK(t, newReq(protocol.ConsumerSendMsgBack, &protocol.ConsumerSendMsgBackRequestHeader{Offset: e.plainPhy, Group: sharedGroup,
		DelayLevel: 1}, nil))
	a := <-got
	require.NoError(t, a.err)
	require.Equal(t, int16(protocol.Success), a.resp.Code, a.resp.Remark)
	require.Empty(t, leaks(a.resp, false))
	var ph protocol.PullMessageResponseHeader
	require.NoError(t, ph.DecodeExt(a.resp.ExtFields))
	require.Greater(t, ph.NextBeginOffset, mh.Offset, "the held pull was answered with the new copy's offset")
}

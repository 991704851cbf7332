package acl

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/protocol"
)

const testFile = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.{1,2}
  -
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
      - topicP=PUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
  - accessKey: pubonly1
    secretKey: pubsecret-xyz
    defaultTopicPerm: PUB
  - accessKey: whitelisted
    secretKey: white-secret
    whiteRemoteAddress: 172.16.5.*
dataVersion:
  - counter: 1
    timestamp: 1700000000000
`

var testSecrets = []string{"12345678", "pubsecret-xyz", "white-secret"}

func testACL(t testing.TB) *ACL {
	t.Helper()
	a, err := Parse([]byte(testFile))
	require.NoError(t, err)
	return a
}

// peer is an address in no white list.
var peer = netip.MustParseAddr("172.16.0.9")

// signed builds a request from peer signed with the given keys.
func signed(ak, sk string, code int16, body []byte, kv ...string) Request {
	var f []Field
	for i := 0; i+1 < len(kv); i += 2 {
		f = append(f, Field{Key: kv[i], Value: kv[i+1]})
	}
	return Request{Addr: peer, Code: code, Version: 317, Body: body,
		Fields: sign.Credentials{AccessKey: ak, SecretKey: sk}.SignFields(f, body)}
}

func rm(ak string, code int16, kv ...string) Request {
	return signed(ak, "12345678", code, []byte("body"), kv...)
}

func code(c protocol.RequestCode) int16 { return int16(c) }

func TestCheckRules(t *testing.T) {
	a := testACL(t)
	with := func(r Request, mut func(*Request)) Request { mut(&r); return r }
	setField := func(r Request, k, v string) Request {
		r.Fields = slices.Clone(r.Fields)
		for i := range r.Fields {
			if r.Fields[i].Key == k {
				r.Fields[i].Value = v
			}
		}
		return r
	}
	send := code(protocol.SendMessage)
	sendV2 := code(protocol.SendMessageV2)
	pull := code(protocol.PullMessage)
	hb := code(protocol.HeartBeat)

	cases := []struct {
		name string
		req  Request
		want error // nil: allowed
		// for ErrDenied
		kind, res string
		def       bool
	}{
		// 1. global white list
		{name: "global white list, no credentials, admin code", req: Request{Addr: netip.MustParseAddr("10.10.103.77"), Code: code(protocol.UpdateAndCreateTopic)}},
		{name: "global white list braces", req: Request{Addr: netip.MustParseAddr("192.168.0.2"), Code: send, Fields: []Field{{Key: "topic", Value: "topicA"}}}},
		{name: "global white list IPv4-mapped peer", req: Request{Addr: netip.MustParseAddr("::ffff:192.168.0.1"), Code: send}},
		{name: "global white list ignores a bad signature", req: with(rm("RocketMQ", send, "topic", "topicA"), func(r *Request) { r.Addr = netip.MustParseAddr("10.10.103.1"); r.Body = []byte("x") })},
		// 2. access key
		{name: "no credentials outside the white list", req: Request{Addr: netip.MustParseAddr("192.168.0.3"), Code: send}, want: ErrAddressNotAllowed},
		{name: "no credentials, unknown address", req: Request{Code: send}, want: ErrAddressNotAllowed},
		{name: "empty access key", req: Request{Addr: peer, Code: send, Fields: []Field{{Key: sign.FieldAccessKey}}}, want: ErrAddressNotAllowed},
		{name: "unknown access key", req: signed("nobody12", "12345678", send, nil, "topic", "topicB"), want: ErrUnknownAccessKey},
		// 3. account white list: a bypass, as in RocketMQ
		{name: "account white list, unsigned admin code", req: Request{Addr: netip.MustParseAddr("192.168.1.9"), Code: code(protocol.DeleteTopicInBroker), Fields: []Field{{Key: sign.FieldAccessKey, Value: "rocketmq2"}}}},
		{name: "account white list, unsigned, no permission checks", req: Request{Addr: netip.MustParseAddr("172.16.5.1"), Code: send, Fields: []Field{{Key: sign.FieldAccessKey, Value: "whitelisted"}, {Key: "topic", Value: "anything"}}}},
		{name: "account white list of another account does not apply", req: Request{Addr: netip.MustParseAddr("192.168.1.9"), Code: send, Fields: []Field{{Key: sign.FieldAccessKey, Value: "RocketMQ"}}}, want: ErrBadSignature},
		// 4. signature
		{name: "not signed", req: Request{Addr: peer, Code: send, Fields: []Field{{Key: sign.FieldAccessKey, Value: "RocketMQ"}, {Key: "topic", Value: "topicB"}}}, want: ErrBadSignature},
		{name: "wrong secret", req: signed("RocketMQ", "87654321", send, nil, "topic", "topicB"), want: ErrBadSignature},
		{name: "body altered", req: with(rm("RocketMQ", send, "topic", "topicB"), func(r *Request) { r.Body = []byte("bodY") }), want: ErrBadSignature},
		{name: "body dropped", req: with(rm("RocketMQ", send, "topic", "topicB"), func(r *Request) { r.Body = nil }), want: ErrBadSignature},
		{name: "field altered", req: setField(rm("RocketMQ", send, "topic", "topicB"), "topic", "topicA"), want: ErrBadSignature},
		{name: "access key swapped", req: setField(signed("pubonly1", "pubsecret-xyz", send, nil, "topic", "topicB"), sign.FieldAccessKey, "RocketMQ"), want: ErrBadSignature},
		{name: "field added", req: with(rm("RocketMQ", send, "topic", "topicB"), func(r *Request) { r.Fields = append(slices.Clone(r.Fields), Field{Key: "queueId", Value: "3"}) }), want: ErrBadSignature},
		{name: "signature truncated", req: setField(rm("RocketMQ", send, "topic", "topicB"), sign.FieldSignature, "abc"), want: ErrBadSignature},
		{name: "signature too long", req: setField(rm("RocketMQ", send, "topic", "topicB"), sign.FieldSignature, strings.Repeat("A", 200)), want: ErrBadSignature},
		// 5./6. admin
		{name: "admin code, admin account", req: signed("rocketmq2", "12345678", code(protocol.UpdateAndCreateTopic), nil, "topic", "x")},
		{name: "admin account ignores perms", req: signed("rocketmq2", "12345678", send, nil, "topic", "whatever")},
		{name: "admin code, normal account", req: rm("RocketMQ", code(protocol.UpdateAndCreateTopic), "topic", "topicB"), want: ErrAdminOnly},
		{name: "name-server KV write needs admin", req: rm("RocketMQ", code(protocol.PutKVConfig)), want: ErrAdminOnly},
		{name: "register broker needs admin", req: rm("RocketMQ", code(protocol.RegisterBroker)), want: ErrAdminOnly},
		{name: "ACL config update needs admin", req: rm("RocketMQ", 50), want: ErrAdminOnly},
		// 7. resources
		{name: "send PUB|SUB topic", req: rm("RocketMQ", send, "topic", "topicB")},
		{name: "send V2 PUB topic", req: rm("RocketMQ", sendV2, "a", "pg", "b", "topicP")},
		{name: "send batch PUB topic", req: rm("RocketMQ", code(protocol.SendBatchMessage), "b", "topicP")},
		{name: "send DENY topic", req: rm("RocketMQ", send, "topic", "topicA"), want: ErrDenied, kind: "topic", res: "topicA"},
		{name: "send SUB-only topic", req: rm("RocketMQ", sendV2, "b", "topicC"), want: ErrDenied, kind: "topic", res: "topicC"},
		{name: "send default DENY topic", req: rm("RocketMQ", send, "topic", "other"), want: ErrDenied, kind: "topic", res: "other", def: true},
		{name: "send reply needs PUB", req: rm("RocketMQ", code(protocol.SendReplyMessageV2), "b", "other"), want: ErrDenied, kind: "topic", res: "other", def: true},
		{name: "send to retry topic is group SUB", req: rm("RocketMQ", send, "topic", "%RETRY%groupC")},
		{name: "send to retry topic of DENY group", req: rm("RocketMQ", sendV2, "b", "%RETRY%groupA"), want: ErrDenied, kind: "group", res: "groupA"},
		{name: "send to trace topic always allowed", req: rm("RocketMQ", send, "topic", protocol.TraceTopic)},
		{name: "pull SUB topic, SUB group", req: rm("RocketMQ", pull, "topic", "topicC", "consumerGroup", "groupC")},
		{name: "pull default group SUB", req: rm("RocketMQ", pull, "topic", "topicB", "consumerGroup", "someGroup")},
		{name: "pull DENY group", req: rm("RocketMQ", pull, "topic", "topicC", "consumerGroup", "groupA"), want: ErrDenied, kind: "group", res: "groupA"},
		{name: "pull PUB-only topic", req: rm("RocketMQ", pull, "topic", "topicP", "consumerGroup", "groupC"), want: ErrDenied, kind: "topic", res: "topicP"},
		{name: "lite pull", req: rm("RocketMQ", code(protocol.LitePullMessage), "topic", "topicA", "consumerGroup", "groupC"), want: ErrDenied, kind: "topic", res: "topicA"},
		{name: "pull retry topic", req: rm("RocketMQ", pull, "topic", "%RETRY%groupB", "consumerGroup", "groupB")},
		{name: "update offset", req: rm("RocketMQ", code(protocol.UpdateConsumerOffset), "topic", "topicC", "consumerGroup", "groupA"), want: ErrDenied, kind: "group", res: "groupA"},
		{name: "query offset", req: rm("RocketMQ", code(protocol.QueryConsumerOffset), "topic", "topicA", "consumerGroup", "groupC"), want: ErrDenied, kind: "topic", res: "topicA"},
		{name: "get max offset", req: rm("RocketMQ", code(protocol.GetMaxOffset), "topic", "topicC")},
		{name: "query message", req: rm("RocketMQ", code(protocol.QueryMessage), "topic", "topicP"), want: ErrDenied, kind: "topic", res: "topicP"},
		{name: "send back needs group SUB", req: rm("RocketMQ", code(protocol.ConsumerSendMsgBack), "group", "groupA", "originTopic", "topicC"), want: ErrDenied, kind: "group", res: "groupA"},
		{name: "consumer list", req: rm("RocketMQ", code(protocol.GetConsumerListByGroup), "consumerGroup", "groupC")},
		{name: "unregister producer only", req: rm("RocketMQ", code(protocol.UnregisterClient), "producerGroup", "groupA", "clientID", "c")},
		{name: "heartbeat subscriptions", req: with(rm("RocketMQ", hb), func(r *Request) {
			r.Topics = []string{"topicC", "%RETRY%groupB", ""}
			r.Groups = []string{"groupB", ""}
		})},
		{name: "heartbeat DENY group", req: with(rm("RocketMQ", hb), func(r *Request) { r.Topics = []string{"topicC"}; r.Groups = []string{"groupC", "groupA"} }), want: ErrDenied, kind: "group", res: "groupA"},
		{name: "heartbeat DENY subscription", req: with(rm("RocketMQ", hb), func(r *Request) { r.Topics = []string{"topicC", "topicA"} }), want: ErrDenied, kind: "topic", res: "topicA"},
		{name: "lock batch from body", req: with(rm("RocketMQ", code(protocol.LockBatchMQ)), func(r *Request) { r.Topics = []string{"topicB"}; r.Groups = []string{"groupA"} }), want: ErrDenied, kind: "group", res: "groupA"},
		{name: "view by id with known topic", req: with(rm("RocketMQ", code(protocol.ViewMessageByID), "offset", "42"), func(r *Request) { r.Topics = []string{"topicA"} }), want: ErrDenied, kind: "topic", res: "topicA"},
		{name: "view by id without topic", req: rm("RocketMQ", code(protocol.ViewMessageByID), "offset", "42")},
		{name: "signature-only code ignores topics", req: with(rm("RocketMQ", code(protocol.GetBrokerClusterInfo), "topic", "topicA"), func(r *Request) { r.Topics = []string{"topicA"} })},
		{name: "route of a denied topic", req: rm("RocketMQ", code(protocol.GetRouteInfoByTopic), "topic", "topicA"), want: ErrDenied, kind: "topic", res: "topicA"},
		{name: "route of a granted topic", req: rm("RocketMQ", code(protocol.GetRouteInfoByTopic), "topic", "topicC")},
		{name: "route of the auto-create template", req: rm("RocketMQ", code(protocol.GetRouteInfoByTopic), "topic", protocol.AutoCreateTopicKey)},
		{name: "route of the trace topic", req: rm("RocketMQ", code(protocol.GetRouteInfoByTopic), "topic", protocol.TraceTopic)},
		{name: "default permission never covers the schedule topic", req: signed("pubonly1", "pubsecret-xyz", send, []byte("x"), "topic", protocol.ScheduleTopic), want: ErrDenied, kind: "topic", res: protocol.ScheduleTopic, def: true},
		{name: "the name server's topic list needs admin", req: rm("RocketMQ", code(protocol.GetAllTopicListFromNameServer)), want: ErrAdminOnly},
		{name: "unknown code", req: rm("RocketMQ", 9999, "topic", "topicA")},
		{name: "pub-only account cannot pull", req: signed("pubonly1", "pubsecret-xyz", pull, nil, "topic", "t1", "consumerGroup", "g1"), want: ErrDenied, kind: "topic", res: "t1", def: true},
		{name: "pub-only account sends", req: signed("pubonly1", "pubsecret-xyz", send, []byte("x"), "topic", "t1")},
		{name: "pub-only account group default DENY", req: signed("pubonly1", "pubsecret-xyz", code(protocol.GetConsumerListByGroup), nil, "consumerGroup", "g1"), want: ErrDenied, kind: "group", res: "g1", def: true},
		// 0. duplicates
		{name: "duplicate field", req: with(rm("RocketMQ", send, "topic", "topicB"), func(r *Request) {
			r.Fields = append(slices.Clone(r.Fields), Field{Key: "topic", Value: "topicA"})
		}), want: ErrDuplicateField},
		{name: "duplicate signature", req: with(rm("RocketMQ", send, "topic", "topicB"), func(r *Request) {
			r.Fields = append(slices.Clone(r.Fields), Field{Key: sign.FieldSignature, Value: "x"})
		}), want: ErrDuplicateField},
		{name: "duplicate even from the global white list", req: Request{Addr: netip.MustParseAddr("10.10.103.1"), Fields: []Field{{Key: "a", Value: "1"}, {Key: "a", Value: "1"}}}, want: ErrDuplicateField},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := a.Check(c.req)
			if c.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.ErrorIs(t, err, c.want)
			require.ErrorIs(t, err, ErrNoPermission)
			assertSafe(t, err, c.req)
			if errors.Is(c.want, ErrDenied) {
				var d *DeniedError
				require.ErrorAs(t, err, &d)
				require.Equal(t, c.kind, d.Kind)
				require.Equal(t, c.res, d.Name)
				require.Equal(t, c.def, d.Default)
				require.Equal(t, c.req.Code, d.Code)
			}
		})
	}
}

// assertSafe checks that an error text repeats no secret and no expected signature.
func assertSafe(t *testing.T, err error, req Request) {
	t.Helper()
	msg := err.Error()
	for _, s := range testSecrets {
		require.NotContains(t, msg, s)
	}
	for _, sk := range testSecrets {
		sig := sign.Sign(sk, req.Fields, req.Body)
		require.NotContains(t, msg, sig)
	}
	if sig, ok := fieldValue(req.Fields, sign.FieldSignature); ok && sig != "" {
		require.NotContains(t, msg, sig)
	}
	require.Less(t, len(msg), 400)
}

func TestCheckErrorTexts(t *testing.T) {
	a := testACL(t)
	err := a.Check(rm("RocketMQ", code(protocol.SendMessage), "topic", "topicA"))
	require.EqualError(t, err, `acl: no permission: denied: access key "RocketMQ" needs PUB on topic "topicA" for SEND_MESSAGE (10), has DENY (explicit permission)`)
	err = a.Check(rm("RocketMQ", code(protocol.UpdateAndCreateTopic)))
	require.EqualError(t, err, `acl: no permission: admin only: UPDATE_AND_CREATE_TOPIC (17) needs an admin account, access key "RocketMQ" is not one`)
	err = a.Check(rm("RocketMQ", 51))
	require.ErrorContains(t, err, "DELETE_ACL_CONFIG (51)")
	err = a.Check(signed(strings.Repeat("k", 1000), "12345678", 10, nil))
	require.ErrorIs(t, err, ErrUnknownAccessKey)
	require.Less(t, len(err.Error()), 150)
	err = a.Check(Request{Addr: peer, Fields: []Field{{Key: "\x00\xff", Value: "1"}, {Key: "\x00\xff", Value: "2"}}})
	require.EqualError(t, err, `acl: no permission: duplicate ext field "\x00\xff"`)
	err = a.Check(Request{Addr: peer})
	require.EqualError(t, err, "acl: no permission: address not allowed: 172.16.0.9 is not in the global white list and the request has no AccessKey")
	err = a.Check(signed("RocketMQ", "wrong-secret", 10, nil))
	require.EqualError(t, err, `acl: no permission: bad signature: signature mismatch for access key "RocketMQ"`)
}

func TestCheckFieldOrderDoesNotMatter(t *testing.T) {
	a := testACL(t)
	rng := rand.New(rand.NewPCG(1, 2))
	req := rm("RocketMQ", code(protocol.SendMessageV2),
		"a", "pg", "b", "topicB", "c", "TBW102", "d", "4", "e", "1", "f", "0", "g", "1700000000000",
		"h", "0", "i", "KEYS\x01k\x02UNIQ_KEY\x01ABC", "j", "0", "k", "false", "m", "false", "bname", "broker-a")
	for range 200 {
		r := req
		r.Fields = slices.Clone(req.Fields)
		rng.Shuffle(len(r.Fields), func(i, j int) { r.Fields[i], r.Fields[j] = r.Fields[j], r.Fields[i] })
		require.NoError(t, a.Check(r))
		// Any key repeated, whichever value, is refused.
		i := rng.IntN(len(r.Fields))
		dup := r
		dup.Fields = slices.Insert(slices.Clone(r.Fields), rng.IntN(len(r.Fields)+1), r.Fields[i])
		require.ErrorIs(t, a.Check(dup), ErrDuplicateField)
		dup.Fields[slices.IndexFunc(dup.Fields, func(f Field) bool { return f.Key == r.Fields[i].Key })].Value += "x"
		require.ErrorIs(t, a.Check(dup), ErrDuplicateField)
	}
	// Many fields take the sort.SortFunc path.
	var kv []string
	for i := range 100 {
		kv = append(kv, "k"+strings.Repeat("z", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)), "v")
	}
	big := rm("RocketMQ", 9999, kv...)
	rng.Shuffle(len(big.Fields), func(i, j int) { big.Fields[i], big.Fields[j] = big.Fields[j], big.Fields[i] })
	require.NoError(t, a.Check(big))
	big.Fields = append(big.Fields, big.Fields[17])
	require.ErrorIs(t, a.Check(big), ErrDuplicateField)
}

func TestCheckSecurityTokenForms(t *testing.T) {
	a := testACL(t)
	header := []Field{{Key: "topic", Value: "topicB"}, {Key: "bname", Value: "b"}}
	body := []byte("hello")
	// Java form: the token is signed.
	java := sign.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678", SecurityToken: "tok"}.SignFields(header, body)
	require.NoError(t, a.Check(Request{Addr: peer, Code: 10, Fields: java, Body: body}))
	// Go client form: signed without the token, token added afterwards.
	signedPart := append(slices.Clone(header), Field{Key: sign.FieldAccessKey, Value: "RocketMQ"})
	goForm := append(slices.Clone(signedPart),
		Field{Key: sign.FieldSignature, Value: sign.Sign("12345678", signedPart, body)},
		Field{Key: sign.FieldSecurityToken, Value: "tok"})
	require.NoError(t, a.Check(Request{Addr: peer, Code: 10, Fields: goForm, Body: body}))
	// Neither form with a wrong secret.
	bad := sign.Credentials{AccessKey: "RocketMQ", SecretKey: "nope-nope", SecurityToken: "tok"}.SignFields(header, body)
	require.ErrorIs(t, a.Check(Request{Addr: peer, Code: 10, Fields: bad, Body: body}), ErrBadSignature)
}

func TestCheckUniqueKeyQueryByVersion(t *testing.T) {
	a := testACL(t)
	header := []Field{{Key: "topic", Value: "topicC"}, {Key: "key", Value: "K"}, {Key: "maxNum", Value: "32"}}
	// An old client (version <= 399) signs the header, then adds the flag.
	old := append(sign.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}.SignFields(header, nil),
		Field{Key: uniqueKeyQueryField, Value: "true"})
	req := Request{Addr: peer, Code: 12, Version: 399, Fields: old}
	require.NoError(t, a.Check(req))
	req.Version = 400
	require.ErrorIs(t, a.Check(req), ErrBadSignature)
	// A newer client signs the flag too.
	newer := sign.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}.SignFields(
		append(slices.Clone(header), Field{Key: uniqueKeyQueryField, Value: "true"}), nil)
	require.NoError(t, a.Check(Request{Addr: peer, Code: 12, Version: 500, Fields: newer}))
}

func TestRulesTable(t *testing.T) {
	seen := map[int16]bool{}
	for _, r := range Rules() {
		require.False(t, seen[r.Code], "code %d twice", r.Code)
		seen[r.Code] = true
		require.NotEmpty(t, r.Name)
		if pc := protocol.RequestCode(r.Code); pc.Known() {
			require.Equal(t, pc.String(), r.Name, "code %d", r.Code)
		}
		if r.Admin {
			require.Zero(t, r.TopicPerm)
			require.Zero(t, r.GroupPerm)
		}
		if r.TopicField != "" {
			require.NotZero(t, r.TopicPerm)
		}
		if r.GroupField != "" {
			require.NotZero(t, r.GroupPerm)
		}
	}
	// RocketMQ's ADMIN_CODE set is a subset.
	for _, c := range []int16{17, 25, 215, 200, 207, 513, 50, 51, 52} {
		require.True(t, seen[c], "admin code %d", c)
	}
}

func TestPerm(t *testing.T) {
	for s, want := range map[string]Perm{"DENY": PermDeny, "PUB": PermPub, " SUB ": PermSub, "PUB|SUB": PermPub | PermSub, "SUB|PUB": PermPub | PermSub} {
		p, err := ParsePerm(s)
		require.NoError(t, err)
		require.Equal(t, want, p)
	}
	for _, s := range []string{"", "pub", "ANY", "PUB | SUB", "PUB|SUB|DENY", "READ"} {
		_, err := ParsePerm(s)
		require.Error(t, err, s)
	}
	require.Equal(t, "PUB|SUB", (PermPub | PermSub).String())
	require.Equal(t, "NONE", Perm(0).String())
	require.Equal(t, "DENY|PUB", (PermDeny | PermPub).String())
	require.Equal(t, "SUB|0x10", (PermSub | 0x10).String())
	// RocketMQ's checkPermission.
	require.False(t, (PermDeny | PermPub).Permits(PermPub))
	require.True(t, PermPub.Permits(PermAny))
	require.True(t, PermSub.Permits(PermAny))
	require.False(t, PermDeny.Permits(PermAny))
	require.False(t, PermSub.Permits(PermPub))
	require.True(t, (PermPub | PermSub).Permits(PermSub))
	require.False(t, PermSub.Permits(0))
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrDuplicateField, ErrAddressNotAllowed, ErrUnknownAccessKey, ErrBadSignature, ErrAdminOnly, ErrDenied}
	for i, e := range all {
		require.ErrorIs(t, e, ErrNoPermission)
		for j, f := range all {
			require.Equal(t, i == j, errors.Is(e, f))
		}
	}
	require.NotErrorIs(t, ErrInvalidConfig, ErrNoPermission)
}

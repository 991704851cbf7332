package acl

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the algorithm under test
	"encoding/base64"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/remoting"
)

// goClientSign restates, step by step, what rocketmq-client-go's internal/remote
// ACLInterceptor does (it is in an internal package, so it cannot be called): it puts
// AccessKey (and SecurityToken) in a map but only AccessKey and the request's ext keys
// in the order list, sorts the list with strings.Compare, concatenates the mapped values,
// appends the body, and signs with HMAC-SHA1, base64 StdEncoding.
func goClientSign(ak, sk, token string, ext map[string]string, body []byte) (sig string, sent map[string]string) {
	m := make(map[string]string)
	order := make([]string, 1)
	m["AccessKey"] = ak
	order[0] = "AccessKey"
	if token != "" {
		m["SecurityToken"] = token
	}
	for k, v := range ext {
		m[k] = v
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool { return strings.Compare(order[i], order[j]) < 0 })
	content := ""
	for idx := range order {
		content += m[order[idx]]
	}
	buf := make([]byte, len(content)+len(body))
	copy(buf, content)
	copy(buf[len(content):], body)
	mac := hmac.New(sha1.New, []byte(sk))
	mac.Write(buf)
	sig = base64.StdEncoding.EncodeToString(mac.Sum(nil))
	sent = map[string]string{}
	for k, v := range ext {
		sent[k] = v
	}
	sent["Signature"] = sig
	sent["AccessKey"] = ak
	if token != "" {
		sent["SecurityToken"] = token
	}
	return sig, sent
}

func TestSignKnownVectors(t *testing.T) {
	// rocketmq-client-go internal/remote/interceptor_test.go: calculateSignature.
	require.Equal(t, "tAb/54Rwwcq+pbH8Loi7FWX4QSQ=",
		sign.Sign("adiaushdiaushd", nil, []byte("Hello RocketMQ Client ACL Feature")))
	// The same data split across fields in key order, Signature ignored.
	require.Equal(t, "tAb/54Rwwcq+pbH8Loi7FWX4QSQ=",
		sign.Sign("adiaushdiaushd", []Field{
			{Key: "b", Value: "RocketMQ Client "}, {Key: "Signature", Value: "ignored"},
			{Key: "a", Value: "Hello "}, {Key: "c", Value: "ACL"},
		}, []byte(" Feature")))
	// A vector computed once with the algorithm (a SEND_MESSAGE_V2 as the Go client
	// builds it); pins the key order (uppercase before lowercase) and the body.
	fields := []Field{
		{Key: "a", Value: "PG"}, {Key: "b", Value: "TopicTest"}, {Key: "c", Value: "TBW102"},
		{Key: "d", Value: "4"}, {Key: "e", Value: "0"}, {Key: "bname", Value: "broker-a"},
		{Key: "AccessKey", Value: "RocketMQ"},
	}
	sig := sign.Sign("12345678", fields, []byte("Hello"))
	want, _ := goClientSign("RocketMQ", "12345678", "",
		map[string]string{"a": "PG", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "0", "bname": "broker-a"}, []byte("Hello"))
	require.Equal(t, want, sig)
	mac := hmac.New(sha1.New, []byte("12345678"))
	mac.Write([]byte("RocketMQPGTopicTestbroker-aTBW10240Hello")) // AccessKey, a, b, bname, c, d, e, body
	require.Equal(t, base64.StdEncoding.EncodeToString(mac.Sum(nil)), sig)
}

func TestSignMatchesGoClientOnRandomRequests(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	randStr := func(n int) string {
		const alphabet = "abcXYZ019_-%|é\x00 "
		b := make([]byte, 0, n)
		for range n {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		return string(b)
	}
	a, err := New(Config{Accounts: []AccountConfig{{AccessKey: "access-key-1", SecretKey: "secret-key-1"}}})
	require.NoError(t, err)
	for range 500 {
		ext := map[string]string{}
		for range rng.IntN(12) {
			k := randStr(1 + rng.IntN(6))
			if k == "AccessKey" || k == "Signature" || k == "SecurityToken" {
				continue
			}
			ext[k] = randStr(rng.IntN(20))
		}
		body := []byte(randStr(rng.IntN(64)))
		token := ""
		if rng.IntN(3) == 0 {
			token = randStr(1 + rng.IntN(10))
		}
		sig, sent := goClientSign("access-key-1", "secret-key-1", token, ext, body)

		// Sign over what the Go client signs (header fields + AccessKey).
		var signedFields []Field
		for k, v := range ext {
			signedFields = append(signedFields, Field{Key: k, Value: v})
		}
		signedFields = append(signedFields, Field{Key: "AccessKey", Value: "access-key-1"})
		require.Equal(t, sig, sign.Sign("secret-key-1", signedFields, body))
		if token == "" {
			got := sign.Credentials{AccessKey: "access-key-1", SecretKey: "secret-key-1"}.SignFields(signedFields[:len(signedFields)-1], body)
			require.Equal(t, sent, remoting.Ext(got).Map())
		}

		// Check accepts exactly what the Go client puts on the wire, in any order.
		var wire []Field
		for k, v := range sent {
			wire = append(wire, Field{Key: k, Value: v})
		}
		require.NoError(t, a.Check(Request{Addr: peer, Code: 10, Fields: wire, Body: body}), "ext %q token %q", ext, token)
		body = append(body, 'x')
		require.ErrorIs(t, a.Check(Request{Addr: peer, Code: 10, Fields: wire, Body: body}), ErrBadSignature)
	}
}

func TestSignFieldsReplacesCredentialFields(t *testing.T) {
	c := sign.Credentials{AccessKey: "ak-123456", SecretKey: "sk-123456", SecurityToken: "tok"}
	in := []Field{{Key: "topic", Value: "T"}, {Key: "AccessKey", Value: "old"}, {Key: "Signature", Value: "old"}, {Key: "SecurityToken", Value: "old"}}
	out := c.SignFields(in, []byte("b"))
	require.Equal(t, "old", in[1].Value, "input untouched")
	m := remoting.Ext(out).Map()
	require.Len(t, out, 4)
	require.Equal(t, "ak-123456", m["AccessKey"])
	require.Equal(t, "tok", m["SecurityToken"])
	// Java form: the token is signed.
	require.Equal(t, sign.Sign("sk-123456", []Field{{Key: "topic", Value: "T"}, {Key: "AccessKey", Value: "ak-123456"}, {Key: "SecurityToken", Value: "tok"}}, []byte("b")), m["Signature"])
}

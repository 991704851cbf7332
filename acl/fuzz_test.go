package acl

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ferrymq/ferry/acl/sign"
)

func FuzzLoad(f *testing.F) {
	f.Add([]byte(testFile))
	f.Add([]byte(upstreamSample))
	f.Add([]byte("accounts: []\n"))
	f.Add([]byte("globalWhiteRemoteAddresses: ['2001:db8::1-ff:*', '192.168.0.{1,2}', '10.*.*.*']\naccounts: []\n"))
	f.Add([]byte("accounts:\n  - {accessKey: abcdefg, secretKey: hijklmn, topicPerms: [a=PUB, b=SUB|PUB], whiteRemoteAddress: '1.2.3.4,::1'}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("accounts: [{accessKey: abc}]\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error does not wrap ErrInvalidConfig: %v", err)
			}
			return
		}
		c, err := DecodeConfig(data)
		if err != nil {
			t.Fatalf("accepted but does not decode again: %v", err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted but does not validate: %v", err)
		}
		// The accepted config survives a YAML round trip with the same rules.
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		b, err := Parse(out)
		if err != nil {
			t.Fatalf("round trip refused: %v\n%s", err, out)
		}
		if a.NumAccounts() != b.NumAccounts() || len(a.global) != len(b.global) {
			t.Fatalf("round trip changed the rules")
		}
		// Every account's own signed request authenticates.
		for _, ac := range c.Accounts {
			req := Request{Addr: netip.MustParseAddr("203.0.113.7"), Code: 9999, Body: data,
				Fields: sign.Credentials{AccessKey: ac.AccessKey, SecretKey: ac.SecretKey}.SignFields(nil, data)}
			if err := a.Check(req); err != nil && !errors.Is(err, ErrNoPermission) {
				t.Fatalf("check: %v", err)
			} else if errors.Is(err, ErrBadSignature) || errors.Is(err, ErrUnknownAccessKey) {
				t.Fatalf("own signature refused: %v", err)
			}
		}
	})
}

func FuzzCheck(f *testing.F) {
	f.Add([]byte{172, 16, 0, 9}, int16(10), int16(317), []byte("topic\x00topicB\x00bname\x00b"), []byte("body"), "topicC", "groupC", true)
	f.Add([]byte{10, 10, 103, 1}, int16(17), int16(500), []byte("x\x00y\x00x\x00z"), []byte(nil), "", "", false)
	f.Add([]byte("\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"), int16(11), int16(0), []byte("topic\x00%RETRY%groupA\x00consumerGroup\x00groupA"), []byte{}, "%RETRY%", "", true)
	f.Add([]byte{}, int16(34), int16(-1), []byte("AccessKey\x00RocketMQ\x00Signature\x00AAAA"), []byte("{}"), strings.Repeat("t", 300), "g", false)
	f.Add([]byte{192, 168, 1, 1}, int16(15), int16(399), []byte("_UNIQUE_KEY_QUERY\x00true\x00SecurityToken\x00t"), []byte("b"), "RMQ_SYS_TRACE_TOPIC", "groupB", true)
	a, err := Parse([]byte(testFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, addr []byte, code, version int16, blob, body []byte, topic, group string, signed bool) {
		ip, _ := netip.AddrFromSlice(addr)
		var fields []Field
		parts := bytes.Split(blob, []byte{0})
		for i := 0; i+1 < len(parts); i += 2 {
			fields = append(fields, Field{Key: string(parts[i]), Value: string(parts[i+1])})
		}
		if signed {
			fields = sign.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}.SignFields(fields, body)
		}
		req := Request{Addr: ip, Code: code, Version: version, Fields: fields, Body: body,
			Topics: []string{topic}, Groups: []string{group}}
		err := a.Check(req)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrNoPermission) {
			t.Fatalf("refusal does not wrap ErrNoPermission: %v", err)
		}
		msg := err.Error()
		if len(msg) > 600 {
			t.Fatalf("error text too long (%d): %q", len(msg), msg)
		}
		for _, s := range testSecrets {
			if strings.Contains(msg, s) && !strings.Contains(string(blob)+topic+group, s) {
				t.Fatalf("error text leaks a secret: %q", msg)
			}
		}
		if signed && errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrDuplicateField) {
			// A correctly signed request fails only if a field the signer could not
			// control is involved: the version-dependent _UNIQUE_KEY_QUERY rule.
			if _, ok := fieldValue(fields, uniqueKeyQueryField); !ok || version > lastVersionSkippingUniqueKeyQuery {
				t.Fatalf("signed request refused: %v", err)
			}
		}
	})
}

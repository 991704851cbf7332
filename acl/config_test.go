package acl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// upstreamSample is the shape of RocketMQ's distribution/conf/plain_acl.yml.
const upstreamSample = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

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
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
`

func TestLoadUpstreamSample(t *testing.T) {
	a, err := Parse([]byte(upstreamSample))
	require.NoError(t, err)
	require.Equal(t, 2, a.NumAccounts())
	require.Equal(t, "12345678", string(a.accounts["RocketMQ"].secret))
	require.Equal(t, PermSub, a.accounts["RocketMQ"].defGroup)
	require.Equal(t, PermDeny, a.accounts["rocketmq2"].defTopic) // unset: DENY
	require.Equal(t, PermPub|PermSub, a.accounts["RocketMQ"].groups["groupB"])
	require.Len(t, a.global, 2)

	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(upstreamSample), 0o600))
	a, err = LoadFile(path)
	require.NoError(t, err)
	require.Equal(t, 2, a.NumAccounts())
	_, err = LoadFile(filepath.Join(t.TempDir(), "missing.yml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestLoadErrors(t *testing.T) {
	const secret = "S3cr3t!"
	acct := func(lines ...string) string {
		return "accounts:\n  - " + strings.Join(lines, "\n    ") + "\n"
	}
	cases := []struct {
		name, yaml string
		want       []string // substrings, each must appear
	}{
		{"empty", "", []string{"empty document"}},
		{"blank", " \n\t\n", []string{"empty document"}},
		{"comment only", "# nothing\n", []string{"empty document"}},
		{"syntax", "accounts: [", []string{"YAML"}},
		{"two documents", "accounts: []\n---\naccounts: []\n", []string{"more than one YAML document"}},
		{"unknown key", "acounts: []\n", []string{"YAML", "acounts"}},
		{"unknown account key", acct("accessKey: abcdefg", "secretKey: "+secret, "admn: true"), []string{"admn"}},
		{"list for a string", acct("accessKey: abcdefg", "secretKey: "+secret, "whiteRemoteAddress: [1.2.3.4]"), []string{"YAML"}},
		{"bad bool", acct("accessKey: abcdefg", "secretKey: "+secret, "admin: maybe"), []string{"YAML"}},
		{"missing access key", acct("secretKey: " + secret), []string{"accounts[0].accessKey: missing"}},
		{"missing secret key", acct("accessKey: abcdefg"), []string{`accounts[0] (accessKey "abcdefg").secretKey: missing`}},
		{"short access key", acct("accessKey: abcdef", "secretKey: "+secret), []string{`accounts[0] (accessKey "abcdef").accessKey: shorter than 7 characters`}},
		{"short secret key", acct("accessKey: abcdefg", "secretKey: 123456"), []string{`secretKey: shorter than 7 characters`}},
		{"blank-padded key", acct("accessKey: ' abcdefg'", "secretKey: "+secret), []string{"leading or trailing blanks"}},
		{"duplicate access key", "accounts:\n  - {accessKey: abcdefg, secretKey: " + secret + "}\n  - {accessKey: abcdefg, secretKey: " + secret + "}\n",
			[]string{`accounts[1] (accessKey "abcdefg").accessKey: duplicate of accounts[0]`}},
		{"bad default topic perm", acct("accessKey: abcdefg", "secretKey: "+secret, "defaultTopicPerm: READ"), []string{`defaultTopicPerm: "READ": want one of`}},
		{"bad default group perm", acct("accessKey: abcdefg", "secretKey: "+secret, "defaultGroupPerm: pub"), []string{`defaultGroupPerm: "pub"`}},
		{"bad perm word", acct("accessKey: abcdefg", "secretKey: "+secret, "topicPerms: [topicA=PUBSUB]"), []string{`topicPerms[0]: permission "PUBSUB"`}},
		{"no equals", acct("accessKey: abcdefg", "secretKey: "+secret, "groupPerms: [groupA]"), []string{`groupPerms[0]: "groupA" is not name=PERM`}},
		{"two equals", acct("accessKey: abcdefg", "secretKey: "+secret, "groupPerms: [groupA==SUB]"), []string{`is not name=PERM`}},
		{"empty name", acct("accessKey: abcdefg", "secretKey: "+secret, "topicPerms: ['=SUB']"), []string{`topicPerms[0]: protocol: invalid name`}},
		{"bad topic name", acct("accessKey: abcdefg", "secretKey: "+secret, "topicPerms: ['topic A=SUB']"), []string{`topicPerms[0]`, "invalid name"}},
		{"retry topic in topicPerms", acct("accessKey: abcdefg", "secretKey: "+secret, "topicPerms: ['%RETRY%g=SUB']"), []string{`governed by its group`}},
		{"retry name in groupPerms", acct("accessKey: abcdefg", "secretKey: "+secret, "groupPerms: ['%RETRY%g=SUB']"), []string{`cannot start with %RETRY%`}},
		{"duplicate topic", acct("accessKey: abcdefg", "secretKey: "+secret, "topicPerms: [t=SUB, t=PUB]"), []string{`topicPerms[1]: "t" is listed twice`}},
		{"bad account address", acct("accessKey: abcdefg", "secretKey: "+secret, "whiteRemoteAddress: 192.168.*.1"), []string{`whiteRemoteAddress: address pattern "192.168.*.1"`}},
		{"bad global address", "globalWhiteRemoteAddresses: ['10.0.0.1', 'nope']\naccounts: []\n", []string{`globalWhiteRemoteAddresses[1]: address pattern "nope"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			require.Error(t, err)
			require.ErrorIs(t, err, ErrInvalidConfig)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			for _, w := range c.want {
				require.Contains(t, err.Error(), w)
			}
			require.NotContains(t, err.Error(), secret)
		})
	}
}

func TestLoadCollectsEveryProblem(t *testing.T) {
	_, err := Parse([]byte(`
globalWhiteRemoteAddresses: [bad]
accounts:
  - {accessKey: short, secretKey: tiny}
  - {accessKey: goodkey1, secretKey: goodsecret, defaultTopicPerm: X, topicPerms: [a=Y]}
`))
	require.ErrorIs(t, err, ErrInvalidConfig)
	var joined interface{ Unwrap() []error }
	require.ErrorAs(t, err, &joined)
	require.Len(t, joined.Unwrap(), 5)
	for _, e := range joined.Unwrap() {
		require.ErrorIs(t, e, ErrInvalidConfig)
	}
}

func TestConfigValidateAndRoundTrip(t *testing.T) {
	c, err := DecodeConfig([]byte(testFile))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	out, err := yaml.Marshal(c)
	require.NoError(t, err)
	c2, err := DecodeConfig(out)
	require.NoError(t, err)
	require.Equal(t, c, c2)

	c.Accounts[0].SecretKey = ""
	require.ErrorIs(t, c.Validate(), ErrInvalidConfig)
	_, err = New(c)
	require.ErrorIs(t, err, ErrInvalidConfig)

	// An empty account list is valid: every request outside the white list is refused.
	a, err := Parse([]byte("accounts: []\n"))
	require.NoError(t, err)
	require.ErrorIs(t, a.Check(Request{Addr: peer}), ErrAddressNotAllowed)
}

func TestConfigErrorUnwrap(t *testing.T) {
	inner := errors.New("inner")
	e := &ConfigError{Path: "p", Problem: "x", Err: inner}
	require.ErrorIs(t, e, ErrInvalidConfig)
	require.ErrorIs(t, e, inner)
	require.Equal(t, "acl: invalid config: p: x: inner", e.Error())
	require.Equal(t, "acl: invalid config: whole", (&ConfigError{Problem: "whole"}).Error())
}

package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"
)

// The client-side known vectors and the comparison with the official Go client are in
// package acl (sign_test.go), next to the checks that accept what it sends.

func TestSignKnownVector(t *testing.T) {
	// rocketmq-client-go internal/remote/interceptor_test.go: calculateSignature.
	require.Equal(t, "tAb/54Rwwcq+pbH8Loi7FWX4QSQ=",
		Sign("adiaushdiaushd", nil, []byte("Hello RocketMQ Client ACL Feature")))
	require.Len(t, Sign("k", nil, nil), SignatureLen)
}

func TestVerifierMatches(t *testing.T) {
	v := NewVerifier([]byte("adiaushdiaushd"))
	content, body := []byte("Hello RocketMQ Client "), []byte("ACL Feature")
	require.True(t, v.Matches(content, body, "tAb/54Rwwcq+pbH8Loi7FWX4QSQ="))
	require.True(t, v.Matches(nil, []byte("Hello RocketMQ Client ACL Feature"), "tAb/54Rwwcq+pbH8Loi7FWX4QSQ="),
		"content and body are hashed as one stream")
	require.False(t, v.Matches(content, body, "tAb/54Rwwcq+pbH8Loi7FWX4QSR="), "one character off")
	require.False(t, v.Matches(content, body, "tAb/54Rwwcq+pbH8Loi7FWX4QSQ"), "short")
	require.False(t, v.Matches(content, body, ""), "empty")
	require.False(t, NewVerifier([]byte("another-secret")).Matches(content, body, "tAb/54Rwwcq+pbH8Loi7FWX4QSQ="))

	// A verifier keeps its own copy of the secret.
	secret := []byte("adiaushdiaushd")
	v = NewVerifier(secret)
	secret[0] = 'x'
	require.True(t, v.Matches(content, body, "tAb/54Rwwcq+pbH8Loi7FWX4QSQ="))

	sig := Credentials{AccessKey: "ak-123456", SecretKey: "sk-123456"}.SignFields(
		[]Field{{Key: "topic", Value: "T"}}, []byte("b"))
	require.Equal(t, FieldSignature, sig[len(sig)-1].Key)
	// AccessKey ("ak-123456") sorts before topic ("T"): uppercase first.
	require.True(t, NewVerifier([]byte("sk-123456")).Matches([]byte("ak-123456T"), []byte("b"), sig[len(sig)-1].Value))
}

func TestReplicationMAC(t *testing.T) {
	msg := []byte("hello from a slave")
	m := hmac.New(sha256.New, []byte("admin-secret"))
	m.Write(msg)
	require.Equal(t, m.Sum(nil), ReplicationMAC("admin-secret", msg))
	require.Len(t, ReplicationMAC("admin-secret", msg), ReplicationMACSize)
	require.True(t, ReplicationMACMatches("admin-secret", msg, ReplicationMAC("admin-secret", msg)))
	require.False(t, ReplicationMACMatches("wrong-secret", msg, ReplicationMAC("admin-secret", msg)))
	require.False(t, ReplicationMACMatches("admin-secret", []byte("another message"), ReplicationMAC("admin-secret", msg)))
	require.False(t, ReplicationMACMatches("admin-secret", msg, nil))
}

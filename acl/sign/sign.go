package sign

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // HMAC-SHA1 is RocketMQ's ACL 1.0 signature; HMAC does not rely on SHA-1's collision resistance
	"encoding/base64"
	"hash"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/ferrymq/ferry/remoting"
)

// Field is one ext field of a request. It is remoting.ExtField, so a remoting.Ext can be
// passed as a []Field without copying.
type Field = remoting.ExtField

// The ext fields of RocketMQ's ACL 1.0 (acl/common/SessionCredentials.java).
const (
	// FieldAccessKey carries the account's access key. It is signed.
	FieldAccessKey = "AccessKey"
	// FieldSignature carries the signature. It is the one field not signed.
	FieldSignature = "Signature"
	// FieldSecurityToken carries an optional session token (unused by ACL 1.0 decisions).
	// Java clients sign it; the official Go client sends it unsigned (see Sign).
	FieldSecurityToken = "SecurityToken"
)

// SignatureLen is the length of a signature: a base64-encoded HMAC-SHA1 (20 bytes → 28
// characters).
const SignatureLen = 28

// Sign returns the signature RocketMQ clients put in the Signature ext field:
//
//	base64.StdEncoding( HMAC-SHA1( key = UTF-8 bytes of secretKey,
//	                               data = v1 ‖ v2 ‖ … ‖ vn ‖ body ) )
//
// where v1…vn are the values of fields, Signature excluded, ordered by key (byte-wise,
// strings.Compare; for ASCII keys the same as Java's TreeMap), concatenated with no
// separator, and body is appended as is (nothing when empty). Keys themselves are not
// signed. Fields should have unique keys; a repeated key would be signed twice (and
// acl.ACL.Check refuses such a request).
//
// The official Go client (rocketmq-client-go internal/remote ACLInterceptor) signs the
// request's header fields plus AccessKey, then adds AccessKey, Signature and, when set,
// SecurityToken to the ext fields — so its signature does not cover SecurityToken. Java's
// AclClientRPCHook adds AccessKey and SecurityToken first and signs both. Sign signs
// exactly the fields it is given: pass the header fields and AccessKey (and
// SecurityToken for Java's form). [Credentials.SignFields] does this.
func Sign(secretKey string, fields []Field, body []byte) string {
	idx := make([]int32, 0, len(fields))
	for i := range fields {
		if fields[i].Key != FieldSignature {
			idx = append(idx, int32(i))
		}
	}
	SortIndex(fields, idx)
	mac := hmac.New(sha1.New, []byte(secretKey))
	for _, i := range idx {
		_, _ = io.WriteString(mac, fields[i].Value)
	}
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Credentials are an account's keys as a client holds them.
type Credentials struct {
	AccessKey     string
	SecretKey     string
	SecurityToken string
}

// SignFields returns a copy of fields with AccessKey, SecurityToken (when set) and Signature
// set, replacing any fields of those keys, the signature covering the other fields,
// AccessKey, SecurityToken and body — Java's AclClientRPCHook form, which Java brokers
// and acl.ACL.Check accept. Without a SecurityToken it is byte for byte what the official
// Go client sends. fields is not modified.
func (c Credentials) SignFields(fields []Field, body []byte) []Field {
	out := make([]Field, 0, len(fields)+3)
	for _, f := range fields {
		switch f.Key {
		case FieldAccessKey, FieldSignature, FieldSecurityToken:
		default:
			out = append(out, f)
		}
	}
	out = append(out, Field{Key: FieldAccessKey, Value: c.AccessKey})
	if c.SecurityToken != "" {
		out = append(out, Field{Key: FieldSecurityToken, Value: c.SecurityToken})
	}
	return append(out, Field{Key: FieldSignature, Value: Sign(c.SecretKey, out, body)})
}

// SortIndex sorts idx (indexes into fields) by field key, the order in which [Sign]
// concatenates values: insertion sort for the usual handful of fields, slices.SortFunc
// beyond. It does not allocate.
func SortIndex(fields []Field, idx []int32) {
	if len(idx) > 24 {
		slices.SortFunc(idx, func(a, b int32) int { return strings.Compare(fields[a].Key, fields[b].Key) })
		return
	}
	for i := 1; i < len(idx); i++ {
		x := idx[i]
		k := fields[x].Key
		j := i
		for j > 0 && fields[idx[j-1]].Key > k {
			idx[j] = idx[j-1]
			j--
		}
		idx[j] = x
	}
}

// Verifier checks signatures made with one secret key. It keeps a pool of keyed
// HMAC-SHA1 states, so Matches does not allocate; it is safe for concurrent use.
type Verifier struct {
	macs sync.Pool // *macState keyed with the secret
}

// macState is a pooled HMAC of one secret with its output buffers.
type macState struct {
	h   hash.Hash
	sum [sha1.Size]byte
	enc [SignatureLen]byte
}

// NewVerifier returns a Verifier of signatures made with secretKey (its UTF-8 bytes).
func NewVerifier(secretKey []byte) *Verifier {
	secret := slices.Clone(secretKey)
	v := &Verifier{}
	v.macs.New = func() any { return &macState{h: hmac.New(sha1.New, secret)} }
	return v
}

// Matches reports, in time independent of where the signatures differ, whether sig is
// the signature of content ‖ body, where content is the signed field values already
// concatenated in key order (what [Sign] hashes before the body).
func (v *Verifier) Matches(content, body []byte, sig string) bool {
	if len(sig) != SignatureLen {
		return false
	}
	ms := v.macs.Get().(*macState)
	ms.h.Reset()
	ms.h.Write(content)
	ms.h.Write(body)
	base64.StdEncoding.Encode(ms.enc[:], ms.h.Sum(ms.sum[:0]))
	ok := hmac.Equal(ms.enc[:], []byte(sig))
	v.macs.Put(ms)
	return ok
}

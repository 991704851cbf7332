package acl

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/protocol"
)

// ACL is a compiled, immutable rule set: the global white list, the accounts and the
// request-code table. Build it with [New], [Parse] or [LoadFile]; swap whole ACLs to
// change rules ([Watcher] does). Check is safe for concurrent use.
type ACL struct {
	global   []AddressPattern
	accounts map[string]*account
	rules    map[int16]*Rule
	scratch  sync.Pool // *scratch
}

// account is one compiled account.
type account struct {
	accessKey string
	secret    []byte
	white     AddressPattern
	admin     bool
	defTopic  Perm
	defGroup  Perm
	topics    map[string]Perm // explicit topicPerms
	groups    map[string]Perm // explicit groupPerms, by group name (not %RETRY% topic)
	verifier  *sign.Verifier  // of signatures made with secret
}

// maxPooledContent: scratch buffers grown beyond this by a huge header are dropped
// rather than kept in the pool.
const maxPooledContent = 64 << 10

// New validates c and builds its ACL. The error joins every problem found, each a
// [*ConfigError] wrapping [ErrInvalidConfig].
func New(c Config) (*ACL, error) {
	comp, err := compile(&c)
	if err != nil {
		return nil, err
	}
	a := &ACL{global: comp.global, accounts: comp.accounts, rules: make(map[int16]*Rule)}
	for _, r := range Rules() {
		a.rules[r.Code] = &r
	}
	a.scratch.New = func() any { return &scratch{idx: make([]int32, 0, 32), buf: make([]byte, 0, 512)} }
	for _, acct := range a.accounts {
		acct.verifier = sign.NewVerifier(acct.secret)
	}
	return a, nil
}

// NumAccounts is the number of accounts.
func (a *ACL) NumAccounts() int { return len(a.accounts) }

// Request is what [ACL.Check] decides on: one remoting request as the server received
// it.
type Request struct {
	// Addr is the peer's IP address (no port). IPv4-mapped IPv6 is matched as IPv4.
	Addr netip.Addr
	// Code is the request code.
	Code int16
	// Version is the request's version field. Like RocketMQ, a request of version <= 399
	// (clients up to 4.9.3) has its _UNIQUE_KEY_QUERY field left out of the signed
	// content, because those clients added it after signing.
	Version int16
	// Fields are the request's ext fields as received, including AccessKey, Signature
	// and SecurityToken. The access key and signature are read from here, so they are
	// always the ones the signature covers. Keys must be unique (else
	// ErrDuplicateField). A remoting.Ext can be passed as is.
	Fields []Field
	// Body is the request body; it is signed after the fields.
	Body []byte
	// Topics and Groups are resources the request touches that its header does not
	// name: HEART_BEAT's subscription topics and consumer groups, LOCK_BATCH_MQ's and
	// UNLOCK_BATCH_MQ's queues and group, the topic of VIEW_MESSAGE_BY_ID or
	// END_TRANSACTION if known. The header's own topic and group (the Rule's
	// TopicField and GroupField) are read from Fields by Check; passing them here as
	// well is harmless. They are checked only for codes whose Rule has a TopicPerm or
	// GroupPerm; empty names are skipped.
	Topics []string
	Groups []string
}

// Check decides whether req may proceed: nil, or an error wrapping [ErrNoPermission]
// and one of its refinements (see the package doc for the order of the rules). It does
// not allocate on the allowed paths.
func (a *ACL) Check(req Request) error {
	_, err := a.Authorize(req)
	return err
}

// Authorize is [ACL.Check] that also returns the caller the request was allowed as, for
// the checks a handler makes on resources it learns only by reading what the request
// refers to (see [Caller]). On a refusal the Caller is the zero value, which permits
// nothing. It does not allocate on the allowed paths.
func (a *ACL) Authorize(req Request) (Caller, error) {
	sc := a.scratch.Get().(*scratch)
	acct, err := a.check(&req, sc)
	if cap(sc.buf) <= maxPooledContent && cap(sc.idx) <= maxPooledContent {
		a.scratch.Put(sc)
	}
	if err != nil {
		return Caller{}, err
	}
	return Caller{acct: acct, code: req.Code, ok: true}, nil
}

// check returns the account whose permissions bind the request, nil when none do (a
// white-listed address or an admin account), or the refusal.
func (a *ACL) check(req *Request, sc *scratch) (*account, error) {
	if dup, ok := sc.sortFields(req.Fields); !ok {
		return nil, fmt.Errorf("%w %s", ErrDuplicateField, quote(dup))
	}
	addr := req.Addr.WithZone("").Unmap()
	for i := range a.global {
		if a.global[i].Match(addr) {
			return nil, nil
		}
	}
	ak, _ := fieldValue(req.Fields, sign.FieldAccessKey)
	if ak == "" {
		return nil, fmt.Errorf("%w: %s is not in the global white list and the request has no AccessKey",
			ErrAddressNotAllowed, addrText(addr))
	}
	acct := a.accounts[ak]
	if acct == nil {
		return nil, fmt.Errorf("%w %s", ErrUnknownAccessKey, quote(ak))
	}
	if acct.white.Match(addr) {
		return nil, nil
	}
	sig, _ := fieldValue(req.Fields, sign.FieldSignature)
	if sig == "" {
		return nil, fmt.Errorf("%w: the request of access key %s is not signed", ErrBadSignature, quote(ak))
	}
	skipUnique := req.Version <= lastVersionSkippingUniqueKeyQuery
	if !acct.verifier.Matches(sc.content(req.Fields, skipUnique, false), req.Body, sig) {
		// The official Go client does not sign SecurityToken (see sign.Sign).
		_, token := fieldValue(req.Fields, sign.FieldSecurityToken)
		if !token || !acct.verifier.Matches(sc.content(req.Fields, skipUnique, true), req.Body, sig) {
			return nil, fmt.Errorf("%w: signature mismatch for access key %s", ErrBadSignature, quote(ak))
		}
	}
	if acct.admin {
		return nil, nil
	}
	rule := a.rules[req.Code]
	if rule == nil {
		return acct, nil
	}
	if rule.Admin {
		return nil, fmt.Errorf("%w: %s needs an admin account, access key %s is not one",
			ErrAdminOnly, codeName(req.Code), quote(ak))
	}
	if err := acct.checkResources(rule, req); err != nil {
		return nil, err
	}
	return acct, nil
}

// checkResources checks the request's topics and groups against rule.
func (a *account) checkResources(rule *Rule, req *Request) error {
	if rule.TopicPerm != 0 {
		if rule.TopicField != "" {
			if t, ok := fieldValue(req.Fields, rule.TopicField); ok {
				if err := a.checkTopic(req.Code, t, rule.TopicPerm); err != nil {
					return err
				}
			}
		}
		for _, t := range req.Topics {
			if err := a.checkTopic(req.Code, t, rule.TopicPerm); err != nil {
				return err
			}
		}
	}
	if rule.GroupPerm != 0 {
		if rule.GroupField != "" {
			if g, ok := fieldValue(req.Fields, rule.GroupField); ok && g != "" {
				if err := a.checkGroup(req.Code, g, rule.GroupPerm); err != nil {
					return err
				}
			}
		}
		for _, g := range req.Groups {
			if g == "" {
				continue
			}
			if err := a.checkGroup(req.Code, g, rule.GroupPerm); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkTopic checks one topic of the request against need. A %RETRY% topic is checked
// as its group with SUB, as RocketMQ does.
func (a *account) checkTopic(code int16, topic string, need Perm) error {
	if topic == "" {
		return nil
	}
	if g, ok := protocol.RetryGroup(topic); ok {
		return a.checkGroup(code, g, PermSub)
	}
	return a.checkTopicPerm(code, topic, need)
}

// checkTopicPerm checks one topic against need. Sending to (or looking up the route of)
// the trace topic is always allowed, and so is the route of the auto-create template
// topic. The default permission never covers a system topic (protocol.IsSystemTopic:
// the schedule, timer and transaction topics hold other topics' records, the trace
// topic describes them) nor a %DLQ% topic (dead letters of any topic the group
// consumed): only an explicit entry grants one.
func (a *account) checkTopicPerm(code int16, topic string, need Perm) error {
	if (need == PermPub || need == PermAny) && topic == protocol.TraceTopic {
		return nil
	}
	if need == PermAny && topic == protocol.AutoCreateTopicKey {
		return nil
	}
	owned, explicit := a.topics[topic]
	if !explicit {
		owned = a.defTopic
		if protocol.IsSystemTopic(topic) || protocol.IsDLQTopic(topic) {
			owned = PermDeny
		}
	}
	if owned.Permits(need) {
		return nil
	}
	return &DeniedError{AccessKey: a.accessKey, Code: code, Kind: "topic", Name: topic,
		Need: need, Owned: owned, Default: !explicit}
}

// checkGroup checks one consumer group against need.
func (a *account) checkGroup(code int16, group string, need Perm) error {
	owned, explicit := a.groups[group]
	if !explicit {
		owned = a.defGroup
	}
	if owned.Permits(need) {
		return nil
	}
	return &DeniedError{AccessKey: a.accessKey, Code: code, Kind: "group", Name: group,
		Need: need, Owned: owned, Default: !explicit}
}

// fieldValue returns the value of key in fields (keys are unique by then).
func fieldValue(fields []Field, key string) (string, bool) {
	for i := range fields {
		if len(fields[i].Key) == len(key) && fields[i].Key == key {
			return fields[i].Value, true
		}
	}
	return "", false
}

func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return "an unknown address"
	}
	return a.String()
}

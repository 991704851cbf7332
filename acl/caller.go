package acl

import (
	"context"
	"fmt"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Caller is who an allowed request was authenticated as, for the permission checks a
// handler makes after reading what the request refers to: the record at an offset, a
// half message's real topic, the rows of a listing. It is returned by
// [ACL.Authorize]. A white-listed address or an admin account is unrestricted; any
// other account is held to its topicPerms and groupPerms. The zero Caller permits
// nothing.
type Caller struct {
	acct *account // nil: unrestricted (when ok)
	code int16
	ok   bool
}

// Unrestricted reports whether the caller may access every topic and group (an admin
// account or a white-listed address).
func (c Caller) Unrestricted() bool { return c.ok && c.acct == nil }

// CheckTopic returns nil when the caller owns need on topic, else a [*DeniedError] (a
// %RETRY% topic is checked as its group with SUB; the default permission never covers
// a system topic, see the package doc).
func (c Caller) CheckTopic(topic string, need Perm) error {
	switch {
	case !c.ok:
		return &DeniedError{Code: c.code, Kind: "topic", Name: topic, Need: need}
	case c.acct == nil:
		return nil
	}
	if g, ok := protocol.RetryGroup(topic); ok {
		return c.acct.checkGroup(c.code, g, PermSub)
	}
	return c.acct.checkTopicPerm(c.code, topic, need)
}

// CheckGroup returns nil when the caller owns need on the consumer group, else a
// [*DeniedError].
func (c Caller) CheckGroup(group string, need Perm) error {
	switch {
	case !c.ok:
		return &DeniedError{Code: c.code, Kind: "group", Name: group, Need: need}
	case c.acct == nil:
		return nil
	}
	return c.acct.checkGroup(c.code, group, need)
}

// grantKey is the context key of a *Grant.
type grantKey struct{}

// Grant is what the [Gate] hands the handler of a code whose [Rule] is Referenced or
// Filtered, through the request's context: the [Caller] and where a refusal is logged.
// A nil *Grant (the gate did not run: ACL off) permits everything, so a handler calls
// GrantFrom(ctx).CheckTopic(...) without testing whether ACL is on.
type Grant struct {
	caller Caller
	gate   *Gate
	ch     remoting.Channel
	code   protocol.RequestCode
}

// GrantFrom returns the grant the gate put in ctx, or nil.
func GrantFrom(ctx context.Context) *Grant {
	g, _ := ctx.Value(grantKey{}).(*Grant)
	return g
}

// Caller returns the caller of the request; the zero Caller for a nil grant.
func (g *Grant) Caller() Caller {
	if g == nil {
		return Caller{}
	}
	return g.caller
}

// Unrestricted reports whether every topic and group may be answered: ACL off (nil
// grant), an admin account or a white-listed address.
func (g *Grant) Unrestricted() bool { return g == nil || g.caller.Unrestricted() }

// CheckTopic returns nil when the caller owns need on topic (always for a nil grant);
// else it logs the refusal as the gate does and returns the error to answer with:
// NO_PERMISSION (a *remoting.CodeError) with the [*DeniedError]'s text as remark.
func (g *Grant) CheckTopic(topic string, need Perm) error {
	if g == nil {
		return nil
	}
	return g.refusal(g.caller.CheckTopic(topic, need))
}

// CheckRecordTopic is CheckTopic for a topic the handler read from a stored record the
// caller named by offset or id: the log line names the topic, the answer's remark does
// not (the caller did not know it, and must not learn it from a refusal).
func (g *Grant) CheckRecordTopic(topic string, need Perm) error {
	if g == nil {
		return nil
	}
	err := g.caller.CheckTopic(topic, need)
	if err == nil {
		return nil
	}
	g.gate.logRefusal(g.ch, g.code, err)
	remark := fmt.Sprintf("%v: the record asked for is in a topic the account may not %v", ErrDenied, need)
	if g.caller.acct != nil {
		remark = fmt.Sprintf("%v: access key %s may not %v the topic of the record asked for (%s)",
			ErrDenied, quote(g.caller.acct.accessKey), need, codeName(g.caller.code))
	}
	return &remoting.CodeError{Code: int16(protocol.NoPermission), Remark: remark}
}

// CheckGroup is CheckTopic for a consumer group.
func (g *Grant) CheckGroup(group string, need Perm) error {
	if g == nil {
		return nil
	}
	return g.refusal(g.caller.CheckGroup(group, need))
}

// MayTopic reports whether a listing may show topic to the caller (need owned). It
// logs nothing: leaving a row out is not a refusal.
func (g *Grant) MayTopic(topic string, need Perm) bool {
	return g == nil || g.caller.CheckTopic(topic, need) == nil
}

// MayGroup is MayTopic for a consumer group.
func (g *Grant) MayGroup(group string, need Perm) bool {
	return g == nil || g.caller.CheckGroup(group, need) == nil
}

// refusal logs err (if any) and turns it into the NO_PERMISSION answer.
func (g *Grant) refusal(err error) error {
	if err == nil {
		return nil
	}
	g.gate.logRefusal(g.ch, g.code, err)
	return &remoting.CodeError{Code: int16(protocol.NoPermission), Remark: err.Error()}
}

package broker

// Permission checks that depend on what a request refers to (ACL on): the gate
// (acl.Gate) has authenticated the caller and checked the header's resources; for the
// codes whose topic is that of a stored record, or whose answer is a listing, the
// handler checks here with the acl.Grant the gate put in its context. With ACL off the
// grant is nil and every check is a nil test.

import (
	"context"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// checkRecordTopics checks need on the topics a stored record belongs to: its own
// topic, or for a record parked in a system topic (a delayed or half message) its
// REAL_TOPIC, and for a retry or dead-letter copy also its original topic
// (RETRY_TOPIC). A refusal is NO_PERMISSION, logged by the grant.
func checkRecordTopics(g *acl.Grant, rec *message.Record, need acl.Perm) error {
	if g.Unrestricted() {
		return nil
	}
	topic := rec.Topic
	if protocol.IsSystemTopic(string(rec.Topic)) {
		if rt, ok := rec.Property(message.PropertyRealTopic); ok && len(rt) > 0 {
			topic = rt
		}
	}
	if err := g.CheckRecordTopic(string(topic), need); err != nil {
		return err
	}
	if orig, ok := rec.Property(message.PropertyRetryTopic); ok && len(orig) > 0 {
		return g.CheckRecordTopic(string(orig), need)
	}
	return nil
}

// retryCopiesFiltered wraps a pull or key-query handler (ACL on): when the gate handed
// it a grant (a %RETRY% or %DLQ% topic read by a caller held to its permissions), the
// answer, given now or after a long poll, leaves out the copies whose original topic
// (RETRY_TOPIC) the caller may not SUB. A group's retry topic holds copies of every
// topic its members consumed, and any account with SUB on the group may read it.
// Leaving records out of a pull is what a tag filter does too: the offsets in the
// answer still move past them; a query left with nothing answers QUERY_NOT_FOUND. Other
// requests pass straight through.
func retryCopiesFiltered(h remoting.HandlerFunc) remoting.HandlerFunc {
	return func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		g := acl.GrantFrom(ctx)
		if g == nil {
			return h(ctx, ch, req)
		}
		resp, err := h(ctx, &retryFilterChannel{Channel: ch, g: g}, req)
		if resp != nil && dropDeniedCopies(g, resp) && len(resp.BodyVec) == 0 &&
			req.Code == int16(protocol.QueryMessage) && resp.Code == int16(protocol.Success) {
			// OnWritten stays: it releases the records read.
			resp.Code, resp.Remark = int16(protocol.QueryNotFound), "can not find message, maybe time range not correct"
		}
		return resp, err
	}
}

// retryFilterChannel filters a held pull's later answer.
type retryFilterChannel struct {
	remoting.Channel
	g *acl.Grant
}

// Reply implements remoting.Channel.
func (c *retryFilterChannel) Reply(req, resp *remoting.Command) error {
	_ = dropDeniedCopies(c.g, resp)
	return c.Channel.Reply(req, resp)
}

// dropDeniedCopies removes from a pull or query answer's records the copies of a topic
// the caller may not SUB (the refusal is logged by the grant), and reports whether it
// removed any.
func dropDeniedCopies(g *acl.Grant, resp *remoting.Command) bool {
	if len(resp.BodyVec) == 0 {
		return false
	}
	kept := resp.BodyVec[:0:0]
	for _, raw := range resp.BodyVec {
		rec, _, err := message.DecodeRecord(raw)
		if err == nil {
			if orig, ok := rec.Property(message.PropertyRetryTopic); ok && len(orig) > 0 &&
				g.CheckRecordTopic(string(orig), acl.PermSub) != nil {
				continue
			}
		}
		kept = append(kept, raw)
	}
	dropped := len(kept) < len(resp.BodyVec)
	resp.BodyVec = kept
	return dropped
}

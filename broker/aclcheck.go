package broker

// Permission checks that depend on what a request refers to (ACL on): the gate
// (acl.Gate) has authenticated the caller and checked the header's resources; for the
// codes whose topic is that of a stored record, or whose answer is a listing, the
// handler checks here with the acl.Grant the gate put in its context. With ACL off the
// grant is nil and every check is a nil test.

import (
	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
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
		if real, ok := rec.Property(message.PropertyRealTopic); ok && len(real) > 0 {
			topic = real
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

package client

import (
	"fmt"
	"strings"

	"github.com/ferrymq/ferry/protocol"
)

// Namespaces (Options.Namespace), as the official clients implement them, so namespaced
// Ferry and official clients share topics and groups:
//
//   - a topic or group name n becomes "<ns>%n" on the wire; a retry or dead-letter topic
//     "%RETRY%n" / "%DLQ%n" becomes "%RETRY%<ns>%n" / "%DLQ%<ns>%n", so a namespaced
//     group's retry topic is "%RETRY%<ns>%<group>";
//   - a name already in the namespace, and system topics and groups (TBW102, rmq_sys_…,
//     the reply topics), stay as they are, so wrapping twice changes nothing;
//   - messages handed to the application (consumed, pulled, polled) get their Topic
//     back without the namespace.
//
// What is wrapped: producer, transaction producer and consumer groups, the topics of
// sent messages, subscribed and fetched topics, and the Topic of every MessageQueue given
// to a consumer. Queues, SendResults, Request replies and the messages a
// TransactionChecker is asked about carry the topic as the brokers know it, with the
// namespace (pass queues back as they are). The Admin API is not namespaced: it names
// topics and groups as stored.

// namespaceSeparator joins a namespace and a name.
const namespaceSeparator = "%"

// validateNamespace checks a namespace: characters of [a-zA-Z0-9_-] (no '%' or '|'),
// and short enough to leave room for names.
func validateNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if len(ns) > 64 {
		return fmt.Errorf("%w: namespace %q is longer than 64 characters", ErrInvalidOptions, ns)
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; !nsChar(c) {
			return fmt.Errorf("%w: namespace %q: character %q at %d (allowed: a-z A-Z 0-9 _ -)", ErrInvalidOptions, ns, c, i)
		}
	}
	return nil
}

// nsChar reports whether c may appear in a namespace.
func nsChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// systemResource reports whether name is a system topic or group, which no namespace
// applies to.
func systemResource(name string) bool {
	return protocol.IsSystemTopic(name) || strings.HasSuffix(name, protocol.ReplyTopicSuffix) ||
		strings.HasPrefix(name, "CID_RMQ_SYS_")
}

// cutRetryDLQ splits a retry or DLQ prefix off name.
func cutRetryDLQ(name string) (prefix, rest string) {
	for _, p := range []string{protocol.RetryTopicPrefix, protocol.DLQTopicPrefix} {
		if r, ok := strings.CutPrefix(name, p); ok {
			return p, r
		}
	}
	return "", name
}

// nsWrap returns name (a topic or group) in the client's namespace.
func (c *Client) nsWrap(name string) string {
	ns := c.opts.Namespace
	if ns == "" || name == "" || systemResource(name) {
		return name
	}
	prefix, rest := cutRetryDLQ(name)
	if strings.HasPrefix(rest, ns+namespaceSeparator) {
		return name
	}
	return prefix + ns + namespaceSeparator + rest
}

// nsStrip returns name without the client's namespace (name when it is not in it).
func (c *Client) nsStrip(name string) string {
	ns := c.opts.Namespace
	if ns == "" {
		return name
	}
	prefix, rest := cutRetryDLQ(name)
	if r, ok := strings.CutPrefix(rest, ns+namespaceSeparator); ok {
		return prefix + r
	}
	return name
}

// nsQueue returns mq with its topic in the client's namespace.
func (c *Client) nsQueue(mq MessageQueue) MessageQueue {
	mq.Topic = c.nsWrap(mq.Topic)
	return mq
}

// nsStripMessages gives msgs their topics without the client's namespace.
func (c *Client) nsStripMessages(msgs []*MessageExt) {
	if c.opts.Namespace == "" {
		return
	}
	for _, m := range msgs {
		m.Topic = c.nsStrip(m.Topic)
	}
}
